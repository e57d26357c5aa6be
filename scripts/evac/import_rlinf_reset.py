#!/usr/bin/env python3
"""Import RLinf's EVAC reset dataset into a gymwire reset dataset (docs/world-models.md).

RLinf's EvacEnv reads its reset states with ``NpyTrajectoryDatasetWrapper``
(rlinf/data/datasets/world_model.py @bf41fc33c): a folder of ``*.npy`` files, one episode each, every
file an object array of per-frame dicts. Its default ``first_frame`` policy takes frame 0: the image
(key ``image``, else the first HxWx3 array), the state (``init_ee_pose``, else ``abs_action``) and the
task (``instruction``, else ``task``; bytes are UTF-8). This script reads the same fields the same
way and writes ``episodes.json`` plus one PNG per episode, in RLinf's order (sorted file names), so
episode i here is RLinf's dataset index i and an RLinf-seeded draw picks the same episodes.

    python scripts/evac/import_rlinf_reset.py SRC_DIR OUT_DIR [--camera NAME] [--state-key KEY]

Needs numpy only. Frames keep their size; the env resizes them (``reset_resize: 'rlinf'`` as RLinf does).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

DATASET_FORMAT = "gymwire.evac-reset/v1"


class NotAnRLinfDataset(Exception):
    """The source folder is not an RLinf EVAC reset dataset; the message says which file and why."""


def write_png(path: Path, rgb: np.ndarray) -> None:
    """Writes an HxWx3 uint8 array as an 8-bit RGB PNG (no imaging library needed)."""
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def camera_key(frame: dict, camera: str | None) -> str:
    """RLinf's camera choice: the given name, else ``image``, else the first HxWx3 array."""
    if camera is not None:
        return camera
    if "image" in frame:
        return "image"
    for key, value in frame.items():
        if isinstance(value, np.ndarray) and value.ndim == 3:
            return key
    raise NotAnRLinfDataset("no image key found in the first frame (RLinf looks for 'image' or any HxWx3 array)")


def text(value: object) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, np.bytes_)) else str(value)


def read_episode(path: Path, camera: str, state_key: str) -> tuple[np.ndarray, list[float], str]:
    trajectory = np.load(path, allow_pickle=True)
    if len(trajectory) == 0:
        raise NotAnRLinfDataset(f"{path.name}: the trajectory has no frames")
    frame = trajectory[0]
    if not isinstance(frame, dict):
        raise NotAnRLinfDataset(f"{path.name}: frame 0 is a {type(frame).__name__}, not a dict of fields")
    image = frame.get(camera, frame.get("image"))
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
        raise NotAnRLinfDataset(f"{path.name}: frame 0 has no HxWx3 image under {camera!r}")
    if image.dtype != np.uint8:
        raise NotAnRLinfDataset(f"{path.name}: the image is {image.dtype}; RLinf divides it by 255, so it must be uint8")
    for key in ("init_ee_pose", state_key, "abs_action"):
        if key in frame:
            state = np.asarray(frame[key], dtype=np.float32).reshape(-1)
            break
    else:
        raise NotAnRLinfDataset(f"{path.name}: frame 0 has no init_ee_pose, {state_key} or abs_action")
    if state.shape[0] != 8:
        raise NotAnRLinfDataset(
            f"{path.name}: the state has {state.shape[0]} values; EvacEnv takes one arm's pose [x, y, z, qx, qy, qz, qw, gripper] (8) and duplicates it"
        )
    if not np.all(np.isfinite(state)):
        raise NotAnRLinfDataset(f"{path.name}: the state is not finite: {state.tolist()}")
    task = text(frame["instruction"]) if "instruction" in frame else text(frame["task"]) if "task" in frame else ""
    return np.ascontiguousarray(image), [float(v) for v in state], task


def import_dataset(src: Path, out: Path, camera: str | None = None, state_key: str = "init_ee_pose") -> int:
    """Converts every episode of ``src``; returns how many were written to ``out``."""
    files = sorted(src.glob("*.npy"))
    if not files:
        raise NotAnRLinfDataset(f"no .npy files in {src}")
    first = np.load(files[0], allow_pickle=True)
    key = camera_key(first[0] if len(first) else {}, camera)
    out.mkdir(parents=True, exist_ok=True)
    episodes = []
    for index, path in enumerate(files):
        image, pose, task = read_episode(path, key, state_key)
        name = f"ep_{index:05d}.png"
        write_png(out / name, image)
        episodes.append({"image": name, "task": task, "init_ee_pose": pose})
    listing = {"format": DATASET_FORMAT, "episodes": episodes}
    (out / "episodes.json").write_text(json.dumps(listing, indent=1) + "\n")
    return len(episodes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="RLinf's initial_image_path: a folder of *.npy episodes")
    parser.add_argument("out", type=Path, help="the gymwire reset dataset folder to write")
    parser.add_argument("--camera", help="image key (default as RLinf: 'image', else the first HxWx3 array)")
    parser.add_argument("--state-key", default="init_ee_pose", help="state key when a frame has no init_ee_pose")
    args = parser.parse_args(argv)
    try:
        n = import_dataset(args.src, args.out, args.camera, args.state_key)
    except NotAnRLinfDataset as err:
        print(f"import_rlinf_reset: {err}", file=sys.stderr)
        return 1
    print(f"wrote {n} episodes to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
