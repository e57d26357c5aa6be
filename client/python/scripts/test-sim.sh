#!/usr/bin/env bash
# Runs the embodied-simulator suites (robosuite, Meta-World, LIBERO's missing-assets message) on the
# CPU in client/python/.venv-sim: the SDK's robosuite and metaworld extras installed as a user
# would (pip install ".[robosuite,metaworld,compare]"), pinned by requirements-sim.txt, and MuJoCo rendering
# through OSMesa (Debian's libosmesa6, installed here if missing). Only PyPI and Debian are needed.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ldconfig -p 2>/dev/null | grep -q libOSMesa; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libosmesa6 >/dev/null) || echo "warning: could not install libosmesa6; MuJoCo falls back to EGL" >&2
  fi
fi

. scripts/_venv.sh
install_sim_requirements() {
  # The extras as users install them, held to the pins; then the installed copy of the SDK goes, so
  # the .pth file's checkout source is what runs.
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -c requirements-sim.txt ".[robosuite,metaworld,compare]" pytest pytest-timeout
  "$1/bin/python" -m pip uninstall -y -q gymwire
}
gymwire_venv .venv-sim "$(gymwire_stamp requirements-sim.txt pyproject.toml)" install_sim_requirements

export MUJOCO_GL="${MUJOCO_GL:-osmesa}" PYOPENGL_PLATFORM="${PYOPENGL_PLATFORM:-${MUJOCO_GL:-osmesa}}"
export GYMWIRE_PYTHON="$PWD/.venv-sim/bin/python"
gymwire_run_tests .venv-sim/bin/python -m pytest -q -p no:cacheprovider tests/test_sim.py tests/test_sim_compare.py "$@"
