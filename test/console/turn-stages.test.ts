// The console's per-turn latency bars (api/console/call.js turnStages): the stages laid end to end from a
// logs.latency entry, the turn model's stage first when a turn model ended the turn.
import test from 'ava';
// @ts-expect-error the console is plain browser JavaScript without type declarations
import { turnStages } from '../../api/console/call.js';

type Stage = { key: string; ms: number | null; from?: number };

test('a turn the turn model ended: its bar comes first, the STT bar starts where it ended', (t) => {
  const r = turnStages({ total_ms: 720, detail: { userStopped_ms: 0, turnEnd_ms: 80, sttFinal_ms: 280, llmFirstToken_ms: 580, ttsFirstByte_ms: 700, firstFrame_ms: 720 } }) as { stages: Stage[]; total: number };
  t.deepEqual(r.stages.map((s) => [s.key, s.ms, s.from]), [['turn_model', 80, 0], ['stt', 200, 80], ['llm', 300, 280], ['tts', 120, 580], ['send', 20, 700]]);
  t.is(r.total, 720);
});

test('a turn without a turn model has no turn-model bar; the STT bar starts at the end of speech', (t) => {
  const r = turnStages({ total_ms: 620, detail: { userStopped_ms: 0, sttFinal_ms: 200, llmFirstToken_ms: 450, ttsFirstByte_ms: 600, firstFrame_ms: 620 } }) as { stages: Stage[] };
  t.is(r.stages[0]!.ms, null);
  t.deepEqual(r.stages[1], { key: 'stt', ms: 200, from: 0 });
});
