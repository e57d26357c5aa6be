"""The wheel as a user installs it: built from client/python, installed into a fresh venv (its
dependencies from PyPI), imported there and used against the live server through Gymnasium."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

PYTHON_PKG = Path(__file__).resolve().parents[1]
REPO = PYTHON_PKG.parents[1]

USE_IT = """
import json, sys
from importlib import metadata, resources
import gymnasium as gym
import gymwire
env = gym.make("gymwire/CartPole-v1", url=sys.argv[1])
obs, _ = env.reset(seed=0)
_, reward, *_ = env.step(0)
env.close()
print(json.dumps({
    "file": gymwire.__file__,
    "version": gymwire.__version__,
    "dist_version": metadata.version("gymwire"),
    "typed": resources.files("gymwire").joinpath("py.typed").is_file(),
    "spec": env.spec.id,
    "reward": float(reward),
    "obs": len(obs),
}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", str(out), str(PYTHON_PKG)],
        check=True,
        timeout=300,
    )
    (built,) = out.glob("gymwire-*.whl")
    return built


def test_the_wheel_carries_types_licence_and_metadata(wheel: Path) -> None:
    version = json.loads((REPO / "package.json").read_text())["version"]
    assert wheel.name.startswith(f"gymwire-{version}-py3-none-any")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "gymwire/py.typed" in names
        assert "gymwire/registration.py" in names
        meta = zf.read(f"gymwire-{version}.dist-info/METADATA").decode()
        licence = zf.read(f"gymwire-{version}.dist-info/licenses/LICENSE").decode()
    assert "License-Expression: Apache-2.0" in meta
    assert "License-File: LICENSE" in meta
    # The project has no public home yet: no placeholder URLs that would lead users elsewhere.
    assert "Project-URL" not in meta and "Home-page" not in meta
    assert "Provides-Extra: inference" in meta and 'Requires-Dist: onnx>=1.15; extra == "inference"' in meta
    assert "Description-Content-Type: text/markdown" in meta
    assert licence == (REPO / "LICENSE").read_text()


@pytest.mark.timeout(600)
def test_the_wheel_installs_into_a_fresh_venv_and_serves_gymnasium_make(wheel: Path, url: str, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)], check=True, timeout=540)
    # Run outside the source tree, so nothing but the installed wheel can be imported.
    done = subprocess.run([python, "-c", USE_IT, url], check=True, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    got = json.loads(done.stdout)
    assert got["file"].startswith(str(env_dir))
    assert got["version"] == got["dist_version"] == json.loads((REPO / "package.json").read_text())["version"]
    assert got == {**got, "typed": True, "spec": "gymwire/CartPole-v1", "reward": 1.0, "obs": 4}
