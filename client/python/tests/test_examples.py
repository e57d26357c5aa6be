"""Every Python example runs against the live server and passes its own check."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from conftest import REPO

EXAMPLES = {
    "quickstart.py": [],
    "gpu_inference.py": ["--episodes", "16", "--num-envs", "8"],
    "waypoint_driving.py": ["--steps", "120"],
    "vla_driving.py": ["--steps", "80"],
}


# Examples that need a framework run in that framework's venv (tests/frameworks/, scripts/test-frameworks.sh).
FRAMEWORK_EXAMPLES = {"rlinf_env.py": "RLinf", "areal_workflow.py": "AReaL", "siirl_libero.py": "siiRL", "verl_vla.py": "verl", "verl_tools.py": "verl"}
# Examples that need torch run in the torch venv (scripts/test-torch.sh) and fail loudly without it.
TORCH_EXAMPLES = {"vla_torch_onnx.py": []}


def test_every_example_is_listed() -> None:
    found = {p.name for p in (REPO / "examples" / "python").glob("*.py") if not p.name.startswith("_")}
    assert found == set(EXAMPLES) | set(FRAMEWORK_EXAMPLES) | set(TORCH_EXAMPLES)


def run_example(url: str, name: str, *args: str, timeout: float = 110) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / name), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "GYMWIRE_URL": url},
    )


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(url: str, name: str) -> None:
    out = run_example(url, name, *EXAMPLES[name])
    assert out.returncode == 0, f"{name} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"


@pytest.mark.parametrize("name", sorted(FRAMEWORK_EXAMPLES))
def test_framework_example_fails_loudly_without_its_framework(url: str, name: str) -> None:
    out = run_example(url, name)
    assert out.returncode == 1, f"{name} should exit 1 without {FRAMEWORK_EXAMPLES[name]}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    assert f"FAILED: {FRAMEWORK_EXAMPLES[name]} is not installed" in out.stderr


@pytest.mark.torch
# The example trains nothing but collects, exports and rolls out twice: ~50 s on a quiet 2-core machine,
# ~120 s under load, past pytest-timeout's default of 120 s (pyproject.toml).
@pytest.mark.timeout(360)
@pytest.mark.parametrize("name", sorted(TORCH_EXAMPLES))
def test_torch_example_runs(url: str, name: str) -> None:
    pytest.importorskip("torch", reason="torch is not installed in this venv: client/python/scripts/test-torch.sh runs the torch examples")
    out = run_example(url, name, *TORCH_EXAMPLES[name], timeout=300)
    assert out.returncode == 0, f"{name} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"


@pytest.mark.parametrize("name", sorted(TORCH_EXAMPLES))
def test_torch_example_fails_loudly_without_torch(url: str, name: str) -> None:
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: test_torch_example_runs runs the example")
    out = run_example(url, name)
    assert out.returncode == 1 and "FAILED: torch is not installed" in out.stderr, out.stderr[-2000:]
