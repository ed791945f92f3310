// One interface per engine family. Vendor adapters live in media/services/{llm,stt,tts}/<vendor>.ts and
// implement these; the pipeline only ever sees these types. Audio is PCM s16le mono: STT input at 16 kHz,
// TTS output at 24 kHz (adapters resample when the vendor cannot produce 24 kHz).

export interface EngineError {
  message: string;
  /** true when retrying the same request may succeed (network blip, 5xx, 429). */
  retryable: boolean;
  /** true when the call cannot go on with this engine (bad credentials, closed socket that cannot reopen). */
  fatal: boolean;
}

// ── STT ─────────────────────────────────────────────────────────────────────────────────────────────────
export type SttEvent =
  | { type: 'speech_started' }                        // vendor start-of-turn / speech onset, where it has one
  | { type: 'interim'; text: string }                 // transcript so far for the current utterance
  | { type: 'final'; text: string }                   // utterance (segment) complete
  | { type: 'turn_end'; text: string }                // vendor end-of-turn (Flux EndOfTurn, Soniox <end>, ...)
  | { type: 'eager_turn_end'; text: string }          // speculative end of turn (may be followed by turn_resumed)
  | { type: 'turn_resumed' }
  | { type: 'error'; error: EngineError };

export interface SttStream {
  /** 16 kHz mono s16le PCM, any frame size (20 ms typical). Never blocks. */
  write(pcm: Int16Array): void;
  /** Ask the engine to finalize what it has (end of caller speech by VAD). */
  finalize(): void;
  close(): Promise<void>;
}

export interface SttOptions {
  languages: string[];
  /** Bias terms (contextTerms / keyterms of the provider's tuning block). */
  keyterms: string[];
  onEvent(event: SttEvent): void;
}

export interface SttService {
  readonly provider: string;
  readonly model: string;
  /** true when the engine emits turn_end itself (then the VAD stop window is not used to end turns). */
  readonly hasTurnDetection: boolean;
  /**
   * How long a final may take after finalize() (ms) before the turn ends with the last interim instead. Engines that
   * decode on this machine set it high: their final always comes, later under load. Default 1500.
   */
  readonly finalWaitMs?: number;
  open(opts: SttOptions): Promise<SttStream>;
}

// ── LLM ─────────────────────────────────────────────────────────────────────────────────────────────────
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text as produced by the model (may be invalid JSON: the runner reports that to the model). */
  arguments: string;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema object `{type: 'object', properties, required}`. */
  parameters: Record<string, unknown>;
}

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens?: number;
  cacheCreationTokens?: number;
}

export type LlmChunk =
  | { type: 'text'; delta: string }
  /** A complete tool call (adapters assemble streamed fragments before emitting). */
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'usage'; usage: LlmUsage }
  | { type: 'done'; finishReason: string };

export interface LlmRequest {
  messages: ChatMessage[];
  tools: ToolSpec[];
  temperature: number;
  maxTokens: number;
  signal: AbortSignal;
}

/**
 * One non-streaming answer shaped by a JSON Schema (post-call analysis, judges): the vendor's own constrained
 * mechanism is used — OpenAI-style Structured Outputs (`response_format: json_schema`, strict), Anthropic's forced
 * tool, Gemini's `responseSchema`, a JSON-schema grammar for the in-process local model.
 */
export interface LlmSchemaRequest {
  messages: ChatMessage[];
  /**
   * The answer's JSON Schema: an object schema using `type` (string, number, integer, boolean, array, object),
   * `properties`, `required`, `items`, `enum`, `description` and `additionalProperties: false`. Properties left
   * out of `required` may be absent from the answer; adapters whose vendor requires every property (strict
   * Structured Outputs) ask for null there and drop the nulls again, so the answer is in the caller's shape.
   */
  schema: Record<string, unknown>;
  /** What the vendor calls the schema (json_schema.name, the forced tool's name): 1-64 of [A-Za-z0-9_-]. */
  name: string;
  temperature: number;
  maxTokens: number;
  signal: AbortSignal;
}

export interface LlmSchemaResult {
  /**
   * The answer parsed from JSON; `undefined` when the text is not JSON (a refusal, a cut-off answer). Not checked
   * against the schema: callers validate it before they rely on it.
   */
  value: unknown;
  /** The answer as the model wrote it (the refusal text for a refusal). */
  text: string;
  usage: LlmUsage | null;
  /** 'stop'; 'length' when maxTokens cut the answer; 'refusal' when the model declined (OpenAI `refusal`). */
  finishReason: string;
}

/** What a call's requests will start with, known before its next request (llm.prewarm). */
export interface LlmPrefillContext {
  /** the conversation so far: the system prompt, then the greeting once it is said */
  messages: ChatMessage[];
  tools: ToolSpec[];
}

export interface LlmService {
  readonly provider: string;
  readonly model: string;
  /** Streams chunks; throws an Error with `engineError: EngineError` on vendor failure; stops on signal abort. */
  stream(req: LlmRequest): AsyncIterable<LlmChunk>;
  /** One tiny hidden request to warm connections (llm.prewarm); the in-process model loads. */
  prewarm?(): Promise<void>;
  /**
   * One answer in the shape of `req.schema` (LlmSchemaRequest). Throws an Error with `engineError` on vendor
   * failure (as stream does); absent on engines that cannot constrain their output (the demo responder).
   */
  completeWithSchema?(req: LlmSchemaRequest): Promise<LlmSchemaResult>;
  /**
   * Process the conversation so far ahead of the next request (llm.prewarm; in-process models only): the model
   * evaluates the system prompt and tools as the call starts, and the greeting once it is said, so that a reply
   * evaluates only the caller's turn.
   */
  prefill?(context: LlmPrefillContext): Promise<void>;
  /** The call is over: release what the engine holds for it (the in-process model's sequence). */
  close?(): Promise<void>;
}

// ── TTS ─────────────────────────────────────────────────────────────────────────────────────────────────
/** Where a spoken word ends, as the vendor's alignment/timestamps report it. */
export interface TtsWordTiming {
  /** the word as the vendor aligned it (may be normalized; callers count words, they do not match text) */
  word: string;
  /** end of the word in 24 kHz samples from the start of this chunk's audio */
  endSample: number;
}

export interface TtsSynthesizeOptions {
  /**
   * The utterance (one reply, greeting, prompt) this chunk belongs to. Adapters with contexts keep one vendor
   * context per utterance (prosody carries over between its chunks); a new utterance opens a new context.
   * Absent: the chunk is its own utterance.
   */
  utterance?: object;
  /** Called with word end times as the vendor reports them (vendors with alignment / word timestamps). */
  onWords?(words: TtsWordTiming[]): void;
}

export interface TtsService {
  readonly provider: string;
  readonly model: string;
  readonly voice: string;
  /**
   * Synthesize one chunk of text (a sentence or clause) to 24 kHz mono s16le PCM, streamed as produced.
   * Stops promptly when signal aborts (interruption); a vendor context is cancelled so nothing stale follows.
   * Throws an Error with `engineError: EngineError` on vendor failure (fatal for refusals: key, voice, quota).
   */
  synthesize(text: string, signal: AbortSignal, opts?: TtsSynthesizeOptions): AsyncIterable<Int16Array>;
  /**
   * How many chunks beyond the one being played out may be in synthesis at once (default 0: one at a time). The
   * TTS stage starts a chunk's synthesize() (which sends its text) as soon as the chunker releases it, within this
   * bound, and reads the audio strictly in order; concurrent synthesize() calls must keep each chunk's audio apart
   * (contexts: the chunks of one utterance go into its context in call order).
   */
  readonly lookahead?: number;
  /** The utterance will get no more text: close its vendor context (adapters with contexts). */
  endUtterance?(utterance: object): void;
  /**
   * Open the vendor connection now (called as the call connects) so the first reply pays no handshake.
   * Rejects with an engine error when the vendor refuses (fatal) or cannot be reached (retryable).
   */
  connect?(): Promise<void>;
  close?(): Promise<void>;
}

// ── turn model ──────────────────────────────────────────────────────────────────────────────────────────
/** One decision of a turn model on the caller's turn so far. */
export interface TurnDecision {
  /** the model says the caller has finished their turn */
  complete: boolean;
  /** its probability of "complete" (0..1) */
  probability: number;
  /** CPU the decision took (features and inference, ms) */
  cpuMs: number;
}

/**
 * A semantic end-of-turn model (media/services/turn): asked when the caller falls silent, it says whether what they
 * said so far sounds finished. Used for STT engines without an end of turn of their own.
 */
export interface TurnModel {
  /** model id, the `provider` label of its latency stage (e.g. smart-turn-v3.2) */
  readonly id: string;
  /** Loaded and ready; rejects (ModelFileError for a missing or altered file) when it cannot run here. */
  ready(): Promise<void>;
  /** Decide on the caller's turn: 16 kHz mono s16le audio from (just before) its start to now. */
  decide(pcm16k: Int16Array): Promise<TurnDecision>;
}

export interface Engines {
  llm: LlmService;
  stt: SttService;
  tts: TtsService;
  /** the end-of-turn model, for an STT without its own turn detection (absent: VAD silence ends turns) */
  turn?: TurnModel;
}
