// Shared set-up for the media end-to-end tests: a test server whose media service builds fake engines from a
// per-call scenario, keyed by the agent name in the call's config snapshot.
import type { EngineFactory } from '../../../media/deps.ts';
import { fakeEngines, type FakeScenario } from '../../fakes/engines.ts';

export class ScenarioBook {
  private readonly scenarios = new Map<string, FakeScenario>();
  readonly made = new Map<string, ReturnType<typeof fakeEngines>>();
  private n = 0;
  /** register a scenario; returns the agent name to put in the config */
  add(s: FakeScenario): string {
    const name = `scenario-${++this.n}`;
    this.scenarios.set(name, s);
    return name;
  }
  engines(name: string): ReturnType<typeof fakeEngines> {
    const e = this.made.get(name);
    if (!e) throw new Error(`no engines built for ${name}`);
    return e;
  }
  readonly factory: EngineFactory = async ({ config }) => {
    const s = this.scenarios.get(config.name);
    if (!s) throw new Error(`no scenario for agent ${config.name}`);
    if ((s as { failBuild?: boolean }).failBuild) throw new Error('engine credentials missing');
    const e = fakeEngines(s);
    this.made.set(config.name, e);
    return e;
  };
}
