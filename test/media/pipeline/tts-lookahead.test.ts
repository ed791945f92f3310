// The TTS stage synthesizes ahead against the vendor fakes: with context vendors (ElevenLabs, Cartesia, Inworld)
// and OpenAI, the next chunk's text reaches the vendor while the previous chunk's audio is still arriving; audio
// still comes out strictly in order, chunk by chunk, with per-chunk bookkeeping (speech chunks, word ends relative
// to their own chunk, characters, text-sent and first-byte hooks) intact; a barge-in mid-reply leaves no audio of
// the cut reply, and the next reply plays whole. Vendors without contexts (xAI) still get one chunk at a time.
import test from 'ava';
import { TtsStage } from '../../../media/pipeline/tts-stage.ts';
import { Collector, Pipeline } from '../../../media/pipeline/processor.ts';
import type { Frame } from '../../../media/pipeline/frames.ts';
import { SpeechHandle } from '../../../media/session/speech.ts';
import type { TtsService } from '../../../media/services/types.ts';
import { ElevenLabsTts } from '../../../media/services/tts/elevenlabs.ts';
import { CartesiaTts } from '../../../media/services/tts/cartesia.ts';
import { InworldTts } from '../../../media/services/tts/inworld.ts';
import { OpenAiTts } from '../../../media/services/tts/openai.ts';
import { XaiTts } from '../../../media/services/tts/xai.ts';
import { FakeElevenLabs } from '../../fakes/tts/elevenlabs.ts';
import { FakeCartesia } from '../../fakes/tts/cartesia.ts';
import { FakeInworld } from '../../fakes/tts/inworld.ts';
import { FakeOpenAiSpeech } from '../../fakes/tts/openai.ts';
import { FakeXai } from '../../fakes/tts/xai.ts';
import { amplitudeOf, type FakeServer } from '../../fakes/tts/common.ts';
import { maxAbs } from '../services/tts/helpers.ts';
import { until } from '../../helpers/wait.ts';

interface Vendor {
  name: string;
  timings: boolean;
  make(gapMs: number): Promise<{ tts: TtsService; server: FakeServer; close(): Promise<void> }>;
}

const vendors: Vendor[] = [
  {
    name: 'elevenlabs',
    timings: true,
    async make(gapMs) {
      const fake = await new FakeElevenLabs({ apiKey: 'k', gapMs }).listen();
      const tts = new ElevenLabsTts({ baseUrl: fake.server.baseUrl, apiKey: 'k', model: 'eleven_flash_v2_5', voice: 'v', languages: ['en'] });
      return { tts, server: fake.server, close: async () => (await tts.close(), await fake.close()) };
    },
  },
  {
    name: 'cartesia',
    timings: true,
    async make(gapMs) {
      const fake = await new FakeCartesia({ apiKey: 'k', gapMs }).listen();
      const tts = new CartesiaTts({ baseUrl: fake.server.baseUrl, apiKey: 'k', model: 'sonic-3', voice: 'v', languages: ['en'] });
      return { tts, server: fake.server, close: async () => (await tts.close(), await fake.close()) };
    },
  },
  {
    name: 'inworld',
    timings: true,
    async make(gapMs) {
      const fake = await new FakeInworld({ apiKey: 'k', gapMs }).listen();
      const tts = new InworldTts({ baseUrl: fake.server.baseUrl, apiKey: 'k', model: 'inworld-tts-1.5-max', voice: 'Ashley', languages: ['en'] });
      return { tts, server: fake.server, close: async () => (await tts.close(), await fake.close()) };
    },
  },
  {
    name: 'openai',
    timings: false,
    async make(gapMs) {
      const fake = await new FakeOpenAiSpeech({ apiKey: 'k', gapMs }).listen();
      const tts = new OpenAiTts({ baseUrl: `${fake.server.baseUrl}/v1`, apiKey: 'k', model: 'gpt-4o-mini-tts', voice: 'alloy', languages: ['en'] });
      return { tts, server: fake.server, close: async () => (await tts.close(), await fake.close()) };
    },
  },
];

/** true once the vendor got this text (a WebSocket message or an HTTP request body carrying it) */
function arrived(server: FakeServer, text: string): boolean {
  return server.received.some((r) => JSON.stringify(r.msg).includes(text)) || server.http.some((h) => h.body.includes(text));
}

function stage(tts: TtsService) {
  const hooks = { sent: [] as string[], firstBytes: 0, chars: 0 };
  const frames: Array<{ f: Frame; at: number }> = [];
  let onAudio: (f: Extract<Frame, { type: 'audioOut' }>) => void = () => {};
  const st = new TtsStage(tts, {
    onTextSent: (_s, text) => hooks.sent.push(text),
    onFirstByte: () => hooks.firstBytes++,
    onCharacters: (n) => (hooks.chars += n),
  });
  const errors: unknown[] = [];
  const out = new Collector((f) => {
    frames.push({ f, at: frames.length });
    if (f.type === 'audioOut') onAudio(f);
  });
  const pipeline = new Pipeline([st, out], (err) => errors.push(err));
  return {
    pipeline,
    hooks,
    frames,
    errors,
    onAudio(fn: typeof onAudio) {
      onAudio = fn;
    },
    speak(texts: string[], flush = true): SpeechHandle {
      const s = new SpeechHandle('reply', true);
      for (const text of texts) pipeline.push({ type: 'ttsText', text, speech: s });
      if (flush) pipeline.push({ type: 'flush', speech: s });
      return s;
    },
    flushed: (s: SpeechHandle) => frames.some((x) => x.f.type === 'flush' && x.f.speech === s),
    audio: (s: SpeechHandle) => frames.map((x) => x.f).filter((f): f is Extract<Frame, { type: 'audioOut' }> => f.type === 'audioOut' && f.speech === s),
    close: () => st.close(),
  };
}

const REPLY = ['The first sentence of the reply is here.', 'A second one follows it.', 'And a third closes it.'];

for (const v of vendors) {
  test(`${v.name}: the next chunk's text reaches the vendor while the previous chunk's audio is still arriving; audio in order, bookkeeping per chunk`, async (t) => {
    const { tts, server, close } = await v.make(5);
    t.teardown(close);
    const st = stage(tts);
    // whether chunk 2's text had reached the vendor, seen at each audio frame of chunk 1
    const seenAtChunk0: boolean[] = [];
    st.onAudio((f) => {
      if (f.chunk === 0) seenAtChunk0.push(arrived(server, REPLY[1]!));
    });
    const s = st.speak(REPLY);
    await until(() => st.flushed(s), { what: 'the reply flushed', timeoutMs: 10_000, everyMs: 5 });
    t.deepEqual(st.errors, []);
    t.true(seenAtChunk0.length > 1);
    t.true(seenAtChunk0.at(-1), "chunk 2's text was sent before chunk 1's audio was fully delivered");

    // audio strictly in order: chunk indexes never go back, each chunk's audio is its own text's
    const audio = st.audio(s);
    const order = audio.map((f) => f.chunk);
    t.deepEqual(order, [...order].sort((a, b) => a - b));
    t.deepEqual([...new Set(order)], [0, 1, 2]);
    for (let i = 0; i < REPLY.length; i++) {
      const mine = audio.filter((f) => f.chunk === i);
      t.is(Math.max(...mine.map((f) => maxAbs(f.pcm))), amplitudeOf(REPLY[i]!) , `chunk ${i} carries its own audio`);
      t.is(s.chunks[i]!.samples, mine.reduce((a, f) => a + f.pcm.length, 0));
    }
    // bookkeeping per chunk
    t.deepEqual(s.chunks.map((c) => c.text), REPLY);
    t.deepEqual(st.hooks.sent, REPLY);
    t.is(st.hooks.chars, REPLY.join('').length);
    t.is(st.hooks.firstBytes, 1);
    if (v.timings) {
      for (let i = 0; i < REPLY.length; i++) {
        const c = s.chunks[i]!;
        t.is(c.wordEnds?.length, REPLY[i]!.split(' ').length, `word ends of chunk ${i}`);
        t.true(Math.max(...c.wordEnds!) <= c.samples, `chunk ${i}'s word ends are within its own audio`);
      }
    }
  });

  test(`${v.name}: barge-in mid-reply with chunks synthesized ahead leaves no audio of the cut reply; the next reply plays whole`, async (t) => {
    const { tts, server, close } = await v.make(5);
    t.teardown(close);
    const st = stage(tts);
    let cutAt = -1;
    const a = st.speak(REPLY);
    // cut the reply while its audio streams and its next chunk is already with the vendor
    st.onAudio((f) => {
      if (f.speech === a && cutAt < 0 && arrived(server, REPLY[1]!)) {
        a.interrupt();
        st.pipeline.push({ type: 'interrupt', by: 'user' });
        cutAt = st.frames.length;
      }
    });
    await until(() => cutAt >= 0, { what: 'reply audio after its second chunk was sent', timeoutMs: 10_000, everyMs: 5 });
    const NEXT = ['Okay, stopping there.', 'What would you like instead?'];
    const b = st.speak(NEXT);
    await until(() => st.flushed(b), { what: 'the next reply flushed', timeoutMs: 10_000, everyMs: 5 });
    t.deepEqual(st.errors, []);
    const after = st.frames.slice(cutAt).map((x) => x.f);
    t.false(after.some((f) => f.type === 'audioOut' && f.speech === a), 'no audio of the cut reply after the barge-in');
    t.false(after.some((f) => f.type === 'flush' && f.speech === a));
    const audio = st.audio(b);
    t.deepEqual([...new Set(audio.map((f) => f.chunk))], [0, 1]);
    for (let i = 0; i < NEXT.length; i++) {
      const mine = audio.filter((f) => f.chunk === i);
      t.is(Math.max(...mine.map((f) => maxAbs(f.pcm))), amplitudeOf(NEXT[i]!), `next reply chunk ${i} is its own audio`);
    }
    t.deepEqual(b.chunks.map((c) => c.text), NEXT);
  });
}

test('xai (no contexts): one chunk at a time, the next text is sent only after the previous audio ended', async (t) => {
  const fake = await new FakeXai({ apiKey: 'k', gapMs: 5 }).listen();
  const tts = new XaiTts({ baseUrl: fake.server.baseUrl, apiKey: 'k', voice: 'eve', languages: ['en'] });
  t.teardown(async () => (await tts.close(), await fake.close()));
  const st = stage(tts);
  const seen: boolean[] = [];
  st.onAudio((f) => {
    if (f.chunk === 0) seen.push(arrived(fake.server, REPLY[1]!));
  });
  const s = st.speak(REPLY);
  await until(() => st.flushed(s), { what: 'the reply flushed', timeoutMs: 10_000, everyMs: 5 });
  t.deepEqual(st.errors, []);
  t.true(seen.length > 0);
  t.false(seen.some(Boolean));
  const order = st.audio(s).map((f) => f.chunk);
  t.deepEqual(order, [...order].sort((a, b) => a - b));
  t.deepEqual(st.hooks.sent, REPLY);
});
