#!/usr/bin/env bash
# Runs the Python SDK's tests. On first run (or when the pinned requirements change) it creates
# client/python/.venv with the exact versions in requirements-test.txt; only PyPI is needed.
# Extra arguments go to pytest. Exits non-zero on any failure, including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
STAMP=.venv/.requirements.sha256
want="$(cat requirements-test.txt | sha256sum | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  echo "gymwire: creating client/python/.venv with pinned test dependencies" >&2
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --disable-pip-version-check -q -r requirements-test.txt
  echo "$want" > "$STAMP"
fi

set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "gymwire: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
exit "$rc"
