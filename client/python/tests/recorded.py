"""What a recorded dataset holds per episode, for tests that compare collections (test_collect.py, test_torch_vla.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gymwire.dataset import load_dataset


def recorded_episodes(root: Path) -> dict[int, dict[str, Any]]:
    """Per episode id (start order): status, length, return, terminal info, and the rows' actions and rewards."""
    ds = load_dataset(root)
    ids = ds.steps.column("episode_id").to_numpy()
    actions = ds.column("action")
    rewards = ds.steps.column("reward").to_numpy()
    infos = ds.column("info")
    sessions = ds.steps.column("session").to_pylist()
    order = list(dict.fromkeys(sessions))
    out: dict[int, dict[str, Any]] = {}
    for row in ds.episodes.to_pylist():
        rows = np.flatnonzero(ids == row["episode_id"])
        out[row["episode_id"]] = {
            "status": row["status"],
            "steps": row["steps"],
            "seed": row["seed"],
            "session_index": order.index(row["session"]),
            "return": row["return"],
            "terminal": infos[rows[-1]],
            "actions": actions[rows],
            "rewards": rewards[rows],
            "extras": {k: ds.column(k)[rows] for k in ds.manifest["columns"] if k.startswith("extras/")},
        }
    return out
