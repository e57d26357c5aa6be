#!/usr/bin/env bash
# Runs the core benchmarks the way a deployment runs: bundled JavaScript on plain node (no tsx loader)
# with a generous initial old generation (see bin/gymwire.js for why), client and servers alike.
#   bash test/bench/run-built.sh [--only=NAME] [--quick]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.bench-build
build() { node_modules/.bin/esbuild "$1" --bundle --platform=node --format=esm --packages=external --outfile="$out/$2" --log-level=warning; }
build test/bench/core.bench.ts core.bench.mjs
build test/bench/server-process.ts server-process.mjs
export BENCH_SERVER="$out/server-process.mjs"
export BENCH_NODE_FLAGS="--initial-old-space-size=256"
exec node --initial-old-space-size=256 "$out/core.bench.mjs" "$@"
