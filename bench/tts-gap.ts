// bench/tts-gap: the gap between the sentences of one reply, with the real TTS vendor adapters against their local
// fakes (test/fakes/tts) given a vendor-like time to first byte (FIRST_BYTE_MS after a text arrives, default 150)
// and streaming faster than real time (PIECE_MS between 100 ms audio pieces, default 50 = 2× real time).
// Each reply is three sentences handed to the TTS stage at once (as the chunker releases an LLM answer). Figures per
// sentence boundary (sentence 1→2 and 2→3):
//  - arrival gap: last audio of sentence n → first audio of sentence n+1 at the stage's output;
//  - audible gap: silence a player that starts at the reply's first byte and plays every sample as soon as it can
//    would insert at that boundary (0 when sentence n+1's audio came before sentence n finished playing).
// Baseline in the same run: the same stage and adapter with synthesis ahead switched off (lookahead 0: a chunk's
// text is sent once the previous chunk's audio ended).
//   npm run bench -- tts-gap          REPLIES=10 FIRST_BYTE_MS=150 PIECE_MS=50 node --import tsx bench/tts-gap.ts
import { performance } from 'node:perf_hooks';
import { TtsStage } from '../media/pipeline/tts-stage.ts';
import { Collector, Pipeline } from '../media/pipeline/processor.ts';
import type { Frame } from '../media/pipeline/frames.ts';
import { SpeechHandle } from '../media/session/speech.ts';
import type { TtsService, TtsSynthesizeOptions } from '../media/services/types.ts';
import { ElevenLabsTts } from '../media/services/tts/elevenlabs.ts';
import { CartesiaTts } from '../media/services/tts/cartesia.ts';
import { InworldTts } from '../media/services/tts/inworld.ts';
import { OpenAiTts } from '../media/services/tts/openai.ts';
import { XaiTts } from '../media/services/tts/xai.ts';
import { FakeElevenLabs } from '../test/fakes/tts/elevenlabs.ts';
import { FakeCartesia } from '../test/fakes/tts/cartesia.ts';
import { FakeInworld } from '../test/fakes/tts/inworld.ts';
import { FakeOpenAiSpeech } from '../test/fakes/tts/openai.ts';
import { FakeXai } from '../test/fakes/tts/xai.ts';
import { pct } from './_stats.ts';

const REPLIES = Number(process.env.REPLIES ?? 10);
const FIRST_BYTE_MS = Number(process.env.FIRST_BYTE_MS ?? 150);
const PIECE_MS = Number(process.env.PIECE_MS ?? 50);
const log = (m: string) => process.stdout.write(`${m}\n`);
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

const SENTENCES = [
  'Thanks for calling, I can help you with that booking today.',
  'Could you tell me the date you had in mind?',
  'And how many people will be joining you?',
];

interface Setup {
  tts: TtsService;
  close(): Promise<void>;
}
const fo = { apiKey: 'k', gapMs: PIECE_MS, firstByteMs: FIRST_BYTE_MS };
const vendors: Array<{ name: string; make(): Promise<Setup> }> = [
  {
    name: 'elevenlabs',
    async make() {
      const f = await new FakeElevenLabs(fo).listen();
      const tts = new ElevenLabsTts({ baseUrl: f.server.baseUrl, apiKey: 'k', model: 'eleven_flash_v2_5', voice: 'v', languages: ['en'] });
      return { tts, close: async () => (await tts.close(), await f.close()) };
    },
  },
  {
    name: 'cartesia',
    async make() {
      const f = await new FakeCartesia(fo).listen();
      const tts = new CartesiaTts({ baseUrl: f.server.baseUrl, apiKey: 'k', model: 'sonic-3', voice: 'v', languages: ['en'] });
      return { tts, close: async () => (await tts.close(), await f.close()) };
    },
  },
  {
    name: 'inworld',
    async make() {
      const f = await new FakeInworld(fo).listen();
      const tts = new InworldTts({ baseUrl: f.server.baseUrl, apiKey: 'k', model: 'inworld-tts-1.5-max', voice: 'Ashley', languages: ['en'] });
      return { tts, close: async () => (await tts.close(), await f.close()) };
    },
  },
  {
    name: 'openai',
    async make() {
      const f = await new FakeOpenAiSpeech(fo).listen();
      const tts = new OpenAiTts({ baseUrl: `${f.server.baseUrl}/v1`, apiKey: 'k', model: 'gpt-4o-mini-tts', voice: 'alloy', languages: ['en'] });
      return { tts, close: async () => (await tts.close(), await f.close()) };
    },
  },
  {
    name: 'xai',
    async make() {
      const f = await new FakeXai(fo).listen();
      const tts = new XaiTts({ baseUrl: f.server.baseUrl, apiKey: 'k', voice: 'eve', languages: ['en'] });
      return { tts, close: async () => (await tts.close(), await f.close()) };
    },
  },
];

/** The adapter with synthesis ahead switched off (the stage then sends one chunk at a time). */
function sequential(tts: TtsService): TtsService {
  return {
    provider: tts.provider,
    model: tts.model,
    voice: tts.voice,
    lookahead: 0,
    synthesize: (text: string, signal: AbortSignal, opts?: TtsSynthesizeOptions) => tts.synthesize(text, signal, opts),
    ...(tts.endUtterance ? { endUtterance: (u: object) => tts.endUtterance!(u) } : {}),
    ...(tts.connect ? { connect: () => tts.connect!() } : {}),
  };
}

interface Piece {
  at: number;
  chunk: number;
  samples: number;
}

/** One reply through a TTS stage; the arrival of each audio piece. */
async function reply(pipeline: Pipeline, sink: { on: ((f: Frame) => void) | null }): Promise<Piece[]> {
  const pieces: Piece[] = [];
  const s = new SpeechHandle('reply', true);
  const done = new Promise<void>((resolve) => {
    sink.on = (f) => {
      if (f.type === 'audioOut' && f.speech === s) pieces.push({ at: performance.now(), chunk: f.chunk, samples: f.pcm.length });
      if (f.type === 'flush' && f.speech === s) resolve();
    };
  });
  for (const text of SENTENCES) pipeline.push({ type: 'ttsText', text, speech: s });
  pipeline.push({ type: 'flush', speech: s });
  await done;
  return pieces;
}

/** Per boundary n→n+1: [arrival gap, audible gap] in ms. */
function gaps(pieces: Piece[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let playhead = pieces[0]?.at ?? 0;
  let prev = pieces[0];
  for (const p of pieces) {
    const start = Math.max(playhead, p.at);
    if (prev && p.chunk !== prev.chunk) out.push([p.at - prev.at, start - playhead]);
    playhead = start + (p.samples / 24000) * 1000;
    prev = p;
  }
  return out;
}

async function measure(make: () => Promise<Setup>, ahead: boolean): Promise<{ arrival: number[]; audible: number[]; lookahead: number }> {
  const { tts, close } = await make();
  const sink: { on: ((f: Frame) => void) | null } = { on: null };
  const stage = new TtsStage(ahead ? tts : sequential(tts));
  const pipeline = new Pipeline([stage, new Collector((f) => sink.on?.(f))], (err) => {
    throw err;
  });
  await tts.connect?.();
  const arrival: number[] = [];
  const audible: number[] = [];
  for (let i = 0; i < REPLIES; i++) {
    for (const [a, b] of gaps(await reply(pipeline, sink))) {
      arrival.push(a);
      audible.push(b);
    }
  }
  stage.close();
  await close();
  return { arrival, audible, lookahead: tts.lookahead ?? 0 };
}

log(`TTS adapters against local fakes: time to first byte ${FIRST_BYTE_MS} ms after a text arrives, 100 ms pieces every ${PIECE_MS} ms; ${REPLIES} replies of ${SENTENCES.length} sentences (${REPLIES * (SENTENCES.length - 1)} boundaries)`);
for (const v of vendors) {
  const before = await measure(v.make, false);
  const after = await measure(v.make, true);
  log(`  ${v.name.padEnd(10)} lookahead ${after.lookahead}`);
  log(`    one chunk at a time: arrival gap p50 ${f1(pct(before.arrival, 50))} / p99 ${f1(pct(before.arrival, 99))} ms, audible gap p50 ${f1(pct(before.audible, 50))} / p99 ${f1(pct(before.audible, 99))} ms`);
  log(`    synthesis ahead:     arrival gap p50 ${f1(pct(after.arrival, 50))} / p99 ${f1(pct(after.arrival, 99))} ms, audible gap p50 ${f1(pct(after.audible, 50))} / p99 ${f1(pct(after.audible, 99))} ms`);
}
process.exit(0);
