// The WebRTC media-plane thread (media/webrtc/plane.ts has the why and the protocol): every peer connection of the
// process, with its Opus codec, jitter buffer, RTP/SRTP and data channel, runs here as the ordinary WebRtcTransport;
// the main thread keeps the pipeline and talks to the peers through one message per event-loop turn each way.
import { parentPort, workerData } from 'node:worker_threads';
import type { WebRtcTransport as WebRtcTransportType } from './transport.ts';
import { createLogger } from '../../core/logger.ts';
import { stallWatch, threadStageCpu } from '../stage-cpu.ts';
import { shareWebRtcCounts } from './metrics.ts';
import { TurnBatch, unpackAudio, type FromPlane, type PlaneInit, type PlaneReply, type ToPlane, type UpOp } from './plane.ts';

const init = workerData as PlaneInit;
// Opus: the WASM build here, as on every thread but the main one (core/audio/opus.ts). Not the native one although
// no other thread of the process codes Opus then: @evan/opus's native addon crashes the process (SIGSEGV) when a
// worker thread that loaded it ends, at the latest at process exit; a worker on the WASM build ends cleanly.
shareWebRtcCounts(init.counts);
const { WebRtcTransport, OfferError } = await import('./transport.ts');
const nodeDataChannel = (await import('node-datachannel')).default;
const logger = createLogger({ level: init.logLevel });
const port = parentPort!;

const peers = new Map<number, WebRtcTransportType>();
/** the thread is ending (stop()): messages are ignored */
let stopping = false;
/** the thread's event-loop stall watch, started by the first 'stalls' request (bench/webrtc) */
let watch: ReturnType<typeof stallWatch> | null = null;

// caller audio and peer events of this turn, posted together once the turn's callbacks have run
const upBatch = new TurnBatch<UpOp>((ops, audio, transfer) => port.postMessage({ t: 'up', ops, ...(audio ? { audio } : {}) } satisfies FromPlane, transfer));
const up = (op: UpOp): void => upBatch.op(op);

function reply(req: number, value: PlaneReply): void {
  port.postMessage({ t: 'res', req, ok: true, ...value } satisfies FromPlane);
}

function fail(req: number, err: unknown): void {
  port.postMessage({ t: 'res', req, ok: false, offer: err instanceof OfferError, message: (err as Error).message } satisfies FromPlane);
}

async function answer(m: Extract<ToPlane, { t: 'answer' }>): Promise<void> {
  try {
    const { transport, sdp } = await WebRtcTransport.answer(m.sdp, { ...m.options, logger, codecThreads: 0 });
    peers.set(m.id, transport);
    transport.onConnected(() => up(['connected', m.id]));
    transport.onFailed((why) => up(['failed', m.id, why]));
    // gone, or failed on our side (its call ends as a pipeline error)
    transport.onClose(() => up(transport.lostWith ? ['lost', m.id, transport.lostWith] : ['gone', m.id]));
    transport.onAudio((pcm) => upBatch.audio(m.id, pcm));
    reply(m.req, { sdp, pcId: transport.pcId });
  } catch (err) {
    fail(m.req, err);
  }
}

port.on('message', (m: ToPlane) => {
  if (stopping) return;
  if (m.t === 'down') {
    // agent audio first (it was produced before any close that follows it in the same turn), then the rest in order
    if (m.audio) unpackAudio(m.audio, (id, pcm) => peers.get(id)?.sendAudio(pcm));
    for (const op of m.ops) {
      const p = peers.get(op[1]);
      if (!p) continue;
      if (op[0] === 'event') p.sendEventText(op[2]);
      else if (op[0] === 'close') {
        peers.delete(op[1]);
        p.close(op[2], op[3]);
      } else {
        peers.delete(op[1]);
        p.destroy();
      }
    }
  } else if (m.t === 'answer') void answer(m);
  else if (m.t === 'renegotiate') {
    const p = peers.get(m.id);
    if (!p) fail(m.req, new OfferError('The peer connection is closed'));
    else p.renegotiate(m.sdp).then((sdp) => reply(m.req, { sdp }), (err: unknown) => fail(m.req, err));
  } else if (m.t === 'candidate') {
    try {
      peers.get(m.id)?.addRemoteCandidate(m.candidate, m.mid);
      reply(m.req, {});
    } catch (err) {
      fail(m.req, err);
    }
  } else if (m.t === 'stages') reply(m.req, { stages: threadStageCpu() });
  else if (m.t === 'stalls') reply(m.req, { stalls: (watch ??= stallWatch()).take() });
  else if (m.t === 'stop') stop(300);
  else if (m.t === 'crash') throw new Error('media plane crash requested'); // tests: a thread that fails mid-call
  else if (m.t === 'block') {
    const until = performance.now() + m.ms; // tests: a stall of the thread's loop
    while (performance.now() < until);
  }
});

/**
 * End the thread (process shutdown) the one way that does not abort the process: peers destroyed, node-datachannel's
 * runtime cleaned up, the port closed, so the thread's event loop empties and it exits. A worker terminated while the
 * addon is loaded (by Worker.terminate(), or by an uncaught exception) aborts the whole process ("terminate called
 * after throwing an instance of 'Napi::Error'"), and a second thread loading the addon after the first one ended
 * crashes it ("Check failed: node->IsInUse()" in napi_get_and_clear_last_exception). So the plane thread lives as
 * long as the process.
 */
function stop(afterMs: number): void {
  if (stopping) return;
  stopping = true;
  for (const p of peers.values()) {
    try {
      p.destroy();
    } catch { /* going anyway */ }
  }
  peers.clear();
  // DTLS close notifications leave first
  setTimeout(() => {
    nodeDataChannel.cleanup();
    port.close();
  }, afterMs);
}

// A fault here must neither end the thread (see stop()) nor the media process: every call of the plane ends (its
// peer is destroyed; the main thread ends the call as pipeline_error, as the pipeline failing would) and the thread
// goes on taking new calls. Which call's code threw is not known here, so all of them go.
process.on('uncaughtException', (err) => {
  logger.error({ err, calls: peers.size }, 'webrtc media plane failed: its calls end, the plane takes new calls');
  for (const [id, p] of peers) {
    try {
      p.destroy();
    } catch { /* ended anyway */ }
    up(['lost', id, 'the WebRTC media plane failed']);
  }
  peers.clear();
});
