// A child process holding WebRtcCaller peers (peer.ts) for a test process that must not load node-datachannel itself:
// with the WebRTC media-plane thread on (WEBRTC_MEDIA_THREAD), the server's plane thread is the process's one user of
// the addon (a second thread loading it aborts the process). remote-caller.ts drives it over IPC: create a caller,
// call one of its methods, read its state.
import { WebRtcCaller } from './peer.ts';

export type CallerRequest =
  | { id: number; op: 'create'; name: string }
  | { id: number; op: 'call'; caller: number; method: 'offer' | 'reoffer' | 'accept' | 'gathered' | 'send' | 'hangup' | 'close'; args: unknown[] }
  | { id: number; op: 'state'; caller: number };
export interface CallerState {
  state: string;
  events: WebRtcCaller['events'];
  localCandidates: WebRtcCaller['localCandidates'];
  audioSeconds: number;
  rms: number;
  lastPacketAt: number;
  payloadTypes: number[];
  dcClosed: boolean;
}
export type CallerReply = { id: number; ok: true; value?: unknown } | { id: number; ok: false; message: string };

const callers = new Map<number, WebRtcCaller>();
let next = 1;

process.on('message', (m: CallerRequest) => {
  void (async (): Promise<unknown> => {
    if (m.op === 'create') {
      callers.set(next, new WebRtcCaller(m.name));
      return next++;
    }
    const c = callers.get(m.caller);
    if (!c) throw new Error(`no caller ${m.caller}`);
    if (m.op === 'state') {
      return {
        state: c.state, events: c.events, localCandidates: c.localCandidates, audioSeconds: c.audioSeconds, rms: c.rms,
        lastPacketAt: c.lastPacketAt, payloadTypes: [...c.payloadTypes], dcClosed: c.dcClosed,
      } satisfies CallerState;
    }
    return (c[m.method] as (...a: unknown[]) => unknown)(...m.args);
  })().then(
    (value) => process.send!({ id: m.id, ok: true, value } satisfies CallerReply),
    (err: unknown) => process.send!({ id: m.id, ok: false, message: (err as Error).message } satisfies CallerReply),
  );
});

process.on('disconnect', () => {
  for (const c of callers.values()) c.close();
  setTimeout(() => process.exit(0), 200);
});
