"""Quick start: a remote CartPole as a gymnasium.Env, checked by Gymnasium's check_env, then one episode.

Run: python examples/python/quickstart.py   (set GYMWIRE_URL to use a running server)
"""

from __future__ import annotations

import warnings

from _server import check, server_url
from gymnasium.utils.env_checker import check_env

import gymwire

with server_url() as url:
    env = gymwire.make(url, "gymwire/CartPole-v1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # infinite Box bounds, no EnvSpec: warnings, not errors
        check_env(env.unwrapped)
    env = gymwire.make(url, "gymwire/CartPole-v1")
    obs, info = env.reset(seed=42)
    total, done = 0.0, False
    while not done:
        # Push towards where the pole is falling.
        action = int(obs[2] + 0.5 * obs[3] > 0)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        done = terminated or truncated
    env.close()
    print(f"check_env passed; heuristic episode return {total:.0f}")
    check(total > 100, f"the heuristic should balance for more than 100 steps, got {total}")
