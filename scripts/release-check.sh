#!/usr/bin/env bash
# Builds and checks both packages as a release would, publishing nothing (RELEASING.md):
# `npm publish --dry-run`, then the Python wheel and sdist with `python -m build` and `twine check`.
set -euo pipefail
cd "$(dirname "$0")/.."

npm publish --dry-run --ignore-scripts=false >/dev/null 2>/tmp/gymwire-publish-dry-run.log || {
  cat /tmp/gymwire-publish-dry-run.log >&2
  exit 1
}
grep -E "total files|package size|unpacked size" /tmp/gymwire-publish-dry-run.log | sed 's/^npm notice /npm: /' >&2

cd client/python
. scripts/_venv.sh
install_release_tools() {
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r requirements-release.txt
}
gymwire_venv .venv-release "$(gymwire_stamp requirements-release.txt)" install_release_tools
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
.venv-release/bin/python -m build --outdir "$out" . >/dev/null
.venv-release/bin/python -m twine check --strict "$out"/*
echo "gymwire: release check passed ($(cd "$out" && ls | tr '\n' ' '))" >&2
