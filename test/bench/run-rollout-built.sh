#!/usr/bin/env bash
# The rollout benchmark bundled on plain node, as test/bench/run-built.sh runs the core one: client
# and server without the tsx loader, with the ONNX policy's worker next to the bundle.
#   bash test/bench/run-rollout-built.sh [--only=mlp64,mlp64x2] [--quick]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.bench-build/rollout
mkdir -p "$out"
build() { node_modules/.bin/esbuild "$1" --bundle --platform=node --format=esm --packages=external --outfile="$out/$2" --log-level=warning; }
build test/bench/rollout.bench.ts rollout.bench.mjs
build test/bench/server-process.ts server-process.mjs
cp client/ts/policies/onnx-worker.mjs "$out/"
export BENCH_SERVER="$out/server-process.mjs"
export BENCH_NODE_FLAGS="--initial-old-space-size=256"
exec node --initial-old-space-size=256 "$out/rollout.bench.mjs" "$@"
