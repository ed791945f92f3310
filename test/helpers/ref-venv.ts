// A Python virtualenv for checking our code against reference code published in a registry (the Smart Turn
// model's log-mel front end and ONNX inference in the pipecat-ai package). Made once, under .data/ref-venv, with
// exactly the packages that reference code needs (numpy and onnxruntime, pinned; not torch); the reference files
// come from the pinned pipecat-ai wheel itself (the one setup caches for the model, else downloaded and
// hash-checked here). Resolves { skip } with the reason when Python or pip is not available.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { MODELS, modelsDir, sha256File } from '../../media/services/model-files.ts';

const run = promisify(execFile);
const REPO = path.resolve(import.meta.dirname, '../..');
const VENV = path.join(REPO, '.data/ref-venv');
const PACKAGES = ['numpy==2.3.5', 'onnxruntime==1.30.0'];

export interface RefPython {
  python: string;
  /** the pipecat-ai wheel of the Smart Turn model, hash-checked */
  wheel: string;
}

let made: Promise<RefPython | { skip: string }> | null = null;

export function refPython(): Promise<RefPython | { skip: string }> {
  made ??= make();
  return made;
}

async function make(): Promise<RefPython | { skip: string }> {
  const python = path.join(VENV, 'bin/python');
  const probe = () => run(python, ['-c', 'import numpy, onnxruntime'], { timeout: 60_000 });
  try {
    await probe();
  } catch {
    try {
      await run('python3', ['--version']);
    } catch {
      return { skip: 'python3 is not installed: the reference front end cannot run' };
    }
    try {
      if (!existsSync(python)) await run('python3', ['-m', 'venv', VENV], { timeout: 120_000 });
      await run(path.join(VENV, 'bin/pip'), ['install', '-q', '--disable-pip-version-check', ...PACKAGES], { timeout: 600_000 });
      await probe();
    } catch (err) {
      return { skip: `could not make the reference virtualenv (python3 -m venv / pip install ${PACKAGES.join(' ')}): ${(err as Error).message.slice(0, 300)}` };
    }
  }
  const w = MODELS['smart-turn-v3.2'].wheels[0]!;
  const wheel = path.join(VENV, w.file);
  if (!existsSync(wheel) || (await sha256File(wheel)) !== w.sha256) {
    const cached = path.join(modelsDir(), 'pip', w.file);
    try {
      if (existsSync(cached) && (await sha256File(cached)) === w.sha256) await copyFile(cached, wheel);
      else {
        await mkdir(VENV, { recursive: true });
        await run(path.join(VENV, 'bin/pip'), ['download', '-q', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '-d', VENV, `${w.name}==${w.version}`], { timeout: 600_000 });
      }
    } catch (err) {
      return { skip: `could not get ${w.name}==${w.version}: ${(err as Error).message.slice(0, 300)}` };
    }
    const got = await sha256File(wheel);
    if (got !== w.sha256) throw new Error(`${w.file} has SHA-256 ${got}, expected ${w.sha256}`);
  }
  return { python, wheel };
}
