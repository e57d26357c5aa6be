#!/usr/bin/env bash
# Runs the torch-marked Python tests (gymwire.vla's TorchModel) in client/python/.venv-torch: the
# pinned test requirements, layered over the shared torch base (scripts/_venv.sh: built once from
# requirements-torch.txt, or the venv GYMWIRE_TORCH_BASE names). The default run (scripts/test.sh)
# has no torch and skips them, saying so. Only PyPI is needed. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/_venv.sh
install_torch_test_requirements() {
  gymwire_over_torch "$1"
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r requirements-test.txt -r requirements-torch.txt
}
gymwire_torch_base
gymwire_venv .venv-torch "$(gymwire_stamp requirements-test.txt requirements-torch.txt pyproject.toml -- "$GYMWIRE_TORCH_SITE")" install_torch_test_requirements
gymwire_run_tests .venv-torch/bin/python -m pytest -q -p no:cacheprovider -m torch "$@"
