#!/usr/bin/env bash
# Builds .device-carry/ for the world-model device check (scripts/device/world-model-bench.sh): what a
# GPU machine with python3, torch, numpy and msgpack but no Node, no node_modules, no gymnasium and no
# websockets needs, under 60 MiB:
#   node.xz                this machine's node binary, xz-compressed
#   server/gymwire.mjs     the gymwire command bundled with esbuild (sharp stubbed: never used there),
#   server/static/         with the viewer page it reads at start
#   whl/                   gymnasium, websockets and their small dependencies, for CPython 3.12 x86-64
# Usage: scripts/device/prepare-carry.sh [REPO]   (default: the repository holding this script)
# The folder is git-ignored through the repository's .git/info/exclude, so the device tool's
# `carry` list names it.
set -euo pipefail
REPO="$(cd "${1:-$(dirname "$0")/../..}" && pwd)"
cd "$REPO"
OUT=.device-carry
rm -rf "$OUT"
mkdir -p "$OUT/server" "$OUT/whl"

EXCLUDE="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF '/.device-carry/' "$EXCLUDE" 2>/dev/null || echo '/.device-carry/' >> "$EXCLUDE"

echo "carry: node $(node --version)" >&2
xz -T2 -6 -c "$(command -v node)" > "$OUT/node.xz"

echo "carry: bundling the server" >&2
node_modules/.bin/esbuild scripts/device/server-entry.ts --bundle --platform=node --format=esm --target=node20 \
  --outfile="$OUT/server/gymwire.mjs" --alias:sharp=./scripts/device/sharp-stub.mjs \
  --external:onnxruntime-node --external:bufferutil --external:utf-8-validate --external:uws \
  --banner:js="import { createRequire as __gwCreateRequire } from 'node:module'; const require = __gwCreateRequire(import.meta.url);" \
  --log-level=warning
# The viewer reads its page beside the code that serves it (new URL('./static/...', import.meta.url)).
cp -r server/viewer/static "$OUT/server/static"

echo "carry: wheels" >&2
PIP=(python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_17_x86_64 -d "$OUT/whl")
"${PIP[@]}" gymnasium==1.3.0 websockets==15.0.1 cloudpickle==3.1.1 farama-notifications==0.0.4 typing-extensions==4.15.0

du -sh "$OUT" "$OUT"/* >&2
total=$(du -sb "$OUT" | cut -f1)
if [ "$total" -ge $((60 * 1024 * 1024)) ]; then
  echo "carry: $OUT is $total bytes, over the 60 MiB the device tool takes" >&2
  exit 1
fi
echo "carry: $OUT ready ($total bytes)" >&2
