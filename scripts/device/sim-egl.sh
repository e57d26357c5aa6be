#!/usr/bin/env bash
# The simulators' device check (issue 36), for a session lent a GPU: renders the same seeded robosuite
# Lift and Meta-World reach episodes with EGL (on the GPU) and with OSMesa (software), prints the
# steps/s of each and how far their frames are apart (PSNR, largest pixel difference). Both run with
# render_effects off, so the two backends draw the same scene. JSON lines on stdout and in
# $OUT/sim-egl.jsonl. About 3 minutes once the venv exists; every phase has a time limit.
#
# The device machine reaches no registry: it needs a Python with the SDK's robosuite and metaworld
# extras (GYMWIRE_SIM_PYTHON), e.g. a venv built from wheels carried with the run (pip download
# -d whl -r client/python/requirements-sim.txt on this side; mind the carry limit of 64 MiB: robosuite's
# wheel holds its meshes) and libosmesa6 for the software side (without it only EGL is recorded).
#   scripts/device/sim-egl.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/sim-egl-out}"
mkdir -p "$OUT"
PY="${GYMWIRE_SIM_PYTHON:-python3}"
export PYTHONPATH="$PWD/client/python/src${PYTHONPATH:+:$PYTHONPATH}"
timeout 30 nvidia-smi -L >&2 || echo "no nvidia-smi: EGL will render in software" >&2

MUJOCO_GL=egl PYOPENGL_PLATFORM=egl timeout 240 "$PY" scripts/device/sim_render_check.py record "$OUT/egl.npz" | tee -a "$OUT/sim-egl.jsonl"
if ldconfig -p | grep -q libOSMesa; then
  MUJOCO_GL=osmesa PYOPENGL_PLATFORM=osmesa timeout 240 "$PY" scripts/device/sim_render_check.py record "$OUT/osmesa.npz" | tee -a "$OUT/sim-egl.jsonl"
  timeout 60 "$PY" scripts/device/sim_render_check.py compare "$OUT/egl.npz" "$OUT/osmesa.npz" | tee -a "$OUT/sim-egl.jsonl"
else
  echo "no libOSMesa here: only the EGL frames were recorded" >&2
fi
