#!/usr/bin/env bash
# The official MCP Python SDK against gymwire's /mcp and `gymwire mcp` stdio bridge, in both
# protocol revisions: builds client/python/.venv-mcp-2026 (mcp 2.3.0: 2026-07-28 and 2025-11-25)
# and client/python/.venv-mcp-2025 (mcp 1.30.0, the last 1.x: 2025-11-25) from PyPI, then runs
# tests/mcp_suite.py in each. Extra arguments go to pytest. Exits non-zero on any failure,
# including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
status=0
for revision in 2026 2025; do
  VENV=".venv-mcp-$revision"
  REQS="requirements-mcp-$revision.txt"
  STAMP="$VENV/.requirements.sha256"
  want="$(sha256sum "$REQS" | cut -d' ' -f1)"
  if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
    echo "gymwire: creating client/python/$VENV from $REQS" >&2
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    echo '*' > "$VENV/.gitignore"
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQS"
    echo "$want" > "$STAMP"
  fi
  set +e
  # No conftest: the suite imports only mcp (the SDK's conftest needs gymwire's own dependencies).
  timeout 900 "$VENV/bin/python" -m pytest -q -p no:cacheprovider --noconftest --timeout 300 tests/mcp_suite.py "$@"
  rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then
    echo "gymwire: pytest collected no tests in $VENV; treating that as a failure" >&2
    rc=1
  fi
  [ "$rc" -eq 0 ] || status=$rc
done
exit "$status"
