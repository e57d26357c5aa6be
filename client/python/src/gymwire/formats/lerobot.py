"""Episodes into a LeRobot dataset (LeRobot's v3.0 layout) through LeRobot's own recording API.

``LeRobotDataset.create`` / ``add_frame`` / ``save_episode`` / ``finalize`` write what LeRobot
itself records from a robot: parquet data, one video per camera (AV1 by default, encoded after each
episode from frames it keeps on disk, so memory stays bounded by one episode), and ``meta/`` with
info, episodes, tasks and stats. The frame mapping is in :mod:`gymwire.formats.mapping`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ..dataset import EpisodeRecord
from ._files import clear_for_writing
from .mapping import FrameLayout, family_of, score_of


class LeRobotWriter:
    """Writes whole episodes to a LeRobot dataset rooted at ``out_dir``; ``close()`` finalizes it.

    Incomplete episodes (a stopped collection's running ones) are left out: LeRobot has no flag for
    an episode that did not end. The dataset loads with ``LeRobotDataset(repo_id, root=out_dir)``.
    """

    def __init__(
        self,
        out_dir: str | Path,
        env_id: str,
        observation_space: gs.Space[Any],
        action_space: gs.Space[Any],
        *,
        overwrite: bool = False,
        fps: int | None = None,
        repo_id: str | None = None,
        vcodec: str = "libsvtav1",
    ) -> None:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        self.dir = Path(out_dir)
        clear_for_writing(self.dir, "meta/info.json", overwrite)
        self.env_id = env_id
        self.family = family_of(env_id)
        self.layout = FrameLayout.of(observation_space, action_space)
        self.repo_id = repo_id or f"gymwire/{self.dir.name}"
        features: dict[str, dict[str, Any]] = {}
        if self.layout.state:
            features["observation.state"] = {"dtype": "float32", "shape": (len(self.layout.state_names),), "names": self.layout.state_names}
        for name, _plan in self.layout.cameras:
            features[f"observation.images.{name}"] = {"dtype": "video", "shape": self.layout.camera_shapes[name], "names": ["height", "width", "channels"]}
        features["action"] = {"dtype": "float32", "shape": (len(self.layout.action_names),), "names": self.layout.action_names}
        for key in ("next.reward",):
            features[key] = {"dtype": "float32", "shape": (1,), "names": None}
        for key in ("next.done", "next.terminated", "next.truncated"):
            features[key] = {"dtype": "bool", "shape": (1,), "names": None}
        if self.family.success:
            features["next.success"] = {"dtype": "bool", "shape": (1,), "names": None}
        for key in self.family.scores:
            features[f"next.{key}"] = {"dtype": "float32", "shape": (1,), "names": None}
        self.features = features
        self._scalar_keys = [k for k, f in features.items() if f["shape"] == (1,)]
        self.fps = int(fps or self.family.fps)
        self.ds = LeRobotDataset.create(self.repo_id, self.fps, features, root=self.dir, use_videos=True, vcodec=vcodec)
        self.counts = {"steps": 0, "episodes": 0, "terminated": 0, "truncated": 0, "incomplete": 0, "discarded": 0}
        self.closed = False

    def add(self, ep: EpisodeRecord) -> None:
        """Adds one finished episode as LeRobot frames and saves it (its videos encoded now)."""
        if ep.status == "incomplete" or not ep.steps:
            self.counts["incomplete"] += 1
            return
        layout = self.layout
        for s in ep.steps:
            frame: dict[str, Any] = {"task": layout.task_of(s.obs, s.info, self.env_id)}
            if layout.state:
                frame["observation.state"] = layout.state_of(s.obs)
            for name, plan in layout.cameras:
                frame[f"observation.images.{name}"] = layout.camera_of(s.obs, plan)
            frame["action"] = layout.action_of(s.action)
            frame["next.reward"] = np.array([s.reward], dtype=np.float32)
            frame["next.done"] = np.array([s.terminated or s.truncated], dtype=np.bool_)
            frame["next.terminated"] = np.array([s.terminated], dtype=np.bool_)
            frame["next.truncated"] = np.array([s.truncated], dtype=np.bool_)
            if self.family.success:
                frame["next.success"] = np.array([bool(s.info.get(self.family.success, False))], dtype=np.bool_)
            for key in self.family.scores:
                frame[f"next.{key}"] = np.array([score_of(s.info, key)], dtype=np.float32)
            self.ds.add_frame(frame)
        # add_frame checks that a (1,)-shaped feature is an array of shape (1,), but save_episode then
        # hands each row to datasets.Value, which calls float() on it: NumPy 2.4 refuses that for a
        # 1-d array. LeRobot's own (1,) columns (timestamp, frame_index) sit in the buffer as Python
        # scalars; ours are turned into the same before saving.
        buffer = self.ds.episode_buffer
        for key in self._scalar_keys:
            buffer[key] = [np.asarray(v).reshape(()).item() for v in buffer[key]]
        self.ds.save_episode()
        self.counts["episodes"] += 1
        self.counts["steps"] += len(ep.steps)
        self.counts[ep.status] += 1

    def discarded(self, count: int = 1) -> None:
        self.counts["discarded"] += count

    def close(self, policy: str) -> dict[str, Any]:
        """Finalizes the dataset (parquet footers, metadata); also after an error, so what was saved loads."""
        if not self.closed:
            self.closed = True
            if self.ds.episode_buffer is not None and self.ds.episode_buffer.get("size", 0):
                self.ds.clear_episode_buffer()
            self.ds.finalize()
        return {
            "format": "lerobot",
            "root": str(self.dir),
            "repo_id": self.repo_id,
            "env_id": self.env_id,
            "policy": policy,
            "fps": self.fps,
            "features": sorted(self.features),
            "counts": self.counts,
        }
