#!/usr/bin/env bash
# Runs the torch-marked Python tests (gymwire.vla's TorchModel) in client/python/.venv-torch: the
# pinned test requirements plus requirements-torch.txt. The default run (scripts/test.sh) has no
# torch and skips them, saying so. Only PyPI is needed. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-torch
STAMP="$VENV/.requirements.sha256"
want="$(cat requirements-test.txt requirements-torch.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  echo "gymwire: creating client/python/$VENV with the test requirements and torch" >&2
  "$PYTHON" -m venv "$VENV"
  echo '*' > "$VENV/.gitignore"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r requirements-test.txt -r requirements-torch.txt
  "$VENV/bin/python" -c 'import site, sys; open(site.getsitepackages()[0] + "/gymwire-src.pth", "w").write(sys.argv[1] + "\n")' "$PWD/src"
  echo "$want" > "$STAMP"
fi
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -m torch "$@"
