// The Piper voice in a helper process of the pool in piper.ts: eSpeak NG turns text into IPA phonemes, the voice's
// phoneme_id_map turns them into ids, the VITS model (onnxruntime-node, whose run() blocks its thread) turns ids into
// 22 050 Hz audio. Request: one clause or sentence of text. Reply: its 16-bit samples at the voice's rate.
//
// Phonemes come from a resident libespeak-ng process (espeak_phonemes.py, espeak_TextToPhonemes as Piper's own
// phonemizer, same IPA as `espeak-ng --ipa`; a HelperProcess, started again at the next request if it died) started
// with the helper; where it cannot run (no python3 or no libespeak-ng) an `espeak-ng --ipa` process per clause, which
// costs far more per clause (bench/local-tts-latency.ts). The helper speaks one sentence while it loads, so that the
// first caller does not pay for onnxruntime's first run.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { HelperProcess } from '../helper-process.ts';
import { poolData, poolPort, serveThread } from '../thread-pool.ts';

export interface PiperRequest {
  text: string;
  /** > 1 speaks slower (Piper's length_scale multiplier) */
  lengthScale?: number;
  /**
   * No sampling noise (noise_scale and noise_w 0): the same text gives the same audio every time. The voice's own
   * noise makes speech more natural; tests and benches that compare what a recogniser hears use this.
   */
  noiseless?: boolean;
}

interface VoiceConfig {
  audio: { sample_rate: number };
  espeak: { voice: string };
  inference: { noise_scale: number; length_scale: number; noise_w: number };
  phoneme_id_map: Record<string, number[]>;
}

const { modelPath, configPath, espeak } = poolData<{ modelPath: string; configPath: string; espeak: string }>();
const PHONEMIZER = fileURLToPath(new URL('./espeak_phonemes.py', import.meta.url));
const PHONEMIZER_START_MS = 10_000;

/** The clauses' IPA phonemes joined, each clause's punctuation put back from the text as Piper does. */
function withMarks(text: string, clauses: string[]): string {
  const marks = [...text.matchAll(/([,.;:!?]+)(?=\s|$)/g)].map((m) => m[1]!.slice(-1));
  if (marks.length < clauses.length) marks.push(...Array<string>(clauses.length - marks.length).fill(clauses.length > 1 ? ',' : '.'));
  return clauses.map((l, i) => l + (marks.length === clauses.length || i < clauses.length - 1 ? marks[i]! : marks.at(-1)!)).join(' ');
}

/** IPA phonemes of a text from an `espeak-ng --ipa` process of its own (one line per clause). */
function phonemizeOnce(text: string, voice: string, binary: string): Promise<string[]> {
  return new Promise((ok, fail) => {
    execFile(binary, ['-q', '--ipa', '-v', voice, '--stdin'], { timeout: 10_000 }, (err, stdout) => {
      if (err) return fail(new Error(`espeak-ng --ipa failed: ${err.message}`));
      ok(stdout.split('\n').map((l) => l.trim()).filter(Boolean));
    }).stdin!.end(text.replace(/\s+/g, ' ') + '\n');
  });
}

/** The resident phonemizer (a HelperProcess): one JSON line per request and per answer, answered in order. */
class ResidentPhonemizer extends HelperProcess {
  private readonly waiting: Array<{ ok(c: string[]): void; fail(e: Error): void }> = [];
  private buffered = '';

  constructor(python: string) {
    super(python, [PHONEMIZER], 'eSpeak NG phonemizer', PHONEMIZER_START_MS);
  }

  protected onOutput(d: Buffer): void {
    this.buffered += d.toString();
    for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      const m = JSON.parse(line) as { ready?: boolean; clauses?: string[]; error?: string };
      if (m.ready) this.started();
      else {
        const w = this.waiting.shift();
        this.hold(this.busy());
        if (m.clauses) w?.ok(m.clauses);
        else w?.fail(new Error(`eSpeak NG phonemizer: ${m.error}`));
      }
    }
  }

  protected busy(): boolean {
    return this.waiting.length > 0;
  }

  protected onDeath(): void {
    for (const w of this.waiting.splice(0)) w.fail(new Error('eSpeak NG phonemizer exited'));
  }

  clauses(text: string, voice: string): Promise<string[]> {
    if (this.dead) return Promise.reject(new Error('eSpeak NG phonemizer exited'));
    return new Promise((ok, fail) => {
      this.waiting.push({ ok, fail });
      this.hold(true);
      this.child.stdin.write(`${JSON.stringify({ text: text.replace(/\s+/g, ' '), voice })}\n`);
    });
  }
}

let resident: ResidentPhonemizer | null = null;
/** false once the resident phonemizer could not start: then a process per clause, for good */
let residentWorks = true;

/** IPA phonemes of a text, clause by clause, punctuation put back. */
async function phonemize(text: string, voice: string): Promise<string> {
  if (residentWorks) {
    if (!resident || resident.dead) resident = new ResidentPhonemizer(process.env.LOCAL_TTS_PYTHON || 'python3');
    const r = resident;
    try {
      await r.ready;
    } catch {
      residentWorks = false;
    }
    if (residentWorks) return withMarks(text, await r.clauses(text, voice));
  }
  return withMarks(text, await phonemizeOnce(text, voice, espeak));
}

void serveThread<PiperRequest, Int16Array>(poolPort, async () => {
  const cfg = JSON.parse(readFileSync(configPath, 'utf8')) as VoiceConfig;
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const ids = (phonemes: string): number[] => {
    const map = cfg.phoneme_id_map;
    const out = [...map['^']!, ...map['_']!];
    for (const ch of phonemes.normalize('NFD')) {
      const id = map[ch];
      if (id) out.push(...id, ...map['_']!);
    }
    out.push(...map['$']!);
    return out;
  };
  const speak = async ({ text, lengthScale, noiseless }: PiperRequest): Promise<{ result: Int16Array; transfer: ArrayBuffer[] }> => {
    const phonemeIds = ids(await phonemize(text, cfg.espeak.voice));
    const inf = cfg.inference;
    const out = await session.run({
      input: new ort.Tensor('int64', BigInt64Array.from(phonemeIds, (n) => BigInt(n)), [1, phonemeIds.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(phonemeIds.length)]), [1]),
      scales: new ort.Tensor('float32', Float32Array.from([noiseless ? 0 : inf.noise_scale, inf.length_scale * (lengthScale ?? 1), noiseless ? 0 : inf.noise_w]), [3]),
    });
    const f = out.output!.data as Float32Array;
    // peak-normalised to full scale as Piper does (its output is not bounded), then 16-bit
    let peak = 0.01;
    for (let i = 0; i < f.length; i++) peak = Math.max(peak, Math.abs(f[i]!));
    const gain = 32767 / peak;
    const pcm = new Int16Array(f.length);
    for (let i = 0; i < f.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(f[i]! * gain)));
    return { result: pcm, transfer: [pcm.buffer] };
  };
  // warm: the phonemizer started and onnxruntime's first run (several times slower than the next ones) done here,
  // before the helper says it is loaded
  await speak({ text: 'Hello, how can I help you today?' });
  return speak;
});
