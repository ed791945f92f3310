// AssemblyAI Universal streaming v3 (docs/engines.md, STT `assemblyai`): wss://streaming.assemblyai.com/v3/ws with the
// raw key in `Authorization`. Query: sample_rate, encoding=pcm_s16le, speech_model, format_turns=true,
// keyterms_prompt (JSON array), and for the Universal-3 Pro family (u3-rt-pro, universal-3-5-pro) mode and
// voice_focus + voice_focus_threshold. Binary audio must come in 50–1000 ms messages: 20 ms frames are gathered
// into 100 ms messages (and the remainder padded to 50 ms on finalize). `{"type":"Terminate"}` ends the session.
// The turn model is AssemblyAI's: finalize() only flushes our gathered audio (ForceEndpoint would override it).
// Out: `Begin`, `SpeechStarted` → speech_started, `Turn{end_of_turn:false}` → interim, `Turn{end_of_turn:true}`
// → turn_end (with format_turns the formatted copy that follows the unformatted one; if it never comes within
// 800 ms the unformatted text ends the turn), `Termination`. Close codes 1008 (unauthorized) and 4001–4003 are
// refusals (credentials, funds, free tier); 3005 (session expired) and the like reconnect.
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { clamp, jsonFrame, openWithin, refusedStream, SttSocket, termsOf, TurnTracker, vendorWsUrl } from './ws-session.ts';

export interface AssemblyAiBlock {
  mode?: string;
  keyterms?: string;
  voiceFocus?: string;
  voiceFocusThreshold?: number;
}

export interface AssemblyAiOptions {
  apiKey?: string;
  baseUrl: string;
  model: string;
  block?: AssemblyAiBlock;
  /** silence after this long without caller audio (default 250) */
  keepaliveMs?: number;
}

const U3_PRO = new Set(['u3-rt-pro', 'universal-3-5-pro']);
/** audio messages of 100 ms; the vendor refuses messages under 50 ms (a part sent early is padded to it) */
const CHUNK = { ms: 100, minMs: 50 };

/** English-only agents get universal-streaming-english; en/es/fr/de/pt the multilingual model; else Universal-3.5 Pro. */
export function assemblyAiDefaultModel(languages: string[]): string {
  if (languages.every((l) => l === 'en')) return 'universal-streaming-english';
  if (languages.every((l) => ['en', 'es', 'fr', 'de', 'pt'].includes(l))) return 'universal-streaming-multilingual';
  return 'universal-3-5-pro';
}

export function assemblyAiQuery(model: string, block: AssemblyAiBlock, keyterms: string[]): Array<[string, string | number | boolean]> {
  const q: Array<[string, string | number | boolean]> = [
    ['sample_rate', 16000],
    ['encoding', 'pcm_s16le'],
    ['speech_model', model],
    ['format_turns', true],
  ];
  // up to 100 terms of at most 50 characters each
  const terms = termsOf(keyterms).filter((t) => t.length <= 50).slice(0, 100);
  if (terms.length) q.push(['keyterms_prompt', JSON.stringify(terms)]);
  if (U3_PRO.has(model)) {
    const mode = ['balanced', 'min_latency', 'max_accuracy'].includes(block.mode ?? '') ? block.mode! : 'balanced';
    q.push(['mode', mode]);
    const focus = block.voiceFocus ?? 'near-field';
    if (focus === 'near-field' || focus === 'far-field') {
      q.push(['voice_focus', focus]);
      q.push(['voice_focus_threshold', clamp(block.voiceFocusThreshold, 0, 1, 0.9)]);
    }
  }
  return q;
}

export class AssemblyAiStt implements SttService {
  readonly provider = 'assemblyai';
  readonly model: string;
  readonly hasTurnDetection = true;
  constructor(private readonly o: AssemblyAiOptions) {
    this.model = o.model;
  }

  async open(opts: SttOptions): Promise<SttStream> {
    const emit = (ev: SttEvent) => opts.onEvent(ev);
    if (!this.o.apiKey) return refusedStream(emit, 'assemblyai', 'ASSEMBLYAI_API_KEY is not set');
    const turn = new TurnTracker(emit);
    let endedOrder = -1;
    let pendingEnd: { order: number; text: string; timer: NodeJS.Timeout } | null = null;
    const endTurn = (order: number, text: string) => {
      if (pendingEnd) clearTimeout(pendingEnd.timer);
      pendingEnd = null;
      endedOrder = order;
      turn.end(text);
    };
    const sock: SttSocket = new SttSocket({
      vendor: 'assemblyai',
      url: vendorWsUrl(this.o.baseUrl, '/v3/ws', assemblyAiQuery(this.model, this.o.block ?? {}, opts.keyterms)),
      headers: { Authorization: this.o.apiKey },
      emit,
      onOpen: (_s, reconnect) => {
        if (!reconnect) return;
        if (pendingEnd) endTurn(pendingEnd.order, pendingEnd.text);
        endedOrder = -1;
        turn.reset();
      },
      chunk: CHUNK,
      // the gathered tail of the caller's audio goes first (padded), then silence
      keepalive: { idleMs: this.o.keepaliveMs ?? 250, send: (s) => s.sendSilence(Math.max(CHUNK.minMs, this.o.keepaliveMs ?? 250)) },
      closeMessage: () => JSON.stringify({ type: 'Terminate' }),
      isFatalClose: (code) => code === 1008 || code === 4001 || code === 4002 || code === 4003 || code === 3006,
      onMessage: (data, isBinary) => {
        const msg = jsonFrame<{ type?: string; transcript?: string; end_of_turn?: boolean; turn_is_formatted?: boolean; turn_order?: number; error?: string }>(data, isBinary);
        if (!msg) return;
        if (msg.error) {
          if (/auth|credit|fund|quota|insufficient|forbidden|model|invalid/i.test(msg.error)) sock.refuse(msg.error);
          return;
        }
        if (msg.type === 'SpeechStarted') {
          if (!turn.inTurn) turn.start();
          return;
        }
        if (msg.type !== 'Turn') return;
        const order = msg.turn_order ?? 0;
        if (order <= endedOrder) return; // the formatted copy of a turn already ended
        const text = (msg.transcript ?? '').trim();
        if (!msg.end_of_turn) {
          if (pendingEnd && pendingEnd.order !== order) endTurn(pendingEnd.order, pendingEnd.text);
          turn.update(text);
          return;
        }
        if (msg.turn_is_formatted) return endTurn(order, text);
        // unformatted end of turn: the formatted copy follows
        if (pendingEnd) clearTimeout(pendingEnd.timer);
        const timer = setTimeout(() => {
          if (pendingEnd?.order === order) endTurn(order, pendingEnd.text);
        }, 800);
        timer.unref?.();
        pendingEnd = { order, text, timer };
      },
    });
    await openWithin(sock);
    return {
      write: (pcm) => sock.sendAudio(pcm),
      finalize: () => sock.flushAudio(),
      close: async () => {
        if (pendingEnd) clearTimeout(pendingEnd.timer);
        await sock.close();
      },
    };
  }
}
