"""gymwire.collect writes the docs/datasets.md format; the Python and TypeScript readers agree on it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.ipc as ipc
import pytest
from conftest import REPO

import gymwire
from gymwire.dataset import episodes_to_arrays, from_json_value, load_dataset, to_json_value
from gymwire.policies import make_policy


def test_json_values_follow_the_documented_encoding() -> None:
    v = {"t": np.array([[1.5, np.inf]], np.float32), "b": b"\x00\x01", "big": 2**60, "nan": float("nan")}
    j = to_json_value(v)
    assert j["t"] == {"__tensor__": {"dtype": "float32", "shape": [1, 2], "data": [1.5, "inf"]}}
    assert j["b"] == {"__bytes__": "AAE="} and j["big"] == str(2**60) and j["nan"] == "nan"
    back = from_json_value(j)
    assert back["t"].dtype == np.float32 and np.isinf(back["t"][0, 1]) and back["b"] == b"\x00\x01"


def test_collect_single_env_writes_a_readable_dataset(url: str, tmp_path: Path) -> None:
    env = gymwire.make(url, "gymwire/CartPole-v1")
    try:
        policy = make_policy("random", action_space=env.action_space, seed=0)
        manifest = gymwire.collect(env, policy, episodes=3, out_dir=tmp_path, seed=5)
    finally:
        env.close()
    assert manifest["counts"]["episodes"] == 3 and manifest["counts"]["terminated"] + manifest["counts"]["truncated"] == 3
    assert manifest["columns"]["obs"] == {"encoding": "raw", "dtype": "float32", "shape": [4]}
    assert manifest["columns"]["action"] == {"encoding": "scalar", "dtype": "int64", "shape": []}
    table = ipc.open_file(str(tmp_path / "steps-00000.arrow")).read_all()
    md = table.schema.metadata
    assert md[b"gymwire.format"] == b"gymwire.trajectories" and md[b"gymwire.version"] == b"1"
    ds = load_dataset(tmp_path)
    obs = ds.column("obs")
    assert obs.dtype == np.float32 and obs.shape == (manifest["counts"]["steps"], 4)
    assert ds.observation_space == env.observation_space
    arrays = episodes_to_arrays(ds)
    assert arrays["obs"].shape[:2] == arrays["mask"].shape == (3, int(arrays["lengths"].max()))
    assert np.allclose(arrays["log_probs"][arrays["mask"]], -np.log(2))
    assert arrays["dones"][np.arange(3), arrays["lengths"] - 1].all()
    finals = ds.column("final_obs")
    last_rows = np.cumsum(arrays["lengths"]) - 1
    assert np.abs(finals[last_rows]).sum() > 0
    # Episode 0 replays exactly from its seed.
    replay = gymwire.make(url, "gymwire/CartPole-v1")
    try:
        o, _ = replay.reset(seed=5)
        assert np.array_equal(o, arrays["obs"][0, 0])
        for t in range(int(arrays["lengths"][0])):
            o, r, *_ = replay.step(int(arrays["actions"][0, t]))
            if t + 1 < arrays["lengths"][0]:
                assert np.array_equal(o, arrays["obs"][0, t + 1])
    finally:
        replay.close()


def test_raw_columns_decode_in_bulk_like_row_by_row() -> None:
    import pyarrow as pa

    from gymwire.dataset import decode_column

    rng = np.random.default_rng(0)
    rows = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(50)]
    cells = [None if i % 7 == 3 else r.tobytes() for i, r in enumerate(rows)]
    meta = {b"gymwire.encoding": b"raw", b"gymwire.dtype": b"float32", b"gymwire.shape": b"[2, 3]"}
    expected = np.stack([np.zeros((2, 3), np.float32) if c is None else r for c, r in zip(cells, rows, strict=True)])
    for kind in (pa.binary(), pa.large_binary()):
        whole = pa.array(cells, type=kind)
        # Several chunks, one of them a slice (a nonzero offset into its buffers).
        column = pa.chunked_array([whole.slice(0, 20), whole.slice(20, 17), pa.array(cells[37:], type=kind)])
        table = pa.table({"obs": column}).cast(pa.schema([pa.field("obs", kind, metadata=meta)]))
        assert np.array_equal(decode_column(table, "obs"), expected)
    bad = pa.table({"obs": pa.array([rows[0].tobytes(), b"\x00" * 5], type=pa.binary())}).cast(pa.schema([pa.field("obs", pa.binary(), metadata=meta)]))
    with pytest.raises(ValueError):
        decode_column(bad, "obs")


def test_an_existing_dataset_is_refused_unless_overwrite(url: str, tmp_path: Path) -> None:
    env = gymwire.make(url, "gymwire/CartPole-v1")
    try:
        policy = make_policy("random", action_space=env.action_space, seed=0)
        gymwire.collect(env, policy, episodes=2, out_dir=tmp_path, seed=1)
        (tmp_path / "steps-00007.arrow").write_bytes(b"a stale part")
        (tmp_path / "notes.txt").write_text("mine")
        before = (tmp_path / "dataset.json").read_bytes()
        with pytest.raises(gymwire.DatasetExistsError, match="already holds a dataset"):
            gymwire.collect(env, policy, episodes=2, out_dir=tmp_path, seed=2)
        assert (tmp_path / "dataset.json").read_bytes() == before
        manifest = gymwire.collect(env, policy, episodes=2, out_dir=tmp_path, seed=2, overwrite=True)
    finally:
        env.close()
    assert manifest["counts"]["episodes"] == 2
    assert not (tmp_path / "steps-00007.arrow").exists() and (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_collect_vector_env_matches_episode_boundaries(url: str, tmp_path: Path, mode: str) -> None:
    envs = gymwire.make_vec(url, "gymwire/CartPole-v1", num_envs=4, autoreset_mode=mode)
    try:
        policy = make_policy("random", action_space=envs.single_action_space, num_envs=4, seed=1)
        manifest = gymwire.collect(envs, policy, episodes=6, out_dir=tmp_path, seed=0)
    finally:
        envs.close()
    ds = load_dataset(tmp_path)
    arrays = episodes_to_arrays(ds)
    assert manifest["counts"]["episodes"] == 6 and manifest["sessions"] <= 4
    for e, n in enumerate(arrays["lengths"]):
        assert arrays["dones"][e, n - 1] and not arrays["dones"][e, : n - 1].any()
        # Steps continue from one obs to the next: CartPole's x moves by at most tau * |x_dot|.
        o = arrays["obs"][e, :n]
        assert np.all(np.abs(np.diff(o[:, 0])) < 0.1)


def test_the_typescript_reader_reads_python_datasets(url: str, tmp_path: Path) -> None:
    env = gymwire.make(url, "gymwire/CartPole-v1")
    try:
        gymwire.collect(env, make_policy("random", action_space=env.action_space, seed=2), episodes=2, out_dir=tmp_path, seed=1)
    finally:
        env.close()
    out = subprocess.run(
        [str(REPO / "node_modules/.bin/tsx"), str(REPO / "client/python/tests/ts/read_dataset.ts"), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr
    ts = json.loads(out.stdout.strip().splitlines()[-1])
    ds = load_dataset(tmp_path)
    assert ts["rows"] == ds.steps.num_rows and ts["episodes"] == 2
    assert ts["obs"] == ds.column("obs").astype(np.float64).tolist()
    assert ts["action"] == ds.column("action").tolist()
    assert ts["reward"] == ds.steps.column("reward").to_pylist()


def test_dict_spaces_get_one_column_per_leaf(url: str, tmp_path: Path) -> None:
    env = gymwire.make(url, "gymwire/Conformance-v0")
    try:
        gymwire.collect(env, make_policy("random", action_space=env.action_space, seed=0), episodes=1, out_dir=tmp_path, seed=0)
    finally:
        env.close()
    ds = load_dataset(tmp_path)
    cols = ds.manifest["columns"]
    assert cols["obs.position"] == {"encoding": "raw", "dtype": "float32", "shape": [2]}
    assert cols["obs.discrete"]["encoding"] == "scalar" and cols["obs.text"]["encoding"] == "json"
    assert cols["obs.tuple.1"] == {"encoding": "raw", "dtype": "float32", "shape": [3]}
    assert ds.column("obs.box_uint64").dtype == np.uint64
    assert all(isinstance(t, str) for t in ds.column("obs.text"))


@pytest.mark.parametrize("env_id", ["gymwire/CartPole-v1", "gymwire/Conformance-v0"])
def test_python_and_typescript_writers_produce_the_same_schema(url: str, tmp_path: Path, env_id: str) -> None:
    """`gymwire rollout` (TypeScript) and gymwire.collect write the same columns, types and metadata."""
    ts_dir = tmp_path / "ts"
    out = subprocess.run(
        [
            "node",
            str(REPO / "bin/gymwire.js"),
            "rollout",
            "--url",
            url,
            "--env",
            env_id,
            "--sessions",
            "2",
            "--episodes",
            "3",
            "--out",
            str(ts_dir),
            "--no-progress",
            "--seed",
            "0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    ts = load_dataset(ts_dir)
    env = gymwire.make(url, env_id)
    try:
        gymwire.collect(env, make_policy("random", action_space=env.action_space, seed=0), episodes=1, out_dir=tmp_path / "py", seed=0)
    finally:
        env.close()
    py = load_dataset(tmp_path / "py")
    assert ts.manifest["columns"] == py.manifest["columns"]
    assert ts.observation_space == py.observation_space and ts.action_space == py.action_space
    for ts_field, py_field in zip(ts.steps.schema, py.steps.schema, strict=True):
        assert (ts_field.name, ts_field.type) == (py_field.name, py_field.type)
        assert (ts_field.metadata or {}) == (py_field.metadata or {}), ts_field.name
    assert ts.steps.schema.names == py.steps.schema.names
    assert ts.episodes.schema.names == py.episodes.schema.names
    for key in (b"gymwire.format", b"gymwire.version", b"gymwire.env_id"):
        assert ts.steps.schema.metadata[key] == py.steps.schema.metadata[key]
    arrays = episodes_to_arrays(ts)
    assert len(arrays["lengths"]) == ts.manifest["counts"]["episodes"] >= 3
