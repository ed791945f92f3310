// summarizeTurn / observeTurn: the stored per-turn record (logs.latency[]) and the histogram fed from it.
import test from 'ava';
import { registry } from '../../../core/metrics.ts';
import { observeTurn, summarizeTurn } from '../../../media/pipeline/metrics.ts';

const base = { t0: 1000, t0Wall: Date.parse('2026-01-01T10:00:00.000Z'), providers: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' } };

test('a caller turn: durations per stage, offsets from the end of speech, placed on the call timeline', (t) => {
  const l = summarizeTurn({ turn: 2, userStoppedAt: 6000, sttFinalAt: 6200.04, llmRequestAt: 6150, llmFirstTokenAt: 6450, ttsTextAt: 6500, ttsFirstByteAt: 6600, firstFrameAt: 6620 }, base);
  t.deepEqual(l, {
    turn: 2, turn_model_ms: null, stt_ms: 200, llm_ms: 300, tts_ms: 100, total_ms: 620, overhead_ms: 20,
    detail: { userStopped_ms: 0, sttFinal_ms: 200, llmRequest_ms: 150, llmFirstToken_ms: 450, ttsText_ms: 500, ttsFirstByte_ms: 600, firstFrame_ms: 620 },
    origin: 'user_stopped', offset_ms: 5000, started_at: '2026-01-01T10:00:05.000Z',
    providers: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
  });
});

test('a turn ended by the turn model: its own stage between the end of speech and the STT, in the histogram under the model', async (t) => {
  const providers = { stt: 'local', llm: 'groq', tts: 'inworld', turn_model: 'smart-turn-v3.2' };
  const l = summarizeTurn({ turn: 3, userStoppedAt: 6000, turnEndAt: 6080, sttFinalAt: 6280, llmRequestAt: 6280, llmFirstTokenAt: 6580, ttsTextAt: 6600, ttsFirstByteAt: 6700, firstFrameAt: 6720 }, { ...base, providers });
  t.is(l.turn_model_ms, 80);
  t.is(l.stt_ms, 200, 'the STT stage starts where the turn model ended the turn');
  t.is(l.total_ms, 720);
  t.is(l.overhead_ms, 720 - 80 - 200 - 300 - 100);
  t.is(l.detail.turnEnd_ms, 80);
  t.is(l.providers.turn_model, 'smart-turn-v3.2');
  const count = async () => {
    const m = (await registry.getSingleMetricAsString('voice_turn_stage_seconds')).match(/voice_turn_stage_seconds_count\{stage="turn_model",provider="smart-turn-v3.2"\} (\d+)/);
    return m ? Number(m[1]) : 0;
  };
  const before = await count();
  observeTurn(l);
  t.is(await count(), before + 1);
  // without a turn model there is no such stage, and no provider for it
  const vad = summarizeTurn({ turn: 1, userStoppedAt: 0, sttFinalAt: 100 }, { ...base, providers });
  t.is(vad.turn_model_ms, null);
  t.false('turn_model' in vad.providers);
});

test('an improvised greeting has no caller speech: it counts from the LLM request, stt_ms is null', (t) => {
  const l = summarizeTurn({ turn: 1, llmRequestAt: 1100, llmFirstTokenAt: 1400, ttsTextAt: 1420, ttsFirstByteAt: 1500, firstFrameAt: 1510 }, base);
  t.is(l.origin, 'llm_request');
  t.is(l.stt_ms, null);
  t.is(l.total_ms, 410);
  t.is(l.offset_ms, 100);
  t.is(l.started_at, '2026-01-01T10:00:00.100Z');
  t.false('userStopped_ms' in l.detail);
});

test('observeTurn labels each stage with its provider, total and overhead with the three', async (t) => {
  const count = async (stage: string, provider: string) => {
    const m = (await registry.getSingleMetricAsString('voice_turn_stage_seconds')).match(new RegExp(`voice_turn_stage_seconds_count\\{stage="${stage}",provider="${provider.replace(/\+/g, '\\+')}"\\} (\\d+)`));
    return m ? Number(m[1]) : 0;
  };
  const before = await Promise.all([count('stt', 'deepgram'), count('llm', 'openai'), count('tts', 'cartesia'), count('total', 'deepgram+openai+cartesia'), count('overhead', 'deepgram+openai+cartesia')]);
  observeTurn(summarizeTurn({ turn: 1, userStoppedAt: 0, sttFinalAt: 100, llmRequestAt: 100, llmFirstTokenAt: 200, ttsTextAt: 200, ttsFirstByteAt: 300, firstFrameAt: 310 }, base));
  const after = await Promise.all([count('stt', 'deepgram'), count('llm', 'openai'), count('tts', 'cartesia'), count('total', 'deepgram+openai+cartesia'), count('overhead', 'deepgram+openai+cartesia')]);
  t.deepEqual(after, before.map((n) => n + 1));
  // a stage that did not happen is not observed
  observeTurn(summarizeTurn({ turn: 2, llmRequestAt: 0, llmFirstTokenAt: 100, ttsTextAt: 100, ttsFirstByteAt: 200, firstFrameAt: 210 }, base));
  t.is(await count('stt', 'deepgram'), after[0]);
});
