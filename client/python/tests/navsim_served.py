"""Converted NAVSIM scenes on a real server, for the converter tests (test_navsim_convert*.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest import ServerProcess


def assert_humans_drive_cleanly(data_root: Path, scene_dir: str, humans: dict[str, list], version: int = 2) -> None:
    """Serves ``data_root`` (``--data-root``) and drives each scene token's logged human poses in
    ``scene_dir`` under NAVSIM ``version``: every episode ends in one step with no collision, on the
    drivable area, and a score above 0.8."""
    import gymwire

    server = ServerProcess("--data-root", str(data_root))
    try:
        env = gymwire.make(server.url, f"gymwire/NavsimEnv-v{version}", scene_dir=scene_dir)
        try:
            for token, poses in humans.items():
                env.reset(options={"scene_token": token})
                _, reward, terminated, _, info = env.step(np.asarray(poses, dtype=np.float32))
                assert terminated
                assert info["nc"] == 1 and info["dac"] == 1, info
                assert reward > 0.8, info
        finally:
            env.close()
    finally:
        server.stop()
