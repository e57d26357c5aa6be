# shellcheck shell=bash
# Sourced by the scripts beside it (run from client/python): one way to build a pinned venv, kept
# until its inputs change, and one shared torch base that the torch-hungry venvs are layered over.
#
# A venv is rebuilt from scratch when its stamp (a sha256 of what went into it) differs; the SDK's
# source goes on its path through a .pth file, like an editable install without building anything.
#
# The torch base: PyPI has no CPU-only torch wheel for linux x86_64, so torch brings its CUDA
# libraries (about 4 GB to download, 7 GB installed). It is installed once, into a base venv (.venvs-frameworks/_torch,
# or the venv that GYMWIRE_TORCH_BASE names), and every venv that needs torch gets a .pth file that
# appends the base's site-packages to its sys.path. pip then sees torch (and its dependencies) as
# installed and leaves them alone. The venv's own site-packages come first on sys.path, so a package
# that a venv pins at another version than the base has is installed into the venv and wins there.

PYTHON="${PYTHON:-python3}"
# --no-compile: pip would byte-compile every file it installs (about a third of the install time of
# the large framework wheels on a 2-core machine); Python compiles only what is imported, on first import.
PIP_INSTALL_FLAGS=(--disable-pip-version-check -q --no-compile)

# gymwire_stamp FILE... [-- TEXT...]: the sha256 of the files' contents, then of any extra text.
gymwire_stamp() {
  local files=() extra=()
  while [ "$#" -gt 0 ]; do
    if [ "$1" = "--" ]; then
      shift
      extra=("$@")
      break
    fi
    files+=("$1")
    shift
  done
  { cat "${files[@]}"; [ "${#extra[@]}" -eq 0 ] || printf '%s\n' "${extra[@]}"; } | sha256sum | cut -d' ' -f1
}

# gymwire_site VENV: the venv's site-packages folder.
gymwire_site() {
  "$1/bin/python" -c 'import site; print(site.getsitepackages()[0])'
}

# gymwire_pth VENV NAME PATH: puts PATH on the venv's sys.path (after its own site-packages).
gymwire_pth() {
  echo "$3" > "$(gymwire_site "$1")/$2.pth"
}

# gymwire_venv VENV STAMP BUILD...: (re)creates VENV unless its stamp file holds STAMP, then runs
# BUILD... with VENV appended (the command installs what the venv needs). The SDK source is on the
# path already. Prints how long the build took and the venv's size.
gymwire_venv() {
  local venv="$1" want="$2"
  shift 2
  local stamp="$venv/.requirements.sha256"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ]; then
    return 0
  fi
  echo "gymwire: building client/python/$venv" >&2
  local start=$SECONDS
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  echo '*' > "$venv/.gitignore"
  gymwire_pth "$venv" gymwire-src "$PWD/src"
  "$@" "$venv"
  echo "$want" > "$stamp"
  echo "gymwire: client/python/$venv built in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))" >&2
}

# gymwire_torch_base: sets GYMWIRE_TORCH_SITE to the site-packages of a venv holding the torch that
# requirements-torch.txt pins, building .venvs-frameworks/_torch first unless GYMWIRE_TORCH_BASE
# names an existing one (checked: same Python minor version, same torch version).
gymwire_torch_base() {
  local pin want_version base
  pin="$(grep -E '^torch==' requirements-torch.txt)"
  want_version="${pin#torch==}"
  if [ -n "${GYMWIRE_TORCH_BASE:-}" ]; then
    base="$GYMWIRE_TORCH_BASE"
    if [ ! -x "$base/bin/python" ]; then
      echo "gymwire: GYMWIRE_TORCH_BASE=$base has no bin/python; it must name a venv with $pin" >&2
      return 2
    fi
  else
    mkdir -p .venvs-frameworks
    [ -f .venvs-frameworks/.gitignore ] || echo '*' > .venvs-frameworks/.gitignore
    base="$PWD/.venvs-frameworks/_torch"
    gymwire_venv .venvs-frameworks/_torch "$(gymwire_stamp requirements-torch.txt)" _gymwire_install_torch
  fi
  local found
  found="$("$base/bin/python" -c 'import sys, importlib.metadata as m; print("%d.%d" % sys.version_info[:2], m.version("torch"))' 2>/dev/null || true)"
  local mine
  mine="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if [ "$found" != "$mine $want_version" ]; then
    echo "gymwire: the torch base $base has python+torch '${found:-none}', not '$mine $want_version' ($PYTHON, requirements-torch.txt)" >&2
    return 2
  fi
  GYMWIRE_TORCH_SITE="$(gymwire_site "$base")"
}

_gymwire_install_torch() {
  "$1/bin/python" -m pip install "${PIP_INSTALL_FLAGS[@]}" -r requirements-torch.txt
  # The base is a library folder for other venvs: nothing of the SDK goes in it.
  rm -f "$(gymwire_site "$1")/gymwire-src.pth"
}

# gymwire_over_torch VENV: layers VENV over the torch base (call gymwire_torch_base first).
gymwire_over_torch() {
  gymwire_pth "$1" gymwire-torch-base "$GYMWIRE_TORCH_SITE"
}

# gymwire_check_torch_pin FILE: a requirements file that pins torch must pin the base's version
# (another pin would install a second 4 GB torch into that venv).
gymwire_check_torch_pin() {
  local theirs ours
  theirs="$(grep -E '^torch==' "$1" || true)"
  ours="$(grep -E '^torch==' requirements-torch.txt)"
  if [ -n "$theirs" ] && [ "$theirs" != "$ours" ]; then
    echo "gymwire: $1 pins $theirs but the shared torch base has $ours (requirements-torch.txt); pin the same" >&2
    return 2
  fi
}

# gymwire_run_tests COMMAND...: runs a pytest command and returns its exit code, except that
# pytest's "no tests collected" (5) is a failure (1): a suite that ran nothing must not pass.
gymwire_run_tests() {
  local rc=0
  "$@" || rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "gymwire: pytest collected no tests; treating that as a failure" >&2
    return 1
  fi
  return "$rc"
}
