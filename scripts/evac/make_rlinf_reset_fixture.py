#!/usr/bin/env python3
"""Write a small reset dataset in RLinf's on-disk EVAC format, for the importer's tests.

The layout is what ``NpyTrajectoryDatasetWrapper`` (rlinf/data/datasets/world_model.py @bf41fc33c)
reads: one ``*.npy`` per episode holding an object array of per-frame dicts with ``image`` (HxWx3
uint8), ``init_ee_pose`` (8 float32), ``abs_action`` (16), ``delta_action`` (7) and ``instruction``
(bytes). Episode 2 names its task under ``task`` (a str) and carries its pose in ``abs_action``
only, the wrapper's fallbacks. Pixel (y, x, c) of episode i is (7y + 3x + 50c + 11i) mod 256.

    python scripts/evac/make_rlinf_reset_fixture.py OUT_DIR [--episodes 3] [--height 40] [--width 56]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def fixture_image(index: int, height: int, width: int) -> np.ndarray:
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    return ((7 * y + 3 * x + 50 * c + 11 * index) % 256).astype(np.uint8)


def fixture_pose(index: int) -> np.ndarray:
    return np.array([0.1 * index, -0.05, 0.2, 0.0, 0.0, 0.0, 1.0, -1.0], dtype=np.float32)


def write_fixture(out: Path, episodes: int = 3, height: int = 40, width: int = 56) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for i in range(episodes):
        frames = []
        for t in range(3):
            pose = fixture_pose(i)
            frame = {
                "image": fixture_image(i + t, height, width),
                "abs_action": np.concatenate([pose, pose]),
                "delta_action": np.zeros(7, dtype=np.float32),
            }
            if i == 2:
                frame["abs_action"] = pose
                frame["task"] = f"task {i}"
            else:
                frame["init_ee_pose"] = pose
                frame["instruction"] = f"task {i}".encode()
            frames.append(frame)
        array = np.empty(len(frames), dtype=object)
        array[:] = frames
        np.save(out / f"traj_{i:03d}.npy", array, allow_pickle=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--height", type=int, default=40)
    parser.add_argument("--width", type=int, default=56)
    args = parser.parse_args()
    write_fixture(args.out, args.episodes, args.height, args.width)
