#!/usr/bin/env bash
# Runs the dataset-format tests (tests/datasets_suite.py): what gymwire writes as LeRobot and Minari
# datasets, loaded by the real lerobot and minari packages, and `gymwire rollout --format`. Their
# venv (client/python/.venv-datasets) holds the pinned test requirements plus
# requirements-datasets.txt, layered over the shared torch base (scripts/_venv.sh; LeRobot imports
# torch), with LeRobot itself installed without its declared dependencies (the pin is in
# below). Only PyPI is needed. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/_venv.sh
LEROBOT_PIN="lerobot==0.4.4"
# Of requirements-test.txt, only the SDK's own dependencies and pytest, at its pins (gymnasium without
# the MuJoCo and pygame extras, no ONNX): the suite runs nothing else, and each of those costs install time.
sdk_test_pins() {
  grep -E '^(gymnasium|numpy|msgpack|websockets|pytest|pytest-timeout|pyarrow|tqdm)(\[[^]]*\])?==' requirements-test.txt | sed -E 's/\[[^]]*\]//'
}
install_dataset_requirements() {
  gymwire_over_torch "$1"
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r <(sdk_test_pins) -r requirements-datasets.txt
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" --no-deps "$LEROBOT_PIN"
}
gymwire_check_torch_pin requirements-datasets.txt
gymwire_torch_base
gymwire_venv .venv-datasets "$(gymwire_stamp requirements-test.txt requirements-datasets.txt pyproject.toml -- "$LEROBOT_PIN" "$GYMWIRE_TORCH_SITE")" install_dataset_requirements
start=$SECONDS
rc=0
GYMWIRE_PYTHON="$PWD/.venv-datasets/bin/python" gymwire_run_tests .venv-datasets/bin/python -m pytest -q -p no:cacheprovider tests/datasets_suite.py "$@" || rc=$?
echo "gymwire: dataset suite took $((SECONDS - start)) s (pytest exit $rc)" >&2
exit "$rc"
