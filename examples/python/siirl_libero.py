"""siiRL: the LIBEROAdapter surface over gymwire sessions.

In siiRL: set GYMWIRE_URL / GYMWIRE_ENV_ID (or call `configure`) and `register()` before
EmbodiedHFRollout builds its adapter.
Run: python examples/python/siirl_libero.py
"""

from __future__ import annotations

import numpy as np
from _server import check, server_url

from gymwire.integrations.siirl import GymwireLIBEROAdapter, configure, register

with server_url() as url:
    configure(url, "gymwire/EvacWorldModel-v0")
    print("siiRL patched:", register())
    adapter = GymwireLIBEROAdapter("libero_10", num_envs=2, max_steps=64, num_steps_wait=0, model_family="openvla", gpu_ids=[0])
    records = adapter._blocking_reset(task_ids=[0, 1], trial_ids=[0, 0])
    print("init record keys:", sorted(records[0]), "obs keys:", sorted(records[0]["obs"]))
    for _ in range(3):
        steps = adapter._blocking_step({"indices": [0, 1], "actions": np.zeros((2, 8, 7), np.float32)})
    adapter.close()
    print("step record:", {k: v for k, v in steps[0].items() if k not in ("obs", "valid_images")})
    check(all(r["type"] == "step" for r in steps) and len(steps[0]["valid_images"]) == 1, "siiRL records")
