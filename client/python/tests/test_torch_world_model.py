"""Torch world models served as ``gymwire/TorchWorldModel-v0`` (``gymwire serve --torch-world-model``):
a seeded tiny ``nn.Module`` (gymwire.worldmodel.models) run by a real server's own worker on the CPU,
stepped by several real client connections at once.

Covers: batched steps equal the same sessions stepped one by one, bit for bit (in process, and
through the server with steps of many connections sharing forward passes); a NaN output or a
raising forward pass fails only its own session and leaves its state as it was; the device-memory
budget refuses a make with ENV_ERR_MEMORY_BUDGET; a client with one session is not starved by a
client stepping many; /metrics shows batch sizes, queue wait, forward time and the device.

Torch-marked: ``client/python/scripts/test-torch.sh`` runs these.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ServerProcess

import gymwire
from gymwire.errors import ServerError

# Each server loads torch and the model before it listens: slow on a loaded 2-core machine.
pytestmark = [pytest.mark.torch, pytest.mark.timeout(600)]
torch = pytest.importorskip("torch", reason="torch is not installed in this venv: client/python/scripts/test-torch.sh runs the torch tests")

from gymwire.worldmodel import TorchWorldModelEnv, WorldModelDeviceError, WorldModelMemoryError  # noqa: E402
from gymwire.worldmodel.host import model_host  # noqa: E402

TINY = "gymwire.worldmodel.models:tiny_world_model"
ENV_ID = "gymwire/TorchWorldModel-v0"
TESTS = Path(__file__).resolve().parent
FAULTS = {"fault_nan_at": 0.95, "fault_raise_at": -0.95}
FAULT_KWARGS = '{"fault_nan_at": 0.95, "fault_raise_at": -0.95}'


def serve_tiny(*args: str) -> ServerProcess:
    """A server whose world-model worker runs this venv's python (it has torch)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GYMWIRE_PYTHON", sys.executable)
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
        # The server loads the model before it listens (torch's import and first calls can take a
        # minute on a loaded machine): generous start and worker timeouts.
        return ServerProcess("--torch-world-model", TINY, "--torch-world-model-device", "cpu", "--worker-timeout", "300s", *args, start_timeout=300)


def actions_for(session: int, steps: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1000 + session)
    return [rng.uniform(-0.9, 0.9, (4, 7)).astype(np.float32) for _ in range(steps)]


def one_by_one(seeds: list[int], steps: int, **model_kwargs: Any) -> list[list[tuple[Any, ...]]]:
    """Each session alone (batches of one), in this process: the reference."""
    out = []
    for seed in seeds:
        env = TorchWorldModelEnv(TINY, model_kwargs, device="cpu", max_batch=1, window_ms=0)
        obs, _ = env.reset(seed=seed)
        results = [(obs["full_image"], obs["state"], 0.0, None)]
        for action in actions_for(seed, steps):
            obs, reward, _, _, info = env.step(action)
            results.append((obs["full_image"], obs["state"], reward, info["rewards"]))
        env.close()
        out.append(results)
    return out


def assert_same(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    assert len(got) == len(want)
    for (frame, state, reward, rewards), (frame0, state0, reward0, rewards0) in zip(got, want, strict=True):
        assert np.array_equal(frame, frame0)
        assert np.array_equal(state, state0)
        assert reward == reward0
        if rewards0 is not None:
            assert np.array_equal(rewards, rewards0)


def scrape(server: ServerProcess) -> str:
    with urllib.request.urlopen(server.url.replace("ws://", "http://") + "/metrics") as r:
        return r.read().decode()


def metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)}{{[^}}]*}} ([0-9.e+-]+)$", text, re.M)
    assert m, f"{name} missing from /metrics"
    return float(m.group(1))


def test_batched_steps_equal_one_by_one_bit_for_bit_in_process() -> None:
    seeds = [0, 1, 2, 3, 4]
    want = one_by_one(seeds, 3)
    envs = [TorchWorldModelEnv(TINY, device="cpu", max_batch=3, window_ms=0) for _ in seeds]
    got: list[list[tuple[Any, ...]]] = []
    for env, seed in zip(envs, seeds, strict=True):
        obs, info = env.reset(seed=seed)
        assert info["device"] == "cpu"
        got.append([(obs["full_image"], obs["state"], 0.0, None)])
    host = envs[0].host
    for step in range(3):
        pending = [env.gymwire_submit_step(actions_for(seed, 3)[step]) for env, seed in zip(envs, seeds, strict=True)]
        while host.queue:
            host.flush()
        for results, d in zip(got, pending, strict=True):
            obs, reward, _, _, info = d.value
            results.append((obs["full_image"], obs["state"], reward, info["rewards"]))
        # Five steps, at most three a pass: a batch of three, then one of two.
        assert sorted(d.value[4]["world_model"]["batch_size"] for d in pending) == [2, 2, 3, 3, 3]
    for results, reference in zip(got, want, strict=True):
        assert_same(results, reference)


def test_device_is_reported_and_never_silently_replaced() -> None:
    env = TorchWorldModelEnv(TINY, device="auto")
    expected = "cpu" if not torch.cuda.is_available() else env.metadata["device"]
    assert env.metadata["device"] == expected
    assert env.metadata["device"].startswith("cuda") == torch.cuda.is_available()
    env.close()
    if not torch.cuda.is_available():
        with pytest.raises(WorldModelDeviceError, match="sees no CUDA device"):
            TorchWorldModelEnv(TINY, device="cuda")


def test_memory_budget_is_checked_at_make_in_process() -> None:
    with pytest.raises(WorldModelMemoryError, match="budget is 1000") as err:
        TorchWorldModelEnv(TINY, {"seed": 7}, device="cpu", memory_budget_bytes=1000)
    assert err.value.details["limit_bytes"] == 1000


@pytest.fixture(scope="module")
def served() -> Iterator[ServerProcess]:
    server = serve_tiny("--torch-world-model-batch-window", "30ms", "--torch-world-model-batch-size", "8", "--torch-world-model-kwargs", FAULT_KWARGS)
    yield server
    server.stop()


def lockstep(url: str, count: int, steps: int, act: Any) -> list[list[Any]]:
    """`count` client connections, one session each, stepping together (a barrier per step), each in its own thread."""
    barrier = threading.Barrier(count)
    out: list[list[Any]] = [[] for _ in range(count)]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            with gymwire.make(url, ENV_ID) as env:
                obs, _ = env.reset(seed=i)
                out[i].append((obs["full_image"], obs["state"], 0.0, None))
                for step in range(steps):
                    barrier.wait(timeout=60)
                    try:
                        obs, reward, _, _, info = env.step(act(i, step))
                        out[i].append((obs["full_image"], obs["state"], reward, info["rewards"], info["world_model"]))
                    except ServerError as e:
                        out[i].append(e)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return out


def test_many_clients_share_forward_passes_and_equal_one_by_one(served: ServerProcess) -> None:
    clients, steps = 6, 4
    got = lockstep(served.url, clients, steps, lambda i, step: actions_for(i, steps)[step])
    want = one_by_one(list(range(clients)), steps, **FAULTS)
    for results, reference in zip(got, want, strict=True):
        assert_same([r[:4] for r in results], reference)
    sizes = [r[4]["batch_size"] for results in got for r in results[1:]]
    assert max(sizes) > 1, f"steps of separate connections never shared a forward pass: {sizes}"
    assert {r[4]["device"] for results in got for r in results[1:]} == {"cpu"}
    text = scrape(served)
    batches = metric(text, "gymwire_world_model_batch_size_count")
    assert metric(text, "gymwire_world_model_batch_size_sum") / batches > 1
    assert metric(text, "gymwire_world_model_queue_wait_seconds_count") >= clients * steps
    assert metric(text, "gymwire_world_model_forward_seconds_count") == batches
    assert 'gymwire_world_model_device_info{env_id="gymwire/TorchWorldModel-v0",device="cpu"} 1' in text


def test_a_failing_session_fails_alone_and_keeps_its_state(served: ServerProcess) -> None:
    steps = 3
    # Step 1: session 0's model output is NaN, session 1's input makes the forward pass raise.
    faults = {(0, 1): 0.97, (1, 1): -0.97}

    def act(i: int, step: int) -> np.ndarray:
        a = actions_for(i, steps + 1)[step].copy()
        if (i, step) in faults:
            a[0, 0] = faults[(i, step)]
        return a

    got = lockstep(served.url, 3, steps + 1, act)
    assert isinstance(got[0][2], ServerError) and got[0][2].code == "ENV_ERR_ENV_FAILURE" and "NaN" in got[0][2].message
    assert isinstance(got[1][2], ServerError) and got[1][2].code == "ENV_ERR_ENV_FAILURE" and "fault injected" in got[1][2].message
    # The healthy session never noticed; the failed steps changed nothing, so the next steps equal
    # a session that never sent them (its actions shifted by one).
    want = one_by_one([0, 1, 2], steps + 1, **FAULTS)
    assert_same([r[:4] for r in got[2]], want[2])
    for i in (0, 1):
        shifted = [r[:4] for j, r in enumerate(got[i]) if j != 2]
        alone = TorchWorldModelEnv(TINY, FAULTS, device="cpu", max_batch=1, window_ms=0)
        obs, _ = alone.reset(seed=i)
        reference = [(obs["full_image"], obs["state"], 0.0, None)]
        for step in (0, 2, 3):
            obs, reward, _, _, info = alone.step(act(i, step))
            reference.append((obs["full_image"], obs["state"], reward, info["rewards"]))
        alone.close()
        assert_same(shifted, reference)


def test_bad_action_is_refused_with_a_typed_error(served: ServerProcess) -> None:
    with gymwire.make(served.url, ENV_ID) as env:
        env.reset(seed=0)
        with pytest.raises(ServerError) as err:
            env.step(np.full((4, 7), np.nan, np.float32))
        assert err.value.code == "ENV_ERR_INVALID_ACTION"
        env.step(np.zeros((4, 7), np.float32))


def test_memory_budget_refuses_the_make_past_it() -> None:
    host = model_host(TINY, {}, device="cpu", max_batch=4, window_ms=2, memory_budget_bytes=None)
    budget = host.need_bytes(2)
    server = serve_tiny("--torch-world-model-batch-size", "4", "--torch-world-model-memory-budget", str(budget))
    try:
        with gymwire.Client(server.url) as client:
            first, second = client.make(ENV_ID), client.make(ENV_ID)
            with pytest.raises(ServerError) as err:
                client.make(ENV_ID)
            assert err.value.code == "ENV_ERR_MEMORY_BUDGET"
            assert f"budget is {budget}" in err.value.message
            # The two sessions are unharmed, and closing one makes room.
            second.close()
            third = client.make(ENV_ID)
            for env in (first, third):
                env.reset(seed=0)
                env.step(np.zeros((4, 7), np.float32))
    finally:
        server.stop()


def test_a_client_with_one_session_is_not_starved_by_one_stepping_many(served: ServerProcess) -> None:
    rounds = 4
    done = threading.Event()
    counts = {"many": 0, "one": 0}

    def many() -> None:
        vec = gymwire.make_vec(served.url, ENV_ID, 12)
        try:
            vec.reset(seed=0)
            for _ in range(rounds):
                vec.step(np.zeros((12, 4, 7), np.float32))
                counts["many"] += 1
        finally:
            done.set()
            vec.close()

    def one() -> None:
        with gymwire.make(served.url, ENV_ID) as env:
            env.reset(seed=0)
            while not done.is_set():
                _, _, terminated, truncated, _ = env.step(np.zeros((4, 7), np.float32))
                counts["one"] += 1
                if terminated or truncated:
                    env.reset()

    threads = [threading.Thread(target=one), threading.Thread(target=many)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    # Twelve sessions need two passes of eight per vector step; first come, first served puts the
    # lone session's step in line with them, so it steps about as often as each of the twelve.
    assert counts["many"] == rounds, counts
    assert counts["one"] >= rounds // 2, counts
    assert metric(scrape(served), "gymwire_world_model_batch_size_count") > 0
