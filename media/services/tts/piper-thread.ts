// The Piper voice on a worker thread of the pool in piper.ts: eSpeak NG turns text into IPA phonemes (`espeak-ng
// --ipa`, spawned from this thread so a fork never stalls the event loop), the voice's phoneme_id_map turns them
// into ids, the VITS model (onnxruntime-node, whose run() blocks its thread) turns ids into 22 050 Hz audio.
// Request: one clause or sentence of text. Reply: its 16-bit samples at the voice's rate.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { poolData, poolPort, serveThread } from '../thread-pool.ts';

export interface PiperRequest {
  text: string;
  /** > 1 speaks slower (Piper's length_scale multiplier) */
  lengthScale?: number;
}

interface VoiceConfig {
  audio: { sample_rate: number };
  espeak: { voice: string };
  inference: { noise_scale: number; length_scale: number; noise_w: number };
  phoneme_id_map: Record<string, number[]>;
}

const { modelPath, configPath, espeak } = poolData<{ modelPath: string; configPath: string; espeak: string }>();

/** IPA phonemes of a text, clause by clause (eSpeak prints one line per clause), punctuation put back as Piper does. */
function phonemize(text: string, voice: string, binary: string): Promise<string> {
  return new Promise((ok, fail) => {
    execFile(binary, ['-q', '--ipa', '-v', voice, '--stdin'], { timeout: 10_000 }, (err, stdout) => {
      if (err) return fail(new Error(`espeak-ng --ipa failed: ${err.message}`));
      const lines = stdout.split('\n').map((l) => l.trim()).filter(Boolean);
      const marks = [...text.matchAll(/([,.;:!?]+)(?=\s|$)/g)].map((m) => m[1]!.slice(-1));
      if (marks.length < lines.length) marks.push(...Array<string>(lines.length - marks.length).fill(lines.length > 1 ? ',' : '.'));
      ok(lines.map((l, i) => l + (marks.length === lines.length || i < lines.length - 1 ? marks[i]! : marks.at(-1)!)).join(' '));
    }).stdin!.end(text.replace(/\s+/g, ' ') + '\n');
  });
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
  return async ({ text, lengthScale }) => {
    const phonemeIds = ids(await phonemize(text, cfg.espeak.voice, espeak));
    const inf = cfg.inference;
    const out = await session.run({
      input: new ort.Tensor('int64', BigInt64Array.from(phonemeIds, (n) => BigInt(n)), [1, phonemeIds.length]),
      input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(phonemeIds.length)]), [1]),
      scales: new ort.Tensor('float32', Float32Array.from([inf.noise_scale, inf.length_scale * (lengthScale ?? 1), inf.noise_w]), [3]),
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
});
