// Pure parts of post-call: cost from usage and the price table, summary clean-up and the extractive summary,
// WAV header checks.
import test from 'ava';
import { computeCost, PRICES } from '../../core/pricing.ts';
import { parseWavHeader, InvalidWavError, wavHeader } from '../../core/audio/wav.ts';
import { cleanSummary, extractiveSummary, splitSentences } from '../../core/summary.ts';
import { makeWav, TRANSCRIPT } from './helpers.ts';

test('cost: tokens per 1K (cached input at its own price), characters, seconds; arrays of LLM services add up', (t) => {
  const mini = PRICES.llm.openai!['gpt-4o-mini']!;
  const usage = {
    llm: [
      { provider: 'openai', model: 'gpt-4o-mini', prompt_tokens: 10_000, completion_tokens: 1000, cache_read_tokens: 4000 },
      { provider: 'groq', model: 'llama-3.1-8b-instant', prompt_tokens: 2000, completion_tokens: 0 },
    ],
    tts: { provider: 'cartesia', model: 'sonic-2', characters: 1000 },
    stt: { provider: 'soniox', model: 'stt-rt-preview', seconds: 3600 },
  };
  const c = computeCost(usage);
  const llm = (6000 * mini.inputPer1K + 4000 * mini.cachedInputPer1K! + 1000 * mini.outputPer1K) / 1000 + (2000 * 0.00005) / 1000;
  t.is(c.llm, Math.round(llm * 1e6) / 1e6);
  t.is(c.tts, Math.round(1000 * PRICES.tts.cartesia!['*']!.perCharacter * 1e6) / 1e6);
  t.is(c.stt, 0.12);
  t.is(c.total, Math.round((c.llm + c.tts + c.stt) * 1e6) / 1e6);
  t.deepEqual(c.unpriced, []);
});

test('cost: local engines are free; unknown providers are reported and priced at 0; STT without seconds uses the call length', (t) => {
  t.is(computeCost({ llm: { provider: 'local', model: 'x', prompt_tokens: 1e6, completion_tokens: 1e6 }, tts: { provider: 'local', characters: 1e6 }, stt: { provider: 'local', seconds: 1e6 } }).total, 0);
  const c = computeCost({ llm: { provider: 'mystery', model: 'm', prompt_tokens: 100 }, stt: { provider: 'deepgram', model: 'flux' } }, { fallbackSttSeconds: 60 });
  t.deepEqual(c.unpriced, ['llm:mystery/m']);
  t.is(c.stt, 0.0077);
  t.is(computeCost(null).total, 0);
  t.is(computeCost({ llm: { provider: 'openai', model: 'gpt-4o', prompt_tokens: -5, completion_tokens: 'x' } }).total, 0, 'garbage metrics cost nothing');
});

test('summary clean-up: one paragraph, at most 5 sentences, no "Summary:" preamble', (t) => {
  t.is(cleanSummary('Summary:  One.\n\nTwo! Three? Four. Five. Six. Seven.'), 'One. Two! Three? Four. Five.');
  t.is(cleanSummary('   '), null);
  t.deepEqual(splitSentences('A b. C d'), ['A b.', 'C d']);
});

test('extractive summary: 3-5 sentences, quotes the caller, names tools and the ending', (t) => {
  const full = extractiveSummary(TRANSCRIPT, { durationSeconds: 42.5, endedReason: 'user_hangup' });
  const n = splitSentences(full).length;
  t.true(n >= 3 && n <= 5, full);
  t.true(full.includes('move my cleaning appointment'));
  t.true(full.includes('reschedule'));
  t.true(full.endsWith('The call ended because the caller hung up.'));
  const silent = extractiveSummary([], { durationSeconds: 5, endedReason: 'silence_timeout' });
  t.is(silent, 'The call lasted 5 seconds with 0 caller turns and 0 agent turns. The caller did not say anything that was transcribed. The call ended because the caller stayed silent.');
});

test('WAV header: valid PCM parsed; truncated, foreign or malformed files refused', (t) => {
  const wav = makeWav(1.5, 16000);
  t.like(parseWavHeader(wav, wav.length), { format: 1, channels: 1, sampleRate: 16000, bitsPerSample: 16, dataOffset: 44, durationSeconds: 1.5 });
  t.throws(() => parseWavHeader(wav, wav.length - 100), { instanceOf: InvalidWavError, message: /file holds/ });
  t.throws(() => parseWavHeader(Buffer.from('ID3\u0004 mp3 data here'), 20), { instanceOf: InvalidWavError });
  const badRate = wavHeader({ sampleRate: 16000, dataBytes: 0 });
  badRate.writeUInt32LE(5, 24);
  t.throws(() => parseWavHeader(badRate, 44), { message: /sample rate/ });
  t.throws(() => parseWavHeader(wav.subarray(0, 36), 36), { message: /no data chunk/ });
});
