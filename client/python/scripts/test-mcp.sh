#!/usr/bin/env bash
# The official MCP Python SDK against gymwire's /mcp and `gymwire mcp` stdio bridge, in both
# protocol revisions: builds client/python/.venv-mcp-2026 (mcp 2.3.0: 2026-07-28 and 2025-11-25)
# and client/python/.venv-mcp-2025 (mcp 1.30.0, the last 1.x: 2025-11-25) from PyPI (scripts/_venv.sh),
# then runs tests/mcp_suite.py in each. Extra arguments go to pytest. Exits non-zero on any failure,
# including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/_venv.sh
status=0
for revision in 2026 2025; do
  VENV=".venv-mcp-$revision"
  REQS="requirements-mcp-$revision.txt"
  install_mcp_requirements() {
    "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r "$REQS"
  }
  gymwire_venv "$VENV" "$(gymwire_stamp "$REQS")" install_mcp_requirements
  # No conftest: the suite imports only mcp (the SDK's conftest needs gymwire's own dependencies).
  gymwire_run_tests timeout 900 "$VENV/bin/python" -m pytest -q -p no:cacheprovider --noconftest --timeout 300 tests/mcp_suite.py "$@" || status=$?
done
exit "$status"
