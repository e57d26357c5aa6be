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
exit "$rc"
