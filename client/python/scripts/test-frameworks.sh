#!/usr/bin/env bash
# Builds one venv per framework (client/python/.venvs-frameworks/<name>) and runs that framework's
# tests (tests/frameworks/<name>_suite.py) against a live gymwire server. Only PyPI is needed. The
# suites are named outside pytest's test_*.py pattern so the SDK's own run (scripts/test.sh, whose
# venv has no frameworks) never collects them.
#
# The framework itself is pinned in requirements-frameworks.txt and installed without its declared
# dependencies (their full lists pull GPU-only packages such as vLLM, and pip's resolver does not
# settle on them); requirements-frameworks-<name>.txt pins what the framework's tested code paths
# import, torch included. PyPI has no CPU-only torch wheel for linux x86_64, so torch comes with its
# CUDA libraries (about 4 GB; unused, no GPU is needed).
#
# Usage: test-frameworks.sh [name ...]   (default: every framework with a requirements file)
# Exits non-zero on any failure, including a framework that fails to install or import.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
ROOT=.venvs-frameworks
mkdir -p "$ROOT"
[ -f "$ROOT/.gitignore" ] || echo '*' > "$ROOT/.gitignore"

if [ "$#" -gt 0 ]; then
  frameworks=("$@")
else
  frameworks=()
  for f in requirements-frameworks-*.txt; do
    name="${f#requirements-frameworks-}"
    frameworks+=("${name%.txt}")
  done
fi

failed=()
for fw in "${frameworks[@]}"; do
  reqs="requirements-frameworks-$fw.txt"
  pin="$(grep -E "^${fw}==" requirements-frameworks.txt || true)"
  if [ ! -f "$reqs" ] || [ -z "$pin" ]; then
    echo "gymwire: no $reqs or no '$fw==' pin in requirements-frameworks.txt" >&2
    exit 2
  fi
  venv="$ROOT/$fw"
  stamp="$venv/.requirements.sha256"
  want="$( (cat "$reqs"; echo "$pin"; cat pyproject.toml) | sha256sum | cut -d' ' -f1)"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "gymwire: building $venv ($pin)" >&2
    start=$SECONDS
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$reqs"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps "$pin"
    "$venv/bin/python" -c 'import site, sys; open(site.getsitepackages()[0] + "/gymwire-src.pth", "w").write(sys.argv[1] + "\n")' "$PWD/src"
    echo "$want" > "$stamp"
    echo "gymwire: $venv built in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))" >&2
  fi
  echo "gymwire: testing $pin" >&2
  set +e
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "tests/frameworks/${fw}_suite.py"
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "gymwire: $fw framework tests failed (pytest exit $rc)" >&2
    failed+=("$fw")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "gymwire: framework tests failed for: ${failed[*]}" >&2
  exit 1
fi
