// The Whisper log-mel front end (media/audio/log-mel.ts) against the reference the Smart Turn model ships with:
// pipecat-ai 1.14.0's `_whisper_features.py`, run from the pinned wheel in a test virtualenv (test/helpers/ref-venv.ts).
// Tolerance: every feature within 1e-4 of the reference (features lie in about [-1, 1.5]; float32 rounding of the
// normalised waveform alone moves them by ~1e-6). Then the model itself: Python's onnxruntime on the reference
// features and our adapter (onnxruntime-node in its helper, on our features) give the same probability within 1e-3
// and the same decision.
import test from 'ava';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { whisperLogMel } from '../../../media/audio/log-mel.ts';
import { installModel, MODELS } from '../../../media/services/model-files.ts';
import { closeSmartTurn, createSmartTurn } from '../../../media/services/turn/smart-turn.ts';
import { modelWindow } from '../../../media/services/turn/window.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import { resample } from '../../../core/audio/resample.ts';
import { concatInt16 } from '../../../media/audio/pcm.ts';
import { refPython } from '../../helpers/ref-venv.ts';
import { tempDir } from '../../helpers/tmp.ts';

const run = promisify(execFile);
const TOLERANCE = 1e-4;

/** A fixed, speech-like test signal: a gliding harmonic voice with syllable-rate envelope, and seeded noise. */
function waveform(seconds: number, seed = 7): Int16Array {
  const n = Math.round(seconds * 16000);
  const out = new Int16Array(n);
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) - 0.5;
  for (let i = 0; i < n; i++) {
    const t = i / 16000;
    const f0 = 120 + 30 * Math.sin(2 * Math.PI * 0.7 * t);
    let v = 0;
    for (let h = 1; h <= 12; h++) v += Math.sin(2 * Math.PI * f0 * h * t) / h;
    const env = Math.max(0, Math.sin(2 * Math.PI * 2.5 * t));
    out[i] = Math.round(Math.max(-1, Math.min(1, 0.25 * v * env + 0.02 * rnd())) * 32000);
  }
  return out;
}

async function eSpeak(text: string): Promise<Int16Array | null> {
  try {
    const tts = createLocalTts({ languages: ['en'], model: 'espeak-ng', binary: 'espeak-ng', wordsPerMinute: 150 });
    const parts: Int16Array[] = [];
    for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
    return resample(concatInt16(parts), 24000, 16000);
  } catch {
    return null;
  }
}

const REFERENCE = `
import sys, zipfile, importlib.util, numpy as np
wheel, member, out_dir, n, model = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else ''
src = zipfile.ZipFile(wheel).read(member)
spec = importlib.util.spec_from_loader('_whisper_features', loader=None)
mod = importlib.util.module_from_spec(spec)
exec(compile(src, member, 'exec'), mod.__dict__)
sess = None
if model:
    import onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, sess_options=so)
probs = []
for i in range(n):
    x = np.fromfile(f'{out_dir}/in-{i}.f32', dtype=np.float32)
    f = mod.compute_whisper_log_mel_features(x, do_normalize=True)
    f.astype(np.float32).tofile(f'{out_dir}/ref-{i}.f32')
    if sess is not None:
        probs.append(float(sess.run(None, {'input_features': f[None]})[0].ravel()[0]))
print(' '.join(repr(p) for p in probs))
`;

test('log-mel features match the reference front end of the model\'s package; the model decides the same in Python and in Node', async (t) => {
  const ref = await refPython();
  if ('skip' in ref) {
    t.log(`skipped: ${ref.skip}`);
    t.pass();
    return;
  }
  const dir = tempDir('log-mel-');
  // the turn model installed from the same wheel through setup's own code, into a scratch models directory
  const models = path.join(dir, 'models');
  const { mkdir, copyFile } = await import('node:fs/promises');
  await mkdir(path.join(models, 'pip'), { recursive: true });
  await copyFile(ref.wheel, path.join(models, 'pip', path.basename(ref.wheel)));
  await installModel('smart-turn-v3.2', { dir: models, python: ref.python });
  const modelFile = path.join(models, MODELS['smart-turn-v3.2'].files[0]!.path);

  const spoken = await eSpeak('Can you tell me what time you open tomorrow?');
  const unfinished = await eSpeak('My phone number is five five five,');
  const turns: Int16Array[] = [
    waveform(3), // a short turn: zero-padded at the start of the 8 s window
    waveform(9.5, 11), // longer than the window: its last 8 s
    ...(spoken && unfinished ? [concatInt16([new Int16Array(8000), spoken, new Int16Array(3200)]), concatInt16([new Int16Array(8000), unfinished, new Int16Array(3200)])] : []),
  ];
  if (!spoken) t.log('eSpeak NG is not installed: the spoken turns are left out');
  await Promise.all(turns.map((pcm, i) => writeFile(path.join(dir, `in-${i}.f32`), Buffer.from(modelWindow(pcm).buffer))));
  const member = 'pipecat/audio/turn/smart_turn/_whisper_features.py';
  const { stdout } = await run(ref.python, ['-c', REFERENCE, ref.wheel, member, dir, String(turns.length), modelFile], { timeout: 300_000 });
  const pyProbs = stdout.trim().split(/\s+/).map(Number);

  for (let i = 0; i < turns.length; i++) {
    const want = new Float32Array((await readFile(path.join(dir, `ref-${i}.f32`))).buffer.slice(0));
    const got = whisperLogMel(modelWindow(turns[i]!));
    t.is(got.length, 80 * 800);
    t.is(want.length, got.length);
    let worst = 0;
    for (let k = 0; k < got.length; k++) worst = Math.max(worst, Math.abs(got[k]! - want[k]!));
    t.log(`turn ${i}: largest difference ${worst.toExponential(2)}`);
    t.true(worst <= TOLERANCE, `turn ${i}: features differ by ${worst}`);
  }

  const model = createSmartTurn({ modelsDir: models, workers: 1 });
  try {
    for (let i = 0; i < turns.length; i++) {
      const d = await model.decide(turns[i]!);
      t.log(`turn ${i}: probability of complete ${d.probability.toFixed(4)} (Python ${pyProbs[i]!.toFixed(4)})`);
      t.true(Math.abs(d.probability - pyProbs[i]!) < 1e-3, `turn ${i}: ${d.probability} vs ${pyProbs[i]}`);
      t.is(d.complete, pyProbs[i]! > 0.5);
    }
    if (spoken && unfinished) t.not((await model.decide(turns[2]!)).complete, (await model.decide(turns[3]!)).complete, 'a finished and an unfinished sentence are told apart');
  } finally {
    await closeSmartTurn();
  }
});
