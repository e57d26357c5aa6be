"""An Arrow trajectory dataset (docs/datasets.md) read back episode by episode, into any writer.

``gymwire rollout --format lerobot|minari`` collects into Arrow first and then runs
``python -m gymwire.formats convert``: the part files are memory-mapped and one episode at a time is
rebuilt as an :class:`~gymwire.dataset.EpisodeRecord`, so memory stays bounded by one episode
whatever the dataset's size.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ..dataset import DATASET_FORMAT, EpisodeRecord, StepRecord, decode_column, from_json_value
from ..spaces import space_from_wire


def _decode_images(table: Any, name: str) -> np.ndarray:
    """A png/jpeg column as ``[N, *shape]`` uint8 (a stacked history is one tall image)."""
    from PIL import Image

    md = {k.decode(): v.decode() for k, v in (table.schema.field(name).metadata or {}).items()}
    shape = tuple(json.loads(md["gymwire.shape"]))
    rows = decode_column(table, name)
    out = np.zeros((len(rows), *shape), dtype=np.uint8)
    for i, b in enumerate(rows):
        if b is not None:
            out[i] = np.asarray(Image.open(io.BytesIO(b))).reshape(shape)
    return out


def _columns(space: gs.Space[Any], table: Any, name: str) -> Any:
    if isinstance(space, gs.Dict):
        return {k: _columns(s, table, f"{name}.{k}") for k, s in space.spaces.items()}
    if isinstance(space, gs.Tuple):
        return tuple(_columns(s, table, f"{name}.{i}") for i, s in enumerate(space.spaces))
    md = {k.decode(): v.decode() for k, v in (table.schema.field(name).metadata or {}).items()}
    if md.get("gymwire.encoding") in ("png", "jpeg"):
        return _decode_images(table, name)
    return decode_column(table, name)


def _row(columns: Any, i: int) -> Any:
    if isinstance(columns, dict):
        return {k: _row(v, i) for k, v in columns.items()}
    if isinstance(columns, tuple):
        return tuple(_row(v, i) for v in columns)
    return columns[i]


def read_episodes(root: str | Path) -> tuple[dict[str, Any], gs.Space[Any], gs.Space[Any], Iterator[EpisodeRecord]]:
    """The manifest, the spaces and an iterator over the dataset's episodes (one in memory at a time)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    root = Path(root)
    manifest = json.loads((root / "dataset.json").read_text())
    if manifest.get("format") != DATASET_FORMAT:
        raise ValueError(f"{root} is not a {DATASET_FORMAT} dataset (its dataset.json says {manifest.get('format')!r})")
    obs_space = space_from_wire(from_json_value(manifest["observation_space"]))
    act_space = space_from_wire(from_json_value(manifest["action_space"]))
    with pa.memory_map(str(root / manifest["episodes_file"])) as f:
        episodes = ipc.open_file(f).read_all().to_pylist()

    def episodes_iter() -> Iterator[EpisodeRecord]:
        by_file: dict[str, list[dict[str, Any]]] = {}
        for e in episodes:
            by_file.setdefault(e["file"], []).append(e)
        for name in manifest["steps_files"]:
            with pa.memory_map(str(root / name)) as f:
                table = ipc.open_file(f).read_all()
                ids = table.column("episode_id").to_numpy()
                starts = {int(ids[i]): i for i in np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])} if len(ids) else {}
                for e in by_file.get(name, []):
                    part = table.slice(starts[e["episode_id"]], e["steps"])
                    yield _episode(part, e, obs_space, act_space)

    return manifest, obs_space, act_space, episodes_iter()


def _episode(part: Any, e: dict[str, Any], obs_space: gs.Space[Any], act_space: gs.Space[Any]) -> EpisodeRecord:
    obs = _columns(obs_space, part, "obs")
    final_obs = _columns(obs_space, part, "final_obs")
    actions = _columns(act_space, part, "action")
    rewards = part.column("reward").to_pylist()
    terms = part.column("terminated").to_pylist()
    truncs = part.column("truncated").to_pylist()
    infos = part.column("info").to_pylist()
    session_steps = part.column("session_step").to_pylist()
    n = part.num_rows
    ended = e["status"] in ("terminated", "truncated")
    ep = EpisodeRecord(e["session"], e["server"], e["seed"], status=e["status"], reason=e["reason"], episode_id=e["episode_id"])
    for i in range(n):
        ep.steps.append(
            StepRecord(
                obs=_row(obs, i),
                action=_row(actions, i),
                reward=float(rewards[i]),
                terminated=bool(terms[i]),
                truncated=bool(truncs[i]),
                info=from_json_value(json.loads(infos[i])) or {},
                session_step=int(session_steps[i]),
                final_obs=_row(final_obs, i) if ended and i == n - 1 else None,
            )
        )
    return ep


def convert(
    arrow_dir: str | Path,
    format: str,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    fps: int | None = None,
    dataset_id: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Writes the Arrow dataset in ``arrow_dir`` as ``format`` into ``out_dir``; returns the new manifest."""
    from . import open_writer

    manifest, obs_space, act_space, episodes = read_episodes(arrow_dir)
    writer = open_writer(
        format, out_dir, manifest["env_id"], obs_space, act_space, env_kwargs=manifest.get("env_kwargs"), overwrite=overwrite, fps=fps, dataset_id=dataset_id
    )
    bar = _progress_bar(manifest["counts"]["episodes"], f"writing {format} into {out_dir}") if progress else None
    try:
        for ep in episodes:
            writer.add(ep)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        writer.discarded(int(manifest["counts"].get("discarded", 0)))
        out = writer.close(manifest.get("policy", "unknown"))
    return out


def _progress_bar(total: int, desc: str) -> Any:
    """A tqdm bar of episodes on stderr, or None without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="episode")
