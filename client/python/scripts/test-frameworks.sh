#!/usr/bin/env bash
# Builds one venv per framework (client/python/.venvs-frameworks/<name>) and runs that framework's
# tests (tests/frameworks/<name>_suite.py) against a live gymwire server. Only PyPI is needed. The
# suites are named outside pytest's test_*.py pattern so the SDK's own run (scripts/test.sh, whose
# venv has no frameworks) never collects them.
#
# The framework itself is pinned in requirements-frameworks.txt and installed without its declared
# dependencies (their full lists pull GPU-only packages such as vLLM, and pip's resolver does not
# settle on them); requirements-frameworks-<name>.txt pins what the framework's tested code paths
# import. Every framework venv is layered over one shared torch base (scripts/_venv.sh): torch and
# its CUDA libraries (about 4 GB; unused, no GPU is needed) are installed once, not once per
# framework. GYMWIRE_TORCH_BASE=/path/to/venv reuses an existing base instead of building one.
#
# Usage: test-frameworks.sh [--build-only] [name ...]
#   default names, in this order: rlinf areal siirl verl (every framework with a requirements file)
#   --build-only: build (or check) the venvs and run no tests
# Exits non-zero on any failure, including a framework that fails to install or import.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/_venv.sh
DEFAULT_ORDER=(rlinf areal siirl verl)

build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
if [ "$#" -gt 0 ]; then
  frameworks=("$@")
else
  frameworks=("${DEFAULT_ORDER[@]}")
  for f in requirements-frameworks-*.txt; do
    name="${f#requirements-frameworks-}"
    name="${name%.txt}"
    [[ " ${frameworks[*]} " == *" $name "* ]] || frameworks+=("$name")
  done
fi

install_framework() {
  local venv="$1"
  gymwire_over_torch "$venv"
  "$venv/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r "$reqs"
  "$venv/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" --no-deps "$pin"
}

for fw in "${frameworks[@]}"; do
  reqs="requirements-frameworks-$fw.txt"
  pin="$(grep -E "^${fw}==" requirements-frameworks.txt || true)"
  if [ ! -f "$reqs" ] || [ -z "$pin" ]; then
    echo "gymwire: no $reqs or no '$fw==' pin in requirements-frameworks.txt" >&2
    exit 2
  fi
  gymwire_check_torch_pin "$reqs"
done

gymwire_torch_base
failed=()
for fw in "${frameworks[@]}"; do
  reqs="requirements-frameworks-$fw.txt"
  pin="$(grep -E "^${fw}==" requirements-frameworks.txt)"
  venv=".venvs-frameworks/$fw"
  want="$(gymwire_stamp "$reqs" requirements-torch.txt pyproject.toml -- "$pin" "$GYMWIRE_TORCH_SITE")"
  set +e
  # A subshell, not an `if`: errexit must stay on inside the build so a failed pip stops it.
  (set -e; gymwire_venv "$venv" "$want" install_framework)
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "gymwire: the $fw venv failed to build (exit $rc)" >&2
    failed+=("$fw")
    continue
  fi
  [ "$build_only" -eq 1 ] && continue
  echo "gymwire: testing $pin" >&2
  start=$SECONDS
  rc=0
  gymwire_run_tests "$venv/bin/python" -m pytest -q -p no:cacheprovider "tests/frameworks/${fw}_suite.py" || rc=$?
  echo "gymwire: $fw suite took $((SECONDS - start)) s (pytest exit $rc)" >&2
  if [ "$rc" -ne 0 ]; then
    failed+=("$fw")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "gymwire: framework venvs or tests failed for: ${failed[*]}" >&2
  exit 1
fi
