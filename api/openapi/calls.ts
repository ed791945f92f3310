// OpenAPI schema of one call's detail record (`GET /calls/{callId}`), in particular `logs.latency[]`: the per-turn
// stage timings the media process stores with the call (media/pipeline/metrics.ts summarizeTurn). The same numbers
// feed the `voice_turn_stage_seconds{stage, provider}` histogram on /metrics.
import { int, nullable, num, str, ts } from './parts.ts';
const ms = (description: string) => ({ ...nullable(num), description });

/** The stage events of a turn, in pipeline order, as `detail` keys (ms from the turn's origin). */
export const turnStageEvents = {
  userStopped_ms: 'the caller stopped speaking (VAD end of speech, or the STT end of turn); 0 when it is the origin',
  turnEnd_ms: 'the turn model decided the caller\'s turn was over (or its longest pause passed); absent without a turn model',
  sttFinal_ms: 'the STT final transcript of the turn arrived',
  llmRequest_ms: 'the LLM request was sent (a speculative request sent before the final counts from when it was sent)',
  llmFirstToken_ms: 'the LLM streamed its first token',
  ttsText_ms: 'the first text of the reply was sent to the TTS',
  ttsFirstByte_ms: 'the TTS returned its first audio',
  firstFrame_ms: 'the first audio frame of the reply was sent to the caller',
} as const;

export const turnLatencySchema = {
  type: 'object',
  description:
    'One agent reply (turn) of the call: when each pipeline stage happened and how long the vendor stages took. Written when the reply\'s first audio frame is sent; a turn cut short before any audio has no entry. Durations are milliseconds with one decimal, measured on a monotonic clock inside the media process.',
  properties: {
    turn: { ...int, description: 'Caller turn number (1 = the first thing the caller said); the greeting counts as turn 1 when the LLM improvises it' },
    turn_model_ms: ms('End of speech → the turn model ended the turn (null where the STT vendor decides the end of turn itself, or without the model)'),
    stt_ms: ms('End of the turn (end of speech, or the turn model\'s decision) → STT final (null when the turn has no caller speech, e.g. an improvised greeting)'),
    llm_ms: ms('LLM request → first token (null for fixed texts: greetings, idle prompts)'),
    tts_ms: ms('First text to TTS → first audio from the TTS'),
    total_ms: ms('Origin → first audio frame sent: what the caller waited'),
    overhead_ms: ms('total_ms minus turn_model_ms, stt_ms, llm_ms and tts_ms: time not spent waiting on a model or vendor (turn detection windows, queueing, pacing)'),
    detail: {
      type: 'object',
      description: 'Each stage event that happened, in ms from the origin (absent when the stage did not happen)',
      properties: Object.fromEntries(Object.entries(turnStageEvents).map(([k, d]) => [k, { ...num, description: d }])),
      additionalProperties: false,
    },
    origin: { anyOf: [{ enum: ['user_stopped', 'stt_final', 'llm_request'] }, { type: 'null' }], description: 'The event the detail offsets count from: end of speech when known, else the STT final, else the LLM request' },
    offset_ms: ms('The origin in ms since the call\'s media session started: the recording\'s time axis'),
    started_at: { ...nullable(ts), description: 'The origin as wall-clock time' },
    providers: {
      type: 'object',
      description: 'The provider of each stage (the call\'s engines; the histogram\'s provider label); turn_model only when the turn model ended the turn',
      properties: { stt: str, llm: str, tts: str, turn_model: str },
      required: ['stt', 'llm', 'tts'],
    },
  },
  required: ['turn', 'stt_ms', 'llm_ms', 'tts_ms', 'total_ms', 'overhead_ms', 'detail'],
};

/** The call's post-call analysis (AgentConfig `analysis`); null when the agent asks for none or it has not run yet. */
export const callAnalysisSchema = nullable({
  type: 'object',
  properties: {
    status: { enum: ['completed', 'failed', 'skipped'], description: 'skipped: nothing was said on the call (or it never connected)' },
    structuredData: { description: "The answer in the shape of the agent's structuredData.schema (validated); null when not asked, failed or skipped" },
    successEvaluation: nullable({
      anyOf: [
        { type: 'object', properties: { passed: { type: 'boolean' }, reason: str }, required: ['passed', 'reason'] },
        { type: 'object', properties: { score: { type: 'integer', minimum: 1, maximum: 10 }, reason: str }, required: ['score', 'reason'] },
      ],
      description: 'The verdict of the rubric: pass_fail {passed, reason}, score_1_10 {score, reason}',
    }),
    error: { ...nullable(str), description: 'Why it failed (the validator\'s message, the vendor\'s refusal) or was skipped' },
    model: nullable({ type: 'object', properties: { provider: str, model: str }, required: ['provider', 'model'] }),
  },
  required: ['status', 'structuredData', 'successEvaluation', 'error', 'model'],
});

/** `GET /calls/{callId}`: the list item's fields plus the detail fields. */
export function callDetailSchema(listItem: { properties: Record<string, unknown> }) {
  return {
    type: 'object',
    properties: {
      ...listItem.properties,
      configSnapshot: nullable({ type: 'object', description: 'The resolved agent configuration the call ran with (credentials scrubbed); for rejected calls the redacted request body' }),
      contextVariables: { type: 'object', additionalProperties: str },
      logs: {
        type: 'object',
        description: 'Pipeline records of the call. Keys appear when they apply; other keys (validation_error, dial_error, pipeline_error, transfer, …) are described in the spec.',
        properties: {
          latency: { type: 'array', items: turnLatencySchema, description: 'Per-turn latency, one entry per agent reply that reached the caller, in order' },
          pipeline_error: { ...str, description: 'Why the pipeline ended the call with an error' },
        },
        additionalProperties: true,
      },
      telephonySim: { type: 'boolean' },
      transcript: nullable({ type: 'array', items: { type: 'object', properties: { role: { enum: ['user', 'assistant', 'tool', 'dtmf'] }, content: str, timestamp: ts }, required: ['role', 'timestamp'] } }),
      transcriptUrl: nullable(str),
      recordingUrl: nullable(str),
      usage: nullable({ type: 'object' }),
      summary: nullable(str),
      analysis: callAnalysisSchema,
      updatedAt: ts,
    },
  };
}
