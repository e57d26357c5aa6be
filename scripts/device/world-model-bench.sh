#!/usr/bin/env bash
# The world-model device check (issue 38): gymwire/TorchWorldModel-v0 with a ~22M-parameter model on
# 128x128 frames, env-steps/s for 1, 8, 32 and 128 sessions over 4 client processes, batched against
# one by one, GPU memory, and how far batched results are from one-by-one ones. JSON lines on stdout
# and in $OUT/world-model-bench.jsonl. About 4 minutes on one H100/H200; every phase has a time limit.
#
# Needs .device-carry/ (scripts/device/prepare-carry.sh): Node, the bundled server and the wheels
# that machine lacks. Uses the machine's python3 (torch, numpy, msgpack) unless GYMWIRE_BENCH_PYTHON.
#   scripts/device/world-model-bench.sh              on the GPU
#   scripts/device/world-model-bench.sh --cpu-smoke  the same steps with a tiny model on the CPU (a dry run)
#   scripts/device/world-model-bench.sh --cpu        a small model on the CPU (the docs' CPU figures)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/world-model-bench-out}"
mkdir -p "$OUT"
MODE=()
case "${1:-}" in
  --cpu-smoke | --cpu) MODE=("$1"); shift ;;
  '' | --*) ;;
  *) echo "usage: $0 [--cpu-smoke | --cpu] [world_model_bench.py options: --sessions 1,8 --measure 8 ...]" >&2; exit 2 ;;
esac
PY="${GYMWIRE_BENCH_PYTHON:-python3}"
CARRY=.device-carry
WORK="$(mktemp -d /tmp/gymwire-bench.XXXXXX)"
SITE="$WORK/site"
NODE="$WORK/node"
phase() { echo "== $1 ($(date -u +%H:%M:%S))" >&2; }

phase "machine"
if [ ${#MODE[@]} -eq 0 ]; then
  timeout 30 nvidia-smi
else
  timeout 30 nvidia-smi 2>/dev/null || echo "no nvidia-smi (a CPU run)" >&2
fi
"$PY" --version >&2
[ -d "$CARRY" ] || { echo "no $CARRY here: run scripts/device/prepare-carry.sh and carry it" >&2; exit 1; }

phase "unpack"
timeout 60 xz -d -c "$CARRY/node.xz" > "$NODE"
chmod +x "$NODE"
echo "node $("$NODE" --version)" >&2
mkdir -p "$SITE"
# A wheel is a zip laid out for site-packages: extracting it is installing it (no pip needed). Only
# what the machine's python lacks goes in, so its own typing_extensions and friends stay in charge.
for wheel in "$CARRY"/whl/*.whl; do
  module="$(basename "$wheel" | cut -d- -f1 | tr 'A-Z' 'a-z')"
  if ! "$PY" -c "import $module" 2>/dev/null; then
    timeout 60 "$PY" -m zipfile -e "$wheel" "$SITE"
  fi
done
export PYTHONPATH="$SITE:$PWD/client/python/src${PYTHONPATH:+:$PYTHONPATH}"
export GYMWIRE_PYTHON="$PY"
timeout 120 "$PY" -c "import gymnasium, websockets, numpy, msgpack, torch, gymwire.worldmodel; print('python ok: torch', torch.__version__, 'cuda', torch.cuda.is_available())" >&2

phase "bench"
timeout 420 "$PY" scripts/device/world_model_bench.py --node "$NODE" --server-js "$CARRY/server/gymwire.mjs" --out "$OUT" ${MODE[@]+"${MODE[@]}"} "$@"
phase "done"
rm -rf "$WORK"
