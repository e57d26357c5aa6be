"""Episodes into a Minari dataset through Minari's own storage (``MinariStorage``, Arrow data format).

Each episode is written as soon as it ends (``MinariStorage.update_episodes``), so memory stays
bounded by one episode and the dataset on disk is complete after every episode. Observations and
actions keep their own spaces and dtypes (images raw, not JPEG: lossless).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ..dataset import EpisodeRecord, _info_json_text, _row_info, to_json_value
from ._files import clear_for_writing
from .mapping import family_of, score_of

_ID = re.compile(r"^(?:[\w-]+/)?[\w-]+-v\d+$")


def _stack(space: gs.Space[Any], values: list[Any]) -> Any:
    """Per-step values of ``space`` in the structure Minari's storage takes: dicts/tuples of stacked leaves."""
    if isinstance(space, gs.Dict):
        return {k: _stack(s, [v[k] for v in values]) for k, s in space.spaces.items()}
    if isinstance(space, gs.Tuple):
        return tuple(_stack(s, [v[i] for v in values]) for i, s in enumerate(space.spaces))
    if isinstance(space, (gs.Box, gs.MultiDiscrete, gs.MultiBinary, gs.Discrete)):
        return np.stack([np.asarray(v, dtype=space.dtype) for v in values])
    return list(values)


class MinariWriter:
    """Writes whole episodes to a Minari dataset in ``out_dir`` (which must end with the dataset id).

    ``minari.load_dataset(dataset_id)`` finds it when ``MINARI_DATASETS_PATH`` is the folder above
    the id: ``out_dir`` = ``$MINARI_DATASETS_PATH/<dataset_id>``. The id defaults to ``out_dir``'s
    last component, which must then look like ``name-v0``. Incomplete episodes are left out.
    """

    def __init__(
        self,
        out_dir: str | Path,
        env_id: str,
        observation_space: gs.Space[Any],
        action_space: gs.Space[Any],
        *,
        env_kwargs: dict[str, Any] | None = None,
        overwrite: bool = False,
        dataset_id: str | None = None,
    ) -> None:
        import minari
        from minari.dataset.minari_storage import MinariStorage

        self.dir = Path(out_dir)
        self.dataset_id = dataset_id or self.dir.name
        if not _ID.match(self.dataset_id):
            raise ValueError(
                f"Minari dataset id {self.dataset_id!r} must look like [namespace/]name-v<version> (e.g. cartpole-random-v0): name --out so, or pass dataset_id"
            )
        if not self.dir.as_posix().rstrip("/").endswith(self.dataset_id):
            raise ValueError(
                f"the output directory {self.dir} must end with the dataset id {self.dataset_id!r} (minari.load_dataset looks for $MINARI_DATASETS_PATH/<id>)"
            )
        clear_for_writing(self.dir, "data/metadata.json", overwrite)
        (self.dir / "data").mkdir(parents=True)
        self.env_id = env_id
        self.family = family_of(env_id)
        self.observation_space = observation_space
        self.action_space = action_space
        # Minari measures its files by joining paths that break on a relative one: give it an absolute path.
        self.storage = MinariStorage.new(
            (self.dir / "data").resolve(), observation_space=observation_space, action_space=action_space, data_format="arrow", jpeg_encoding=False
        )
        self.storage.update_metadata(
            {
                "dataset_id": self.dataset_id,
                "minari_version": minari.__version__,
                "description": f"gymwire rollout of {env_id}",
                "gymwire_env_id": env_id,
                "gymwire_env_kwargs": json.dumps(to_json_value(env_kwargs or {})),
            }
        )
        self.counts = {"steps": 0, "episodes": 0, "terminated": 0, "truncated": 0, "incomplete": 0, "discarded": 0}

    def add(self, ep: EpisodeRecord) -> None:
        """Writes one ended episode: N+1 observations (the last is the final observation), N of the rest."""
        from minari.data_collector.episode_buffer import EpisodeBuffer

        last = ep.steps[-1] if ep.steps else None
        if ep.status == "incomplete" or last is None or last.final_obs is None:
            self.counts["incomplete"] += 1
            return
        index = self.counts["episodes"]
        infos: dict[str, Any] = {"gymwire_info": ["{}"] + [_info_json_text(_row_info(s.info)) for s in ep.steps]}
        # Plain lists, not 1-d arrays: Minari 0.5.4 writes a 1-d array info with an empty shape that it cannot read back.
        for key in self.family.scores:
            infos[key] = [0.0] + [score_of(s.info, key) for s in ep.steps]
        if self.family.success:
            infos["success"] = [False] + [bool(s.info.get(self.family.success, False)) for s in ep.steps]
        buffer = EpisodeBuffer(
            id=index,
            seed=ep.seed,
            observations=_stack(self.observation_space, [s.obs for s in ep.steps] + [last.final_obs]),
            actions=_stack(self.action_space, [s.action for s in ep.steps]),
            rewards=[float(s.reward) for s in ep.steps],
            terminations=[bool(s.terminated) for s in ep.steps],
            truncations=[bool(s.truncated) for s in ep.steps],
            infos=infos,
        )
        self.storage.update_episodes([buffer])
        meta: dict[str, Any] = {"gymwire_session": ep.session, "gymwire_server": ep.server, "gymwire_episode_id": ep.episode_id, "gymwire_status": ep.status}
        for key in self.family.scores:
            meta[key] = score_of(last.info, key)
        if self.family.success:
            meta["success"] = bool(last.info.get(self.family.success, False))
        self.storage.update_episode_metadata([meta], [index])
        self.counts["episodes"] += 1
        self.counts["steps"] += len(ep.steps)
        self.counts[ep.status] += 1

    def discarded(self, count: int = 1) -> None:
        self.counts["discarded"] += count

    def close(self, policy: str) -> dict[str, Any]:
        self.storage.update_metadata({"algorithm_name": policy})
        return {
            "format": "minari",
            "root": str(self.dir),
            "dataset_id": self.dataset_id,
            "env_id": self.env_id,
            "policy": policy,
            "counts": self.counts,
        }
