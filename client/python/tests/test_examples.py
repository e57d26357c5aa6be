"""Every Python example runs against the live server and passes its own check."""

from __future__ import annotations

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
    "areal_workflow.py": [],
    "verl_vla.py": [],
    "siirl_libero.py": [],
}


# Examples that need a framework run in that framework's venv (tests/frameworks/, scripts/test-frameworks.sh).
FRAMEWORK_EXAMPLES = {"rlinf_env.py"}


def test_every_example_is_listed() -> None:
    found = {p.name for p in (REPO / "examples" / "python").glob("*.py") if not p.name.startswith("_")}
    assert found == set(EXAMPLES) | FRAMEWORK_EXAMPLES


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(url: str, name: str) -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / name), *EXAMPLES[name]],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=110,
        env={**os.environ, "GYMWIRE_URL": url},
    )
    assert out.returncode == 0, f"{name} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
