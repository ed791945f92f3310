// Installs the local engines' model files (media/services/model-files.ts) into .data/models: by default the STT
// (Whisper tiny.en), TTS (Piper voice) and end-of-turn (Smart Turn v3.2) models; `--llm` adds the opt-in 491 MB language model (Qwen2.5 0.5B);
// `--only-llm` installs just that. Run by scripts/setup.sh (`npm run setup:llm` for --llm) or directly:
//   node_modules/.bin/node --import tsx scripts/install-models.ts [--llm | --only-llm]
// Prints what it installed, the MB and the time it took. Exit code 1 when a model could not be installed.
import { MODELS, installModel, modelsDir, type ModelId } from '../media/services/model-files.ts';

const args = process.argv.slice(2);
const quiet = args.includes('--quiet');
const ids = (Object.keys(MODELS) as ModelId[]).filter((id) => (args.includes('--only-llm') ? MODELS[id].family === 'llm' : !MODELS[id].optIn || args.includes('--llm')));
const log = (s: string) => {
  if (!quiet) process.stderr.write(`[setup] ${s}\n`);
};
let failed = false;
for (const id of ids) {
  const t0 = Date.now();
  try {
    const bytes = await installModel(id, { log, python: process.env.MODELS_PYTHON ?? 'python3' });
    log(`${id}: ready in ${modelsDir()} (${(bytes / 1e6).toFixed(0)} MB, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    failed = true;
    process.stderr.write(`[setup] ${id}: not installed: ${(err as Error).message}\n`);
  }
}
process.exitCode = failed ? 1 : 0;
