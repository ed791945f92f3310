// The call runner: runs one claimed-or-pending call row on any LiveTransport (the WebSocket, WebRTC and carrier
// streams).
// It claims the row (pending → active), builds the session (engines, tools, noise gate), starts the pipeline,
// sends call.started, and on the end writes the row, stores the recording, closes the transport, sends
// call.ended and hands off to the post-call workflow. Transports only convert audio and events; everything a
// call does with the database and webhooks happens here, once for every transport.
import { callWeight } from '../admission.ts';
import { contextValues, liveCallBuiltins, substitute } from '../../core/agent-config/snapshot.ts';
import type { Logger } from '../../core/logger.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { embeddingConfigFrom, searchKnowledge } from '../../core/retrieval.ts';
import type { EngineFactory, MediaDeps } from '../deps.ts';
import { createThreadedNoiseGate } from '../noise/threaded.ts';
import { sharedClock } from '../pipeline/clock.ts';
import { activeCallsGauge } from '../pipeline/metrics.ts';
import { createEngines } from '../services/index.ts';
import type { Engines } from '../services/types.ts';
import { buildToolSet, type ToolRunContext } from '../tools/runtime.ts';
import { storedCredentialAuth } from '../tools/http-auth.ts';
import { RecordingLibrary } from '../tools/recordings.ts';
import type { LiveTransport, TransportEvent } from '../transports/types.ts';
import { timed } from '../stage-cpu.ts';
import { createVad } from '../vad/index.ts';
import { withSpan } from '../../core/tracing.ts';
import { endSessionSpan, startSessionSpan } from './call-trace.ts';
import { CallSession, type EndedReason, type SessionOptions, type SessionResult } from './call-session.ts';
import { answerSupervisorFor } from './answer-supervisor.ts';
import { DEFAULT_IDLE_MESSAGE, parseCallConfig, type CallConfig } from './config.ts';
import { cachedTts, RenderedAudioCache } from './greeting-cache.ts';
import {
  cancelCallRow,
  claimCall,
  endedPayload,
  finishCallRow,
  handOffPostCall,
  retrying,
  writeCallLogs,
  sendLifecycleWebhook,
  startedPayload,
  type CallRow,
} from './lifecycle.ts';
import { FileSink } from './spool.ts';
import { textModeEngines } from './text-mode.ts';

/** Per-call extras a transport family contributes (telephony: transfer hooks, voicemail detection, …). */
export interface RunOptions {
  /** Row already claimed (status active) by the caller; the runner then skips its own claim. */
  claimed?: boolean;
  /** Extra session options (e.g. hooks a carrier needs); merged over the runner's. */
  session?: Partial<Pick<SessionOptions, 'holdMusicMs' | 'observers'>> & Record<string, unknown>;
  /** Extra tool capabilities of this transport (carrier transfer). */
  tools?: Pick<ToolRunContext, 'transfer' | 'transferSupport'>;
  /** The carrier's DTMF API (sendDtmf keys through the carrier, not as tones); absent: in-band tones. */
  carrierDtmf?(digits: string): Promise<void>;
  /** Why the call ended when the far end goes away (default user_hangup; a carrier stream stops after a transfer). */
  hangupReason?(): EndedReason;
  /** Called after the row is finished and before call.ended is sent (carrier hang-up, …). */
  onFinished?(row: CallRow, result: SessionResult): Promise<void>;
}

export interface CallRunner {
  /** Run the call to its end. Resolves once the pipeline started (or the call could not start). */
  run(transport: LiveTransport, pending: CallRow, opts?: RunOptions): Promise<CallSession | null>;
  readonly live: ReadonlySet<CallSession>;
  /** Call ids this process still answers for: from run() until the row's end is written (the reconcile skips them). */
  readonly owned: ReadonlySet<string>;
  /** Ends whose database writes failed past their retries: run them again (the node's reconcile calls this). */
  retryUnfinished(): Promise<void>;
  /** Weighted load of the live calls (media/admission.ts CALL_WEIGHTS: transport × engines). */
  liveWeight(): number;
}

export interface RunnerOptions {
  /** the weight of a local-engine call's engines, in capacity units (media/admission.ts callWeight) */
  localUnit?: number;
}

export function createCallRunner(deps: MediaDeps, runnerOpts: RunnerOptions = {}): CallRunner {
  const { logger } = deps;
  const live = new Set<CallSession>();
  const weights = new Map<CallSession, number>();
  const goLive = (s: CallSession, w: number) => {
    live.add(s);
    weights.set(s, w);
  };
  const engineFactory: EngineFactory = deps.engines ?? defaultEngines;
  // rendered greetings / idle prompts (off by default under NODE_ENV=test: tests count what their fake engines hear)
  const cacheMb = deps.config.MEDIA_TTS_CACHE_MB ?? (deps.config.NODE_ENV === 'test' ? 0 : 64);
  const audioCache = cacheMb > 0 ? new RenderedAudioCache(cacheMb * 1024 * 1024) : null;
  // uploaded audio recordings the calls' tools play (loaded as each call starts, shared by the calls of this process)
  const recordings = new RecordingLibrary(deps.db, deps.storage, logger);

  /**
   * The frame clock every live call's audio is paced on. Setting up and ending a call are chains of awaits whose
   * steps run back to back with other calls' steps in one event-loop turn; when many calls start or end together
   * (a burst of joins, a campaign wave, a mass hang-up) that turn grows long and every other call's next audio
   * frame waits for it. So each step polls the clock first: a tick that is due runs there (clock.ts).
   */
  const clock = deps.clock ?? sharedClock;
  const owned = new Set<string>();
  /** call id → the rest of its end, to run again once the database answers */
  const unfinished = new Map<string, () => Promise<void>>();

  async function run(transport: LiveTransport, pending: CallRow, opts: RunOptions = {}): Promise<CallSession | null> {
    owned.add(pending.id);
    try {
      const session = await runOwned(transport, pending, opts);
      if (!session && !unfinished.has(pending.id)) owned.delete(pending.id);
      return session;
    } catch (err) {
      owned.delete(pending.id);
      throw err;
    }
  }

  async function runOwned(transport: LiveTransport, pending: CallRow, opts: RunOptions): Promise<CallSession | null> {
    const early: Int16Array[] = [];
    let session: CallSession | null = null;
    let clientGone = false;
    const inStage = `pipeline: caller audio in (${transport.kind})`;
    const pushAudio = (pcm: Int16Array) => session!.pushAudio(pcm);
    transport.onAudio((pcm) => {
      if (session) timed(inStage, pushAudio, pcm);
      else if (early.length < 500) early.push(pcm);
    });
    transport.onClose(() => {
      clientGone = true;
      if (session) void session.end(opts.hangupReason?.() ?? 'user_hangup');
    });
    const earlyEvents: TransportEvent[] = [];
    transport.onEvent?.((ev) => {
      if (session) session.noteEvent(ev);
      else if (earlyEvents.length < 100) earlyEvents.push(ev);
    });

    const row = opts.claimed ? pending : await claimCall(deps.db, pending.id, pending.organization_id);
    clock.poll();
    if (!row) {
      transport.close('refused', 'Call not available');
      return null;
    }
    const log = logger.child({ callId: row.id, transport: transport.kind });
    const span = startSessionSpan(row, transport.kind);
    let startedHook: Promise<void> = Promise.resolve();
    let built: CallSession | null = null;
    const sink = FileSink.forCall(deps.config, row.id);
    try {
      const config = parseCallConfig(row.config_snapshot);
      const weight = callWeight(transport.kind, [config.stt.provider, config.tts.provider, config.llm.provider], runnerOpts.localUnit);
      built = await buildSession(row, config, transport, log, { ...opts, session: { ...opts.session, recordingSink: sink } }, async (result) => {
        if (built) {
          live.delete(built);
          weights.delete(built);
        }
        activeCallsGauge.set(live.size);
        // the post-call hand-off inside runs under the session span: the workflow continues the trace
        await (span ? withSpan(span, () => finishLive(row, result, sink, transport, startedHook, opts)) : finishLive(row, result, sink, transport, startedHook, opts))
          .finally(() => endSessionSpan(span, result));
      });
      clock.poll();
      if (clientGone) throw new Error('client disconnected before the pipeline started');
      await built.start();
      clock.poll();
      if (clientGone) {
        // the caller hung up while the engines were opening: the pipeline did start, it ends as a hang-up
        goLive(built, weight);
        session = built;
        await built.end(opts.hangupReason?.() ?? 'user_hangup');
        return built;
      }
      session = built;
      goLive(built, weight);
      activeCallsGauge.set(live.size);
      startedHook = sendLifecycleWebhook(deps, row, startedPayload(row, row.started_at ?? new Date().toISOString()));
      for (const pcm of early.splice(0)) built.pushAudio(pcm);
      for (const ev of earlyEvents.splice(0)) built.noteEvent(ev);
      return built;
    } catch (err) {
      if (session) return session; // started; the session's own end handling runs
      endSessionSpan(span, { error: `call could not start: ${(err as Error).message ?? String(err)}` });
      await built?.abandon();
      await sink.discard();
      log.warn({ err }, 'call could not start: cancelled');
      const why = (err as Error).message ?? String(err);
      transport.sendEvent({ type: 'error', message: `Call could not start: ${why}` });
      transport.close('refused', 'Call could not start');
      // never connected: call.ended, then call.completed through post-call (the rule of core/calls/unconnected.ts)
      const cancel = async (attempt: () => Promise<Awaited<ReturnType<typeof cancelCallRow>>>) => {
        const f = await attempt();
        unfinished.delete(row.id);
        if (f) void sendLifecycleWebhook(deps, row, endedPayload(row, null, 'cancelled', f)).then(() => handOffPostCall(deps, row));
      };
      await cancel(() => retrying(log, { callId: row.id, step: 'call row cancel' }, () => cancelCallRow(deps.db, row.id, why))).catch((e: unknown) => {
        log.error({ err: e }, 'could not cancel the call row: the node reconcile tries again');
        unfinished.set(row.id, () => cancel(() => cancelCallRow(deps.db, row.id, why)).then(() => void owned.delete(row.id)));
      });
      return null;
    }
  }

  async function buildSession(
    row: CallRow,
    config: CallConfig,
    transport: LiveTransport,
    log: Logger,
    opts: RunOptions,
    onEnd: (r: SessionResult) => Promise<void>,
  ): Promise<CallSession> {
    const callVars = (row.context_variables && typeof row.context_variables === 'object' ? row.context_variables : {}) as Record<string, string>;
    // The same variables and built-in rule as the snapshot POST /call froze (core/agent-config/snapshot.ts).
    const vars = contextValues(config, {
      callVariables: callVars,
      builtins: liveCallBuiltins({ customerNumber: row.customer_number, platformNumber: row.platform_number }),
    }).all;
    const systemPrompt = substitute(config.systemPrompt, vars);
    let made: CallSession | null = null;
    const [{ engines, vad }, tools] = await Promise.all([
      // the greeting's audio starts rendering (or comes from the cache) while the rest is set up; a text-mode call
      // keeps the agent's LLM and exchanges text instead of speech (text-mode.ts)
      engineFactory({ callId: row.id, config, appConfig: deps.config }).then((built) => {
        if (transport.textMode) {
          const text = textModeEngines(built.engines, (ev) => transport.sendEvent(ev));
          transport.onText?.((t) => text.input.deliver(t));
          return { ...built, engines: text.engines };
        }
        return audioCache ? { ...built, engines: withFixedTextCache(built.engines, config, audioCache) } : built;
      }),
      buildToolSet(
        {
          db: deps.db,
          orgId: row.organization_id,
          callId: row.id,
          transport: row.transport,
          contextVariables: vars,
          policy: policyFromConfig(deps.config),
          logger: log,
          searchKnowledge: (db, q) => searchKnowledge(db, { ...q, embedding: embeddingConfigFrom(deps.config) }),
          auth: storedCredentialAuth(deps.db, deps.config, row.organization_id),
          recordings: recordings.forOrg(row.organization_id),
          // the session exists by the time the LLM can call a tool
          sendDtmf: async (digits) => {
            if (!made) throw new Error('the call is not running');
            return { via: await made.pressKeys(digits, opts.carrierDtmf ? (d) => opts.carrierDtmf!(d) : null) };
          },
          ...(opts.tools ?? {}),
        },
        config.tools,
      ),
    ]);
    clock.poll();
    // the caller's noise gate runs on the process's gate thread (created last: nothing to release if setup failed)
    const denoiser = config.noiseGate.enabled ? createThreadedNoiseGate({ model: config.noiseGate.model, enhancementLevel: config.noiseGate.enhancementLevel }) : null;
    // web calls have no carrier to supervise the answer: agents that leave messages or press keys get it here
    const web = transport.kind === 'websocket' || transport.kind === 'webrtc'
      ? answerSupervisorFor({
          snapshot: row.config_snapshot, web: true, amd: null, logger: log,
          writeLogs: (entry, tag) => writeCallLogs(deps.db, row.id, entry, tag).catch((err: unknown) => log.warn({ err }, 'could not write call logs')),
        })
      : null;
    made = new CallSession({
      callId: row.id,
      config,
      systemPrompt,
      contextVariables: vars,
      engines,
      vad,
      denoiser,
      tools,
      transport,
      logger,
      ...(deps.clock ? { clock: deps.clock } : {}),
      ...(deps.holdMusicMs ? { holdMusicMs: deps.holdMusicMs } : {}),
      ...(opts.session ?? {}),
      ...(web ? { observers: [...(opts.session?.observers ?? []), web] } : {}),
      onEnd,
    });
    return made;
  }

  /**
   * The end of a live call: the recording's last blocks go to its spool file and it is uploaded, while the row is
   * written (retried with backoff; a database still down after the retries leaves the rest of the end to the node's
   * reconcile, retryUnfinished). Once the row is final: transport closed, finish hook, call.ended, post-call.
   */
  async function finishLive(row: CallRow, result: SessionResult, sink: FileSink, transport: LiveTransport, startedHook: Promise<void>, opts: RunOptions): Promise<void> {
    clock.poll();
    const log = logger.child({ callId: row.id });
    const recording = result.recording.finish().then((r) => (r ? sink.upload(deps, row.id) : (log.error({ err: result.recording.error }, 'recording spool failed: no recording'), false)));
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      transport.close(result.reason === 'pipeline_error' ? 'error' : 'normal', result.reason === 'pipeline_error' ? 'Internal error' : undefined);
    };
    const rest = async (f: Awaited<ReturnType<typeof finishCallRow>>) => {
      await recording;
      clock.poll();
      close();
      // the transport's own clean-up (carrier hang-up, signaling state) runs either way
      if (opts.onFinished) await opts.onFinished(row, result).catch((err: unknown) => log.warn({ err }, 'call finish hook failed'));
      if (!f) {
        log.warn('the call row had already been ended by a reconcile: its call.ended went from there');
        return;
      }
      await startedHook;
      await sendLifecycleWebhook(deps, row, endedPayload(row, result.reason, 'completed', f));
      await handOffPostCall(deps, row);
    };
    const write = () => finishCallRow(deps.db, row, result);
    let f: Awaited<ReturnType<typeof finishCallRow>>;
    try {
      f = await write().catch((err: unknown) => {
        log.warn({ err }, 'could not write the ended call: retrying');
        close(); // the caller is not kept on the line while the database is retried
        return retrying(log, { callId: row.id, step: 'call row finish' }, write);
      });
    } catch (err) {
      log.error({ err }, 'could not write the ended call: the node reconcile tries again');
      close();
      unfinished.set(row.id, async () => {
        const done = await write();
        unfinished.delete(row.id);
        try {
          await rest(done);
        } finally {
          owned.delete(row.id);
        }
      });
      return;
    }
    try {
      await rest(f);
    } finally {
      owned.delete(row.id);
    }
  }

  async function retryUnfinished(): Promise<void> {
    for (const [callId, again] of [...unfinished]) {
      await again().catch((err: unknown) => logger.warn({ err, callId }, 'ending the call failed again: next reconcile retries'));
    }
  }

  return {
    run,
    live,
    owned,
    retryUnfinished,
    liveWeight() {
      let w = 0;
      for (const x of weights.values()) w += x;
      return w;
    },
  };
}

/** The call's TTS with its greetings and idle prompts served from the process-wide rendered-audio cache. */
function withFixedTextCache(engines: Engines, config: CallConfig, cache: RenderedAudioCache): Engines {
  const greetings = config.greeting.firstMessages.filter((m) => m.trim());
  const idle = [...config.userIdleMessages, DEFAULT_IDLE_MESSAGE].filter((m) => m.trim());
  const { provider: _p, model: _m, voice: _v, ...tuning } = config.tts;
  const tts = cachedTts(engines.tts, [...greetings, ...idle], JSON.stringify(tuning), cache);
  if (config.greeting.speakFirst === 'agent') tts.prefetch(greetings.slice(0, 8));
  return { ...engines, tts };
}

// ── default engines: media/services (one adapter per vendor, `local` engines) + the Silero VAD ───────────
const defaultEngines: EngineFactory = async ({ config, appConfig }) => {
  const engines = createEngines(appConfig, config);
  const vad = await createVad();
  return { engines, vad };
};
