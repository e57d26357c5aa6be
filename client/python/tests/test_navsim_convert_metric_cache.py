"""gymwire.navsim_convert on a NAVSIM v2 metric cache written by scripts/navsim/metric_cache_fixture.py.

NAVSIM's devkit is not on PyPI: the script writes the cache as ``MetricCache.dump`` does (an
lzma-compressed pickle) with classes that mirror NAVSIM's and nuPlan's module paths, names,
attributes and pickling. The cache is of scene tok003 of scripts/navsim/openscene_fixture.py, so the
scene read from it must equal the one converted from the OpenScene log where the cache holds the
same facts, and a real server must serve and score it.
"""

from __future__ import annotations

import io
import json
import lzma
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from navsim_served import assert_humans_drive_cleanly

from gymwire.navsim_convert import ConversionError, _MetricCacheUnpickler, convert_logs, convert_metric_cache, main, read_metric_cache

SCRIPTS = REPO / "scripts" / "navsim"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("navsim-cache")
    subprocess.run([sys.executable, str(SCRIPTS / "openscene_fixture.py"), str(root)], check=True)
    subprocess.run([sys.executable, str(SCRIPTS / "metric_cache_fixture.py"), str(root / "metric_cache")], check=True)
    return root


@pytest.fixture(scope="module")
def from_cache(data: Path) -> dict:
    out = data / "served" / "from-cache"
    written = convert_metric_cache(data / "metric_cache", data / "maps", out)
    assert [p.name for p in written] == ["tok003.json"]
    return json.loads(written[0].read_text())


@pytest.fixture(scope="module")
def from_log(data: Path) -> dict:
    convert_logs(data / "navsim_logs" / "test", data / "maps", data / "from-log")
    return json.loads((data / "from-log" / "tok003.json").read_text())


def test_the_cache_gives_the_logs_scene_where_it_holds_the_same_facts(from_cache: dict, from_log: dict) -> None:
    for field in ("name", "timestamp_us", "scene_type", "route_roadblock_ids", "map", "human_trajectory"):
        assert from_cache[field] == from_log[field], field
    assert from_cache["ego"] == pytest.approx(from_log["ego"])
    assert [h["t"] for h in from_cache["ego_history"]] == [-1.5, -1.0, -0.5]
    for cached, logged in zip(from_cache["ego_history"], from_log["ego_history"], strict=True):
        assert cached == pytest.approx(logged)
    cached_agents = {a["token"]: a for a in from_cache["agents"]}
    logged_agents = {a["token"]: a for a in from_log["agents"]}
    assert sorted(cached_agents) == ["cone", "lead"]
    lead = cached_agents["lead"]
    assert (lead["type"], lead["length"], lead["width"], lead["height"]) == ("vehicle", 4.6, 2.0, 1.6)
    # The cache holds NAVSIM v2's 4 s at 0.1 s (41 states); the log's scene runs to 5 s.
    assert len(lead["states"]) == 41
    for cached, logged in zip(lead["states"], logged_agents["lead"]["states"][:41], strict=True):
        assert cached == pytest.approx(logged)
    assert cached_agents["cone"]["type"] == "traffic_cone" and cached_agents["cone"]["states"][0][4:] == [0.0, 0.0]


def test_red_lights_come_from_pdm_observation_and_only_on_the_route(from_cache: dict) -> None:
    # Connector 121 is red for the 2 Hz frames 3..9 (t < 3.5 s); green lights are not in the cache.
    assert from_cache["traffic_lights"] == [{"t": 0.0, "red": ["121"], "green": []}, {"t": 3.5, "red": [], "green": []}]


def test_the_command_line_converts_a_cache_folder(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--metric-cache", str(data / "metric_cache"), "--maps", str(data / "maps"), "--out", str(tmp_path / "out")]) == 0
    assert "wrote 1 scenes" in capsys.readouterr().out
    assert (tmp_path / "out" / "tok003.json").is_file()


def _cache_file(tmp_path: Path, obj: object) -> Path:
    path = tmp_path / "log" / "unknown" / "tok" / "metric_cache.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), preset=0))
    return path


class _Runs:
    """Would run a shell command when unpickled by a plain pickle.load."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return os.system, (f"touch {self.marker}",)


def test_bad_caches_are_refused_naming_the_file_and_nothing_in_them_runs(tmp_path: Path) -> None:
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"not": "compressed"}))
    with pytest.raises(ConversionError, match="plain.pkl: not a NAVSIM metric cache"):
        read_metric_cache(plain)
    with pytest.raises(ConversionError, match="holds dict, not NAVSIM's MetricCache"):
        read_metric_cache(_cache_file(tmp_path / "a", {"x": np.zeros(2)}))
    marker = tmp_path / "ran"
    with pytest.raises(ConversionError, match="not NAVSIM's MetricCache"):
        read_metric_cache(_cache_file(tmp_path / "b", _Runs(marker)))
    assert not marker.exists()


def test_numpy_1_pickles_load_without_numpys_deprecation_warning(tmp_path: Path) -> None:
    """NAVSIM pins numpy 1.x, whose array pickles name numpy.core.multiarray."""
    import warnings

    legacy = pickle.dumps(np.arange(3.0), protocol=3).replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")
    assert b"cnumpy.core.multiarray\n_reconstruct" in legacy
    path = tmp_path / "legacy.pkl"
    path.write_bytes(lzma.compress(legacy))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConversionError, match="holds ndarray, not NAVSIM's MetricCache"):
            read_metric_cache(path)
        # Protocol-5 array pickles name numpy.core.numeric._frombuffer, which numpy 2 warns about.
        assert _MetricCacheUnpickler(io.BytesIO()).find_class("numpy.core.numeric", "_frombuffer") is np._core.numeric._frombuffer


def test_a_v1_cache_is_refused_saying_why(tmp_path: Path) -> None:
    """NAVSIM v1.1's MetricCache holds PDM's occupancy maps but no tracked objects."""
    script = f"""
import lzma, pickle, sys, types, dataclasses
for name in ("navsim", "navsim.planning", "navsim.planning.metric_caching", "navsim.planning.metric_caching.metric_cache"):
    sys.modules[name] = types.ModuleType(name)
@dataclasses.dataclass
class MetricCache:
    file_path: str
    trajectory: object
    ego_state: object
    observation: object
    centerline: object
    route_lane_ids: list
    drivable_area_map: object
MetricCache.__module__ = "navsim.planning.metric_caching.metric_cache"
sys.modules[MetricCache.__module__].MetricCache = MetricCache
open({str(tmp_path / "v1.pkl")!r}, "wb").write(lzma.compress(pickle.dumps(MetricCache("f", None, None, None, None, [], None), protocol=5)))
"""
    subprocess.run([sys.executable, "-c", script], check=True)
    with pytest.raises(ConversionError, match="a NAVSIM v1 metric cache .* gymwire reads v2 caches"):
        read_metric_cache(tmp_path / "v1.pkl")


def test_the_scene_from_a_cache_is_served_and_scored(from_cache: dict, data: Path) -> None:
    """A real server serves the converted folder; the logged human drives it cleanly under NAVSIM v2."""
    assert_humans_drive_cleanly(data / "served", "from-cache", {"tok003": from_cache["human_trajectory"]["poses"]})
