"""Trajectory datasets in the format the TypeScript rollout tools write (docs/datasets.md, version 1).

:func:`collect` drives a :class:`~gymwire.env.GymwireEnv` or :class:`~gymwire.vector.GymwireVectorEnv`
with a :class:`~gymwire.policies.Policy` and writes whole episodes as Apache Arrow IPC files
(``steps-*.arrow``, ``episodes.arrow``, ``dataset.json``). :func:`load_dataset` reads any such
directory (ours or the TypeScript writer's) and :func:`episodes_to_arrays` turns it into padded
``[episodes, T, ...]`` numpy arrays; ``gymwire.integrations.*.dataset_to_*`` rename those for each
trainer. Needs ``pyarrow`` (``pip install gymwire[datasets]``).

Example::

    manifest = gymwire.collect(env, make_policy("random", action_space=env.action_space), episodes=10, out_dir="out/")
    ds = load_dataset("out/")
    batch = episodes_to_arrays(ds)   # {"obs": [E, T, 4], "actions": [E, T], "rewards": [E, T], "mask": ...}
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ._protocol import DATASET_FORMAT, DATASET_VERSION
from .codec import wire_dtype_name
from .spaces import space_from_wire, space_to_wire

_SAFE_INT = 2**53 - 1


# ---------------------------------------------------------------------------------------------
# JSON values (docs/datasets.md "JSON values")


def to_json_value(value: Any) -> Any:
    """A JSON-safe copy of a value: tensors as ``{"__tensor__": ...}``, bytes as ``{"__bytes__": ...}``."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        return v if -_SAFE_INT <= v <= _SAFE_INT else str(v)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else ("nan" if math.isnan(v) else "inf" if v > 0 else "-inf")
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        flat = value.reshape(-1).tolist()
        return {"__tensor__": {"dtype": wire_dtype_name(value.dtype), "shape": list(value.shape), "data": [to_json_value(x) for x in flat]}}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, gs.GraphInstance):
        return {"nodes": to_json_value(value.nodes), "edges": to_json_value(value.edges), "edge_links": to_json_value(value.edge_links)}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    return str(value)


def from_json_value(value: Any) -> Any:
    """Inverse of :func:`to_json_value` for tensors and bytes (strings "inf"/"nan" stay strings outside tensors)."""
    if isinstance(value, dict):
        if set(value) == {"__tensor__"}:
            t = value["__tensor__"]
            data = [float(x) if isinstance(x, str) else x for x in t["data"]]
            return np.asarray(data, dtype=t["dtype"]).reshape(t["shape"])
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {k: from_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json_value(v) for v in value]
    return value


def _json_text(value: Any) -> str:
    return json.dumps(to_json_value(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


_plain_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False)


def _info_json_text(info: dict[str, Any]) -> str:
    """An info as JSON text, by the C encoder when the info is plain JSON data (as decoded infos almost always are).

    Anything the documented encoding treats specially (tensors, bytes, non-finite floats, numpy
    scalars) sends the info down :func:`_json_text`'s general path. Integers are written as JSON
    numbers here, as the TypeScript writer writes the numbers of an info.
    """
    if not info:
        return "{}"
    try:
        return _plain_json.encode(info)
    except (TypeError, ValueError):
        return _json_text(info)


# ---------------------------------------------------------------------------------------------
# Columns (mirrors client/ts/dataset/columns.ts planColumns)


@dataclass
class ColumnPlan:
    path: str
    keys: list[str | int]
    encoding: str
    dtype: str | None
    shape: list[int]


def plan_columns(space: gs.Space[Any], keys: list[str | int] | None = None) -> list[ColumnPlan]:
    keys = keys or []
    path = "".join(f".{k}" for k in keys)
    if isinstance(space, gs.Box):
        return [ColumnPlan(path, keys, "raw", wire_dtype_name(space.dtype), list(space.shape))]
    if isinstance(space, gs.Discrete):
        return [ColumnPlan(path, keys, "scalar", wire_dtype_name(space.dtype), [])]
    if isinstance(space, gs.MultiDiscrete):
        return [ColumnPlan(path, keys, "raw", wire_dtype_name(space.dtype), list(space.nvec.shape))]
    if isinstance(space, gs.MultiBinary):
        return [ColumnPlan(path, keys, "raw", "int8", [int(d) for d in np.atleast_1d(space.n)])]
    if isinstance(space, gs.Dict):
        return [c for k, s in space.spaces.items() for c in plan_columns(s, [*keys, k])]
    if isinstance(space, gs.Tuple):
        return [c for i, s in enumerate(space.spaces) for c in plan_columns(s, [*keys, i])]
    return [ColumnPlan(path, keys, "json", None, [])]


def _pick(value: Any, keys: list[str | int]) -> Any:
    for k in keys:
        value = None if value is None else value[k]
    return value


def _encode_leaf(col: ColumnPlan, value: Any) -> Any:
    if value is None:
        return None
    if col.encoding == "scalar":
        v = np.asarray(value).item()
        return float(v) if (col.dtype or "").startswith("float") else int(v)
    if col.encoding == "json":
        return _json_text(value)
    arr = np.asarray(value, dtype=col.dtype)
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def _raw_binary_column(pa: Any, c: ColumnPlan, leaves: list[Any]) -> Any:
    """Raw leaves (None for null) as a binary array whose data buffer is one contiguous copy of all present rows.

    Returns None when a present row does not have the column's shape; the caller then encodes row by row.
    """
    dtype = np.dtype(c.dtype).newbyteorder("<")
    shape = tuple(c.shape)
    rows = [np.asarray(v, dtype=dtype) for v in leaves if v is not None]
    if any(r.shape != shape for r in rows):
        return None
    n = len(leaves)
    present = np.fromiter((v is not None for v in leaves), dtype=np.bool_, count=n)
    item = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(present, item, 0), out=offsets[1:])
    data = np.stack(rows).tobytes() if rows else b""
    nulls = n - len(rows)
    validity = pa.array(present, type=pa.bool_()).buffers()[1] if nulls else None
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def _row_info(info: dict[str, Any]) -> dict[str, Any]:
    """The info stored with a row: without the autoreset keys (their contents have columns of their own)."""
    if "final_obs" in info or "final_info" in info:
        return {k: v for k, v in info.items() if k not in ("final_obs", "final_info")}
    return info


def _arrow_type(pa: Any, col: ColumnPlan) -> Any:
    if col.encoding == "scalar":
        return pa.float64() if (col.dtype or "").startswith("float") else pa.int64()
    if col.encoding == "json":
        return pa.utf8()
    return pa.binary()


# ---------------------------------------------------------------------------------------------
# Writer


@dataclass
class StepRecord:
    obs: Any
    action: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    session_step: int
    log_prob: float | None = None
    value: float | None = None
    final_obs: Any = None
    #: The policy's extra outputs for this step, one row each (``PolicyOutput.extras``).
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeRecord:
    session: str
    server: str
    seed: int | None
    steps: list[StepRecord] = field(default_factory=list)
    status: str = "incomplete"
    reason: str | None = None
    #: Its number in start order (collect sets it, as the TypeScript rollout does); None: the order written.
    episode_id: int | None = None


_DATASET_FILE = re.compile(r"^(dataset\.json|episodes\.arrow|steps-\d+\.arrow)$")


class DatasetExistsError(FileExistsError):
    """The output directory already holds a dataset (pass ``overwrite=True`` to replace it)."""


class TrajectoryWriter:
    """Writes episodes to ``out_dir`` in format version 1; ``close()`` writes episodes.arrow and dataset.json.

    A directory that already holds a dataset is refused (:class:`DatasetExistsError`) unless
    ``overwrite=True``, which removes that dataset's files (and only those) first.
    """

    def __init__(
        self,
        out_dir: str | Path,
        env_id: str,
        observation_space: gs.Space[Any],
        action_space: gs.Space[Any],
        env_kwargs: dict[str, Any] | None = None,
        rows_per_file: int = 100_000,
        overwrite: bool = False,
    ) -> None:
        import pyarrow as pa

        self.pa = pa
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        existing = sorted(p.name for p in self.dir.iterdir() if _DATASET_FILE.match(p.name))
        if existing:
            if not overwrite:
                listed = ", ".join(existing[:3]) + (f" and {len(existing) - 3} more" if len(existing) > 3 else "")
                raise DatasetExistsError(f"{self.dir} already holds a dataset ({listed}); write elsewhere, or pass overwrite=True to replace it")
            for name in existing:
                (self.dir / name).unlink()
        self.env_id = env_id
        self.env_kwargs = env_kwargs or {}
        self.observation_space = observation_space
        self.action_space = action_space
        self.rows_per_file = rows_per_file
        self.obs_cols = plan_columns(observation_space)
        self.act_cols = plan_columns(action_space)
        # Planned from the first episode written (PolicyOutput.extras: one raw column per name).
        self.extra_cols: list[ColumnPlan] | None = None
        self.schema = self._schema([])
        self.files: list[str] = []
        self._writer: Any = None
        self._rows_in_part = 0
        self._episodes: list[dict[str, Any]] = []
        self.counts = {"steps": 0, "episodes": 0, "terminated": 0, "truncated": 0, "incomplete": 0, "discarded": 0}
        self.servers: set[str] = set()
        self.sessions: set[str] = set()

    def _schema(self, extra_cols: list[ColumnPlan]) -> Any:
        pa = self.pa

        def leaf(prefix: str, c: ColumnPlan) -> Any:
            md = {"gymwire.encoding": c.encoding, "gymwire.dtype": c.dtype or "", "gymwire.shape": json.dumps(c.shape, separators=(",", ":"))}
            return pa.field(f"{prefix}{c.path}", _arrow_type(pa, c), nullable=True, metadata=md)

        return pa.schema(
            [
                pa.field("episode_id", pa.int64(), nullable=False),
                pa.field("step", pa.int32(), nullable=False),
                pa.field("session", pa.utf8(), nullable=False),
                pa.field("server", pa.utf8(), nullable=False),
                pa.field("session_step", pa.int64(), nullable=False),
                *[leaf("obs", c) for c in self.obs_cols],
                *[leaf("final_obs", c) for c in self.obs_cols],
                *[leaf("action", c) for c in self.act_cols],
                pa.field("reward", pa.float64(), nullable=False),
                pa.field("terminated", pa.bool_(), nullable=False),
                pa.field("truncated", pa.bool_(), nullable=False),
                pa.field("log_prob", pa.float64(), nullable=True),
                pa.field("value", pa.float64(), nullable=True),
                pa.field("info", pa.utf8(), nullable=False, metadata={"gymwire.encoding": "json"}),
                *[leaf("extras", c) for c in extra_cols],
            ],
            metadata={
                "gymwire.format": DATASET_FORMAT,
                "gymwire.version": str(DATASET_VERSION),
                "gymwire.env_id": self.env_id,
                "gymwire.observation_space": _json_text(space_to_wire(self.observation_space)),
                "gymwire.action_space": _json_text(space_to_wire(self.action_space)),
            },
        )

    def _plan_extras(self, ep: EpisodeRecord) -> list[ColumnPlan]:
        """The extras columns, fixed by the first episode: every later row must have the same names, dtypes and shapes."""
        if self.extra_cols is None:
            first = ep.steps[0].extras if ep.steps else {}
            self.extra_cols = []
            for name, row in first.items():
                arr = np.asarray(row)
                self.extra_cols.append(ColumnPlan(f"/{name}", [name], "raw", wire_dtype_name(arr.dtype), list(arr.shape)))
            if self.extra_cols:
                self.schema = self._schema(self.extra_cols)
        names = {c.keys[0] for c in self.extra_cols}
        for s in ep.steps:
            if set(s.extras) != names:
                raise ValueError(f"a step's extras {sorted(s.extras)} differ from the dataset's {sorted(names)} (fixed by the first episode written)")
        return self.extra_cols

    def _start_part(self) -> None:
        name = f"steps-{len(self.files):05d}.arrow"
        self.files.append(name)
        self._writer = self.pa.ipc.new_file(str(self.dir / name), self.schema)
        self._rows_in_part = 0

    def _finish_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def add(self, ep: EpisodeRecord) -> None:
        """Writes one episode's rows contiguously (a new part file starts between episodes only)."""
        extra_cols = self._plan_extras(ep)
        if self._writer is None or (self._rows_in_part > 0 and self._rows_in_part + len(ep.steps) > self.rows_per_file):
            self._finish_part()
            self._start_part()
        episode_id = self.counts["episodes"] if ep.episode_id is None else ep.episode_id
        steps = ep.steps
        n = len(steps)
        cols: dict[str, Any] = {
            "episode_id": [episode_id] * n,
            "step": list(range(n)),
            "session": [ep.session] * n,
            "server": [ep.server] * n,
            "session_step": [s.session_step for s in steps],
            "reward": [float(s.reward) for s in steps],
            "terminated": [bool(s.terminated) for s in steps],
            "truncated": [bool(s.truncated) for s in steps],
            "log_prob": [None if s.log_prob is None else float(s.log_prob) for s in steps],
            "value": [None if s.value is None else float(s.value) for s in steps],
            "info": [_info_json_text(_row_info(s.info)) for s in steps],
        }
        for c in self.obs_cols:
            cols[f"obs{c.path}"] = self._column(c, [_pick(s.obs, c.keys) for s in steps])
            cols[f"final_obs{c.path}"] = self._column(c, [None if s.final_obs is None else _pick(s.final_obs, c.keys) for s in steps])
        for c in self.act_cols:
            cols[f"action{c.path}"] = self._column(c, [_pick(s.action, c.keys) for s in steps])
        for c in extra_cols:
            cols[f"extras{c.path}"] = self._column(c, [s.extras[c.keys[0]] for s in steps])
        table = self.pa.Table.from_pydict(cols, schema=self.schema)
        self._writer.write_table(table)
        self._rows_in_part += len(ep.steps)
        self._episodes.append(
            {
                "episode_id": episode_id,
                "session": ep.session,
                "server": ep.server,
                "seed": ep.seed,
                "steps": len(ep.steps),
                "return": float(sum(s.reward for s in ep.steps)),
                "status": ep.status,
                "reason": ep.reason,
                "file": self.files[-1],
            }
        )
        self.counts["episodes"] += 1
        self.counts["steps"] += len(ep.steps)
        self.counts[ep.status] += 1
        self.servers.add(ep.server)
        self.sessions.add(ep.session)

    def discarded(self, count: int = 1) -> None:
        self.counts["discarded"] += count

    def _column(self, c: ColumnPlan, leaves: list[Any]) -> Any:
        """One column of an episode: raw leaves as one Arrow binary array built from a single buffer, others row by row."""
        if c.encoding == "raw" and leaves:
            column = _raw_binary_column(self.pa, c, leaves)
            if column is not None:
                return column
        return [_encode_leaf(c, v) for v in leaves]

    def close(self, policy: str) -> dict[str, Any]:
        pa = self.pa
        if not self.files:
            self._start_part()  # an empty steps file still carries the schema
        self._finish_part()
        ep_schema = pa.schema(
            [
                pa.field("episode_id", pa.int64(), nullable=False),
                pa.field("session", pa.utf8(), nullable=False),
                pa.field("server", pa.utf8(), nullable=False),
                pa.field("seed", pa.int64(), nullable=True),
                pa.field("steps", pa.int32(), nullable=False),
                pa.field("return", pa.float64(), nullable=False),
                pa.field("status", pa.utf8(), nullable=False),
                pa.field("reason", pa.utf8(), nullable=True),
                pa.field("file", pa.utf8(), nullable=False),
            ]
        )
        table = pa.Table.from_pylist(self._episodes, schema=ep_schema)
        with pa.ipc.new_file(str(self.dir / "episodes.arrow"), ep_schema) as w:
            w.write_table(table)
        manifest = {
            "format": DATASET_FORMAT,
            "version": DATASET_VERSION,
            "env_id": self.env_id,
            "env_kwargs": to_json_value(self.env_kwargs),
            "observation_space": to_json_value(space_to_wire(self.observation_space)),
            "action_space": to_json_value(space_to_wire(self.action_space)),
            "policy": policy,
            "servers": sorted(self.servers),
            "sessions": len(self.sessions),
            "columns": {
                f"{prefix}{c.path}": {"encoding": c.encoding, "dtype": c.dtype, "shape": c.shape}
                for prefix, plans in (("obs", self.obs_cols), ("action", self.act_cols), ("extras", self.extra_cols or []))
                for c in plans
            },
            "steps_files": self.files,
            "episodes_file": "episodes.arrow",
            "counts": self.counts,
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        (self.dir / "dataset.json").write_text(json.dumps(manifest, indent=2))
        return manifest


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass
class Dataset:
    """A dataset directory read back: the manifest and the steps and episodes tables (pyarrow)."""

    root: Path
    manifest: dict[str, Any]
    steps: Any
    episodes: Any

    @property
    def observation_space(self) -> gs.Space[Any]:
        return space_from_wire(from_json_value(self.manifest["observation_space"]))

    @property
    def action_space(self) -> gs.Space[Any]:
        return space_from_wire(from_json_value(self.manifest["action_space"]))

    def column(self, name: str) -> Any:
        return decode_column(self.steps, name)

    def columns_with_prefix(self, prefix: str) -> dict[str, Any]:
        """``{"": array}`` for a single column, or ``{"<path>": array}`` for a Dict/Tuple space's leaves."""
        out = {}
        for f in self.steps.schema:
            if f.name == prefix or f.name.startswith(prefix + "."):
                out[f.name[len(prefix) + 1 :]] = self.column(f.name)
        return out


def load_dataset(root: str | Path) -> Dataset:
    """Reads a dataset written by gymwire (Python or TypeScript)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    root = Path(root)
    manifest = json.loads((root / "dataset.json").read_text())
    if manifest.get("format") != DATASET_FORMAT or manifest.get("version") != DATASET_VERSION:
        raise ValueError(f"{root} is not a {DATASET_FORMAT} v{DATASET_VERSION} dataset: {manifest.get('format')} v{manifest.get('version')}")
    steps = pa.concat_tables([ipc.open_file(str(root / f)).read_all() for f in manifest["steps_files"]])
    episodes = ipc.open_file(str(root / manifest["episodes_file"])).read_all()
    return Dataset(root, manifest, steps, episodes)


def decode_column(table: Any, name: str) -> Any:
    """A column as numpy: raw -> ``[N, *shape]`` (nulls as zeros), scalar -> ``[N]``, json -> list, png/jpeg -> list of bytes."""
    field_ = table.schema.field(name)
    md = {k.decode(): v.decode() for k, v in (field_.metadata or {}).items()}
    enc = md.get("gymwire.encoding")
    dtype = md.get("gymwire.dtype") or None
    shape = json.loads(md.get("gymwire.shape", "[]"))
    column = table.column(name)
    if enc == "raw":
        return _raw_rows(column, np.dtype(dtype), tuple(shape))
    if enc == "scalar":
        values = column.fill_null(0).to_numpy() if len(column) else np.zeros(0, dtype=dtype)
        return values.astype(dtype, copy=False) if dtype else values
    values = column.to_pylist()
    if enc == "json":
        return [None if v is None else from_json_value(json.loads(v)) for v in values]
    return values


def _raw_rows(column: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A binary column of fixed-size tensors as ``[N, *shape]`` (nulls as zeros).

    Reads each chunk's offsets and data buffers directly: when every present row holds exactly one
    tensor's bytes and null rows hold none (as both writers write them), the present rows are one
    contiguous run of bytes and become a single reshaped copy instead of one array per row.
    """
    import pyarrow as pa

    item = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    out = np.zeros((len(column), *shape), dtype=dtype)
    row = 0
    for chunk in column.chunks:
        m = len(chunk)
        if m == 0:
            continue
        _validity, offsets_buf, data_buf = chunk.buffers()
        wide = pa.types.is_large_binary(chunk.type)
        offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32, count=m + 1, offset=chunk.offset * (8 if wide else 4))
        lengths = np.diff(offsets)
        present = chunk.is_valid().to_numpy(zero_copy_only=False) if chunk.null_count else np.ones(m, dtype=bool)
        if (lengths[present] == item).all() and (lengths[~present] == 0).all():
            n = int(present.sum())
            data = np.frombuffer(data_buf, dtype=np.uint8, count=n * item, offset=int(offsets[0])) if n else np.zeros(0, np.uint8)
            block = data.view(dtype).reshape(n, *shape)
            if n == m:
                out[row : row + m] = block
            else:
                out[row : row + m][present] = block
        else:  # rows of other sizes: let numpy say which one does not fit
            for i, b in enumerate(chunk.to_pylist()):
                if b is not None:
                    out[row + i] = np.frombuffer(b, dtype=dtype).reshape(shape)
        row += m
    return out


def iter_episodes(ds: Dataset) -> Iterator[tuple[int, slice]]:
    """``(episode_id, row slice)`` for each episode, in row order (rows of an episode are contiguous)."""
    ids = ds.steps.column("episode_id").to_numpy()
    if len(ids) == 0:
        return
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    for s, e in zip(starts, ends, strict=True):
        yield int(ids[s]), slice(int(s), int(e))


def episodes_to_arrays(ds: Dataset, max_len: int | None = None) -> dict[str, Any]:
    """Padded ``[E, T, ...]`` arrays of every episode: obs leaves, actions, rewards, flags, log-probs, values, mask.

    Keys: ``obs`` (or ``obs.<path>`` per leaf), ``actions`` (or ``actions.<path>``), ``extras/<name>``, ``rewards``
    float32, ``terminated``/``truncated``/``dones`` bool, ``log_probs``/``values`` float32 (0 where
    null), ``mask`` bool (True on real steps), ``lengths`` int64 ``[E]``, ``returns`` float32 ``[E]``,
    ``episode_ids`` int64 ``[E]``. Only raw and scalar columns are included (json/image columns are
    left to the caller through :meth:`Dataset.column`).
    """
    eps = list(iter_episodes(ds))
    lengths = np.array([s.stop - s.start for _, s in eps], dtype=np.int64)
    T = int(max_len or (lengths.max() if len(lengths) else 0))
    E_ = len(eps)

    def pad(col: np.ndarray, dtype: Any = None) -> np.ndarray:
        out = np.zeros((E_, T, *col.shape[1:]), dtype=dtype or col.dtype)
        for e, (_, s) in enumerate(eps):
            k = min(s.stop - s.start, T)
            out[e, :k] = col[s.start : s.start + k]
        return out

    result: dict[str, Any] = {}
    for f in ds.steps.schema:
        md = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        if md.get("gymwire.encoding") not in ("raw", "scalar"):
            continue
        for prefix, key in (("obs", "obs"), ("action", "actions"), ("final_obs", None)):
            if key and (f.name == prefix or f.name.startswith(prefix + ".")):
                result[key + f.name[len(prefix) :]] = pad(decode_column(ds.steps, f.name))
        if f.name.startswith("extras/"):
            result[f.name] = pad(decode_column(ds.steps, f.name))
    rewards = ds.steps.column("reward").to_numpy()
    term = ds.steps.column("terminated").to_numpy(zero_copy_only=False)
    trunc = ds.steps.column("truncated").to_numpy(zero_copy_only=False)
    logp = np.nan_to_num(ds.steps.column("log_prob").to_numpy(zero_copy_only=False).astype(np.float64))
    values = np.nan_to_num(ds.steps.column("value").to_numpy(zero_copy_only=False).astype(np.float64))
    mask = np.zeros((E_, T), dtype=np.bool_)
    for e, n in enumerate(lengths):
        mask[e, : min(int(n), T)] = True
    result.update(
        rewards=pad(rewards, np.float32),
        terminated=pad(term, np.bool_),
        truncated=pad(trunc, np.bool_),
        log_probs=pad(logp, np.float32),
        values=pad(values, np.float32),
        mask=mask,
        lengths=lengths,
        episode_ids=np.array([i for i, _ in eps], dtype=np.int64),
    )
    result["dones"] = result["terminated"] | result["truncated"]
    result["returns"] = result["rewards"].sum(axis=1)
    return result
