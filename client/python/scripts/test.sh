#!/usr/bin/env bash
# Runs the Python SDK's tests. On first run (or when the pinned requirements change) it creates
# client/python/.venv with the exact versions in requirements-test.txt; only PyPI is needed.
# Extra arguments go to pytest. Exits non-zero on any failure, including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
STAMP=.venv/.requirements.sha256
want="$(cat requirements-test.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  echo "gymwire: creating client/python/.venv with pinned test dependencies" >&2
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --disable-pip-version-check -q -r requirements-test.txt
  # The SDK's source on the venv's path (like an editable install, without building anything),
  # so examples and benchmarks run with this venv's python.
  .venv/bin/python -c 'import site, sys; open(site.getsitepackages()[0] + "/gymwire-src.pth", "w").write(sys.argv[1] + "\n")' "$PWD/src"
  echo "$want" > "$STAMP"
fi
# --venv-only: make the venv (scripts/format.mjs takes ruff from it) and run nothing.
[ "${1:-}" = "--venv-only" ] && exit 0

set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "gymwire: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
[ "$rc" -ne 0 ] && exit "$rc"
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
