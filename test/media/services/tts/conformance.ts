// The behaviours every streaming TTS adapter must show against its vendor's local fake, as one set of ava tests per
// adapter: a reply's chunks stream as 24 kHz audio on one connection, barge-in leaves nothing stale, a wrong key is
// a fatal error naming the vendor (never the key), a dropped connection reopens without ending the call, usage is
// priced per character, keepalives flow while idle, and (vendors with word timings) an interrupted reply is cut at
// the last word heard.
import test from 'ava';
import type { TtsService } from '../../../../media/services/types.ts';
import { computeCost, PRICES } from '../../../../core/pricing.ts';
import { cutWords } from '../../../../media/session/speech.ts';
import type { FakeServer } from '../../../fakes/tts/common.ts';
import { maxAbs, stageWithPacer, synth } from './helpers.ts';
import { until } from '../../../helpers/wait.ts';

export interface ConformanceSetup {
  tts: TtsService;
  server: FakeServer;
  close(): Promise<void>;
}

export interface Conformance {
  name: string;
  vendor: string;
  /** a fake + adapter; `key` overrides the adapter's key, `keepaliveMs` its keepalive period */
  setup(o: { key?: string; keepaliveMs?: number; gapMs?: number }): Promise<ConformanceSetup>;
  /** the audio the fake produces for a chunk as this adapter sends it */
  audioFor(text: string): Int16Array;
  /** the fake has seen a keepalive on an idle connection */
  keepaliveSeen(server: FakeServer): boolean;
  /** the vendor reports word timings */
  wordTimings: boolean;
}

/** How a test asks for a fake + adapter: `key` overrides the adapter's key, `keepaliveMs` its keepalive period,
 * `gapMs` the fake's pause between audio pieces, `base` rewrites the fake's base URL (override prefixes). */
export interface AdapterOnFakeOptions {
  key?: string;
  keepaliveMs?: number;
  gapMs?: number;
  base?: (baseUrl: string) => string;
}

/** Start a vendor fake that expects `apiKey`, then build the adapter against it with the options every adapter
 * shares (base URL, key, keepalive); `build` adds the vendor's own (model, voice, languages, tuning…). */
export async function adapterOnFake<F extends { server: FakeServer; close(): Promise<void> }, T extends TtsService & { close(): Promise<void> }>(
  apiKey: string,
  o: AdapterOnFakeOptions,
  listen: (fake: { apiKey: string; gapMs?: number }) => Promise<F>,
  build: (common: { baseUrl: string; apiKey: string; keepaliveMs?: number }) => T,
) {
  const fake = await listen({ apiKey, ...(o.gapMs ? { gapMs: o.gapMs } : {}) });
  const tts = build({
    baseUrl: o.base ? o.base(fake.server.baseUrl) : fake.server.baseUrl,
    apiKey: o.key ?? apiKey,
    ...(o.keepaliveMs ? { keepaliveMs: o.keepaliveMs } : {}),
  });
  return {
    fake,
    tts,
    server: fake.server,
    close: async () => {
      await tts.close();
      await fake.close();
    },
  };
}

export function conformance(c: Conformance): void {
  const run = async (t: { teardown(fn: () => unknown): void }, o: Parameters<Conformance['setup']>[0] = {}) => {
    const s = await c.setup(o);
    t.teardown(() => s.close());
    return s;
  };

  test(`${c.name}: a reply's chunks stream as 24 kHz audio in pieces over one connection`, async (t) => {
    const { tts, server } = await run(t);
    await tts.connect?.();
    const reply = {};
    const a = await synth(tts, 'First sentence here.', { utterance: reply });
    const b = await synth(tts, 'And a second one.', { utterance: reply });
    tts.endUtterance?.(reply);
    t.true(a.pieces > 1 && b.pieces > 1, 'streamed in pieces');
    t.is(a.pcm.length, c.audioFor('First sentence here.').length);
    t.is(b.pcm.length, c.audioFor('And a second one.').length);
    t.is(maxAbs(a.pcm), maxAbs(c.audioFor('First sentence here.')));
    const next = {};
    const n = await synth(tts, 'Next reply.', { utterance: next });
    tts.endUtterance?.(next);
    t.is(n.pcm.length, c.audioFor('Next reply.').length);
    // a chunk of its own (a sound word prepared at call start) gets all its audio too
    const solo = await synth(tts, 'Okay.');
    t.is(solo.pcm.length, c.audioFor('Okay.').length);
    t.is(server.connections, 1, 'one connection for the whole call');
  });

  test(`${c.name}: barge-in cancels the reply and nothing stale plays after it`, async (t) => {
    const { tts } = await run(t, { gapMs: 5 });
    const ac = new AbortController();
    const long = 'This is a long answer that the caller is going to interrupt right away.';
    const first = await synth(tts, long, { utterance: {}, signal: ac.signal, onPiece: (_p, i) => i === 1 && ac.abort() });
    t.is(first.pieces, 1);
    const next = await synth(tts, 'Sure, go ahead.', { utterance: {} });
    t.is(next.pcm.length, c.audioFor('Sure, go ahead.').length, 'the next reply gets exactly its own audio');
    t.is(maxAbs(next.pcm), maxAbs(c.audioFor('Sure, go ahead.')), 'no audio of the interrupted reply');
  });

  test(`${c.name}: a wrong key is a fatal engine error naming the vendor, never the key`, async (t) => {
    const { tts } = await run(t, { key: 'sk-wrong-secret-123' });
    const err = await t.throwsAsync((async () => {
      await tts.connect?.();
      await synth(tts, 'Hello.');
    })());
    const e = (err as unknown as { engineError?: { fatal: boolean; message: string } }).engineError;
    t.truthy(e);
    t.true(e!.fatal);
    t.true(e!.message.includes(c.vendor), e!.message);
    t.false(e!.message.includes('sk-wrong-secret-123'));
  });

  test(`${c.name}: a dropped connection reopens by itself and the call goes on`, async (t) => {
    const { tts, server } = await run(t);
    await synth(tts, 'Before.', { utterance: {} });
    const before = server.connections;
    server.dropAll();
    await until(() => server.connections === before + 1 && server.open.size === 1, { what: 'the adapter reconnected', timeoutMs: 5000, everyMs: 5 });
    const after = await synth(tts, 'After the drop.', { utterance: {} });
    t.is(after.pcm.length, c.audioFor('After the drop.').length);
  });

  test(`${c.name}: a drop in the middle of a chunk keeps what was heard and the next chunk plays on a new connection`, async (t) => {
    const { tts, server } = await run(t, { gapMs: 5 });
    const long = 'This sentence is cut off by a network failure while its audio is streaming.';
    const cut = await synth(tts, long, { utterance: {}, onPiece: (_p, i) => i === 1 && server.dropAll() });
    t.true(cut.pcm.length > 0 && cut.pcm.length < c.audioFor(long).length, 'the chunk ended where the connection broke');
    const next = await synth(tts, 'Still here.', { utterance: {} });
    t.is(next.pcm.length, c.audioFor('Still here.').length);
    t.is(maxAbs(next.pcm), maxAbs(c.audioFor('Still here.')));
    t.true(server.connections >= 2);
  });

  test(`${c.name}: keepalive on an idle connection`, async (t) => {
    const { tts, server } = await run(t, { keepaliveMs: 20 });
    await tts.connect?.();
    await until(() => c.keepaliveSeen(server), { what: 'a keepalive', timeoutMs: 5000, everyMs: 5 });
    t.is(server.connections, 1);
  });

  test(`${c.name}: usage — characters with provider and model, priced from the table`, async (t) => {
    const { tts } = await run(t);
    const st = stageWithPacer(tts);
    const s = st.speak(['Hello there.', 'How are you?']);
    await until(() => s.textComplete && s.chunks.length === 2 && s.chunks.every((ch) => ch.samples > 0), { what: 'synthesis', timeoutMs: 5000, everyMs: 5 });
    t.is(st.characters, 'Hello there.'.length + 'How are you?'.length);
    const usage = { tts: { provider: tts.provider, model: tts.model, characters: st.characters } };
    const price = PRICES.tts[tts.provider]?.[tts.model];
    t.truthy(price, `${tts.provider}/${tts.model} has its own price`);
    t.is(computeCost(usage).tts, Math.round(st.characters * price!.perCharacter * 1e6) / 1e6);
  });

  if (c.wordTimings) {
    test(`${c.name}: an interrupted reply is cut at the last word actually played (word timings), not by share of audio`, async (t) => {
      const { tts } = await run(t);
      const st = stageWithPacer(tts);
      const text = 'Supercalifragilisticexpialidocious is a long word to say';
      const s = st.speak([text]);
      await until(() => s.chunks[0]?.samples === c.audioFor(text).length, { what: 'the whole chunk synthesized', timeoutMs: 5000, everyMs: 5 });
      // 20 ms per character: "is" ends at 740 ms, "a" at 780 ms; 760 ms have started playing
      st.advance(740);
      st.interrupt(s);
      t.is(s.chunks[0]!.played, 38 * 480);
      t.is(s.playedText(), 'Supercalifragilisticexpialidocious is');
      t.not(cutWords(text, s.chunks[0]!.played / s.chunks[0]!.samples), s.playedText());
    });
  }
}
