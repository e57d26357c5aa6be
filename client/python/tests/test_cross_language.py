"""Same seeds give identical observations and rewards through the TypeScript and the Python client."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from conftest import REPO

import gymwire

# Mirrors tests/ts/rollout.ts.
CARTPOLE_SEEDS = [0, 42, 1234]
CONFORMANCE_SEED = 3
MAX_STEPS = 60


def cartpole_action(seed: int, t: int) -> int:
    return 1 if (t * 7 + seed) % 3 == 0 else 0


def conformance_action(t: int) -> np.ndarray:
    return np.array([0.1 * ((t % 5) - 2), 0.05], dtype=np.float32)


def _ts_rollouts(url: str) -> dict:
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    if not tsx.exists():
        pytest.fail("node_modules/.bin/tsx is missing: run npm ci at the repository root")
    node = shutil.which("node")
    assert node is not None
    out = subprocess.run([str(tsx), str(REPO / "client/python/tests/ts/rollout.ts"), url], cwd=REPO, capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_python_and_typescript_clients_see_identical_episodes(url: str) -> None:
    ts = _ts_rollouts(url)
    with gymwire.Client(url) as client:
        cart = client.make("gymwire/CartPole-v1")
        for ep in ts["cartpole"]:
            seed = ep["seed"]
            obs, _ = cart.reset(seed=seed)
            assert [float(x) for x in obs] == ep["obs"][0]
            for t in range(len(ep["rewards"])):
                obs, reward, terminated, truncated, _ = cart.step(cartpole_action(seed, t))
                assert [float(x) for x in obs] == ep["obs"][t + 1], f"seed {seed} step {t}"
                assert (reward, terminated, truncated) == (ep["rewards"][t], ep["terminated"][t], ep["truncated"][t])
        conf = client.make("gymwire/Conformance-v0")
        ep = ts["conformance"]
        obs, _ = conf.reset(seed=CONFORMANCE_SEED)
        assert obs["position"].tolist() == ep["obs"][0]
        for t in range(len(ep["rewards"])):
            obs, reward, terminated, truncated, _ = conf.step(conformance_action(t))
            assert obs["position"].tolist() == ep["obs"][t + 1]
            assert reward == ep["rewards"][t] and terminated == ep["terminated"][t] and truncated == ep["truncated"][t]
    assert sum(len(e["rewards"]) for e in ts["cartpole"]) > 20
