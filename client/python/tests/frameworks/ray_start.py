"""Starting Ray in a suite: Ray waits a hard-coded 30 s for its raylet to register with the GCS
(ray/_private/node.py), which a loaded 2-core machine can overrun before any gymwire code runs."""

from __future__ import annotations

import os
from typing import Any

import ray

# The same wait, as Ray's own setting: 30 s is too short for a raylet on a loaded 2-core machine (Ray reads it at start-up).
os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")

ATTEMPTS = 3


def init_ray(**kwargs: Any) -> None:
    """``ray.init(**kwargs)``, started afresh up to three times when Ray's own start-up times out."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            ray.init(**kwargs)
            return
        except Exception as err:  # noqa: BLE001 - Ray raises a bare Exception for this
            if "timed out during startup" not in str(err) or attempt == ATTEMPTS:
                raise
            ray.shutdown()
