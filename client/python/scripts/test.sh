#!/usr/bin/env bash
# Runs the Python SDK's tests. On first run (or when the pinned requirements change) it creates
# client/python/.venv with the exact versions in requirements-test.txt; only PyPI is needed.
# Extra arguments go to pytest. Exits non-zero on any failure, including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/_venv.sh
install_test_requirements() {
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r requirements-test.txt
}
gymwire_venv .venv "$(gymwire_stamp requirements-test.txt pyproject.toml)" install_test_requirements
# --venv-only: make the venv (scripts/format.mjs takes ruff from it) and run nothing.
[ "${1:-}" = "--venv-only" ] && exit 0

gymwire_run_tests .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
# The sync Client has two transports; the pass above used the default (the socket fast path, or
# what GYMWIRE_TRANSPORT says). Unless GYMWIRE_TRANSPORT was set, run the tests again on the asyncio
# fallback, less those whose clients run in subprocesses (their own transport) or that choose a
# transport themselves (test_transport.py covers both).
[ -n "${GYMWIRE_TRANSPORT:-}" ] && exit 0
echo "gymwire: again on the asyncio transport (GYMWIRE_TRANSPORT=asyncio)" >&2
set +e
GYMWIRE_TRANSPORT=asyncio .venv/bin/python -m pytest -q -p no:cacheprovider \
  --ignore=tests/test_wheel.py --ignore=tests/test_examples.py --ignore=tests/test_cross_language.py --ignore=tests/test_transport.py \
  --deselect=tests/test_hosted.py::test_gymwire_check_passes_on_hosted_envs "$@"
rc=$?
set -e
# Nothing left to run on the fallback (only subprocess tests were asked for) is not a failure.
[ "$rc" -eq 5 ] && exit 0
exit "$rc"
