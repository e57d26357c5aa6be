"""The Python SDK against its floors, all measured in the same run on the same servers:

- sequential CartPole step p50: the sync Client on its socket transport and on its asyncio transport,
  against the TypeScript client (test/bench/python-peer.ts) and a bare Python WebSocket echo of the
  same bytes (request and answer sizes of a step) with each client library at hand, the fastest
  one being the floor;
- 224x224x3 uint8 observations, one session stepped back to back: MB/s against the TypeScript client;
- 512 CartPole sessions stepped concurrently from one process (one asyncio task per session on an
  AsyncClient): steps/s against the TypeScript client doing the same.

Servers are `test/bench/server-process.ts` children, bundled and run on plain node as a deployment
runs the server (bench_server.built_server_process; the gymwire server with the bench envs, and the
bare ws echo), pinned to core 1; this process and the TypeScript peer run on core 0
(test/bench/placement.ts; BENCH_NO_PIN=1 leaves placement to the scheduler). Rounds alternate
between the sides so machine drift hits them alike.

Run: client/python/.venv/bin/python test/bench/python_wire.bench.py [--quick] [--only seq,image,concurrent]
Prints JSON lines {"bench", "metric", "value", "unit", ...}; make_vec(16) against AsyncVectorEnv(16)
is test/bench/python_vec.bench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "client" / "python" / "src"))

import gymwire  # noqa: E402
from gymwire.codec import pack  # noqa: E402

from bench_server import built_server_process  # noqa: E402

PINNED = not os.environ.get("BENCH_NO_PIN") and (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
CLIENT_CORE, SERVER_CORE = 0, 1
FRAME_BYTES = 224 * 224 * 3


def emit(bench: str, metric: str, value: float, unit: str, **extra: Any) -> None:
    print(json.dumps({"bench": bench, "metric": metric, "value": round(value, 3), "unit": unit, **extra}), flush=True)


def on_core(core: int, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *cmd] if PINNED else cmd


def node_tsx(script: str, *args: str) -> list[str]:
    return ["node", "--import", "tsx", str(REPO / "test" / "bench" / script), *args]


class Server:
    """A server-process.ts child, built as deployed: 'gymwire' (bench envs) or 'echo' (answers with as many bytes as the first 4 bytes ask)."""

    def __init__(self, kind: str) -> None:
        self.proc = subprocess.Popen(on_core(SERVER_CORE, built_server_process(kind, "ws")), cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url: str = json.loads(self.proc.stdout.readline())["url"]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def ts_peer(*args: str) -> dict[str, float]:
    out = subprocess.run(on_core(CLIENT_CORE, node_tsx("python-peer.ts", *args)), cwd=REPO, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"python-peer.ts {args[0]} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def p(sorted_times: list[float], q: float) -> float:
    return sorted_times[min(len(sorted_times) - 1, int(q * len(sorted_times)))]


def spread(values: list[float]) -> list[float]:
    s = sorted(values)
    return [round(s[0], 1), round(statistics.median(s), 1), round(s[-1], 1)]


# -- sequential round trips ------------------------------------------------------------------------


def sdk_steps(env: gymwire.GymwireEnv, n: int) -> list[float]:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(i % 2)
        times.append(time.perf_counter() - t0)
        if terminated or truncated:
            env.reset()
    return times


def step_frame_sizes(url: str) -> tuple[bytes, int]:
    """A real step request frame (its first 4 bytes overwritten with the answer size for the echo) and the answer's size."""
    with gymwire.Client(url, transport="socket") as client:
        env = client.make("gymwire/CartPole-v1")
        env.reset(seed=0)
        request = pack({"session_id": env.session_id, "action": 1, "id": 10, "type": "step", "ack": 9})
        answer = client.request("step", {"session_id": env.session_id, "action": 1})
        reply = pack({"id": 10, "type": "result", "result": answer})
    return struct.pack("<I", len(reply)) + request[4:], len(reply)


def echo_clients(url: str, request: bytes) -> dict[str, Callable[[int], list[float]]]:
    """Bare echo round trips of ``request`` with each WebSocket client library available here."""
    clients: dict[str, Callable[[int], list[float]]] = {}
    from websockets.sync.client import connect as sync_connect

    sync_ws = sync_connect(url, compression=None, max_size=None)

    def websockets_sync(n: int) -> list[float]:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            sync_ws.send(request)
            sync_ws.recv()
            times.append(time.perf_counter() - t0)
        return times

    clients["websockets.sync"] = websockets_sync

    from websockets.asyncio.client import connect as async_connect

    loop = asyncio.new_event_loop()
    async_ws = loop.run_until_complete(async_connect(url, compression=None, max_size=None))

    def websockets_asyncio(n: int) -> list[float]:
        async def run() -> list[float]:
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                await async_ws.send(request)
                await async_ws.recv()
                times.append(time.perf_counter() - t0)
            return times

        return loop.run_until_complete(run())

    clients["websockets.asyncio"] = websockets_asyncio

    from gymwire._transport_socket import SocketWebSocket

    raw = SocketWebSocket.connect(url, 10)

    def gymwire_socket(n: int) -> list[float]:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            raw.send(request)
            raw.recv()
            times.append(time.perf_counter() - t0)
        return times

    clients["gymwire._transport_socket"] = gymwire_socket
    return clients


def sequential(quick: bool) -> None:
    rounds, per_round = (2, 2000) if quick else (5, 5000)
    server, echo = Server("gymwire"), Server("echo")
    try:
        request, reply_size = step_frame_sizes(server.url)
        sides = {name: gymwire.Client(server.url, transport=name) for name in ("socket", "asyncio")}
        envs = {name: c.make("gymwire/CartPole-v1") for name, c in sides.items()}
        for env in envs.values():
            env.reset(seed=0)
            sdk_steps(env, per_round)  # warm-up
        echoes = echo_clients(echo.url, request)
        for run in echoes.values():
            run(per_round)
        times: dict[str, list[float]] = {name: [] for name in [*envs, *echoes]}
        medians: dict[str, list[float]] = {name: [] for name in [*envs, *echoes, "ts"]}
        for _ in range(rounds):
            for name, env in envs.items():
                mine = sdk_steps(env, per_round)
                times[name] += mine
                medians[name].append(statistics.median(mine) * 1e6)
            for name, run in echoes.items():
                theirs = run(per_round)
                times[name] += theirs
                medians[name].append(statistics.median(theirs) * 1e6)
            medians["ts"].append(ts_peer("seq", server.url, str(per_round))["p50_us"])
        for c in sides.values():
            c.close()
    finally:
        server.stop()
        echo.stop()
    p50 = {name: p(sorted(t), 0.5) * 1e6 for name, t in times.items()}
    ts_p50 = statistics.median(medians["ts"])
    floor_name = min(echoes, key=lambda name: p50[name] if name != "gymwire._transport_socket" else float("inf"))
    for name in echoes:
        emit(
            "python_echo_rtt",
            "p50",
            p50[name],
            "us",
            library=name,
            request_bytes=len(request),
            reply_bytes=reply_size,
            round_p50s_min_median_max=spread(medians[name]),
        )
    for name in envs:
        emit(
            "python_step_rtt",
            "p50",
            p50[name],
            "us",
            transport=name,
            p99_us=round(p(sorted(times[name]), 0.99) * 1e6, 1),
            round_p50s_min_median_max=spread(medians[name]),
            ts_p50_us=round(ts_p50, 1),
            ratio_vs_ts=round(p50[name] / ts_p50, 2),
            echo_floor_library=floor_name,
            echo_floor_p50_us=round(p50[floor_name], 1),
            ratio_vs_echo=round(p50[name] / p50[floor_name], 2),
            target_ratio_vs_ts=1.5,
            target_ratio_vs_echo=1.2,
        )
    emit("python_step_rtt", "ts_p50", ts_p50, "us", round_p50s_min_median_max=spread(medians["ts"]))


# -- 224x224x3 frames ------------------------------------------------------------------------------


def image_round(env: gymwire.GymwireEnv, seconds: float) -> float:
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(0)
        steps += 1
    return steps * FRAME_BYTES / (time.perf_counter() - start) / 1e6


def images(quick: bool) -> None:
    rounds, seconds = (2, 1.0) if quick else (5, 2.0)
    server = Server("gymwire")
    try:
        sides = {name: gymwire.Client(server.url, transport=name) for name in ("socket", "asyncio")}
        envs = {name: c.make("bench/Image-v0") for name, c in sides.items()}
        for env in envs.values():
            env.reset()
            image_round(env, 0.3)
        mbs: dict[str, list[float]] = {name: [] for name in [*envs, "ts"]}
        for _ in range(rounds):
            for name, env in envs.items():
                mbs[name].append(image_round(env, seconds))
            mbs["ts"].append(ts_peer("image", server.url, str(seconds))["mb_s"])
        for c in sides.values():
            c.close()
    finally:
        server.stop()
    ts = statistics.median(mbs["ts"])
    for name in envs:
        mine = statistics.median(mbs[name])
        emit(
            "python_image_224",
            "throughput",
            mine,
            "MB/s",
            transport=name,
            rounds_min_median_max=spread(mbs[name]),
            ts_mb_s=round(ts, 1),
            ratio_vs_ts=round(mine / ts, 2),
            target_ratio=0.6,
        )
    emit("python_image_224", "ts_throughput", ts, "MB/s", rounds_min_median_max=spread(mbs["ts"]))


# -- 512 concurrent sessions -----------------------------------------------------------------------


async def concurrent_round(url: str, sessions: int, seconds: float) -> float:
    client = await gymwire.AsyncClient.connect(url)
    envs = await asyncio.gather(*(client.make("gymwire/CartPole-v1") for _ in range(sessions)))
    await asyncio.gather(*(env.reset(seed=0) for env in envs))
    counting = False
    stop = False
    steps = 0

    async def loop(env: Any) -> None:
        nonlocal steps
        while not stop:
            _, _, terminated, truncated, _ = await env.step(1)
            if counting:
                steps += 1
            if terminated or truncated:
                await env.reset()

    tasks = [asyncio.ensure_future(loop(env)) for env in envs]
    await asyncio.sleep(0.5)
    counting = True
    start = time.perf_counter()
    await asyncio.sleep(seconds)
    counted, elapsed = steps, time.perf_counter() - start
    stop = True
    await asyncio.gather(*tasks)
    await client.close_all()
    return counted / elapsed


def concurrent(quick: bool, sessions: int = 512) -> None:
    rounds, seconds = (2, 1.5) if quick else (4, 3.0)
    server = Server("gymwire")
    mine: list[float] = []
    theirs: list[float] = []
    try:
        for _ in range(rounds):
            mine.append(asyncio.run(concurrent_round(server.url, sessions, seconds)))
            theirs.append(ts_peer("concurrent", server.url, str(sessions), str(seconds))["steps_per_s"])
    finally:
        server.stop()
    m, t = statistics.median(mine), statistics.median(theirs)
    emit(
        f"python_concurrent_{sessions}",
        "steps_per_s",
        m,
        "steps/s",
        rounds_min_median_max=spread(mine),
        ts_steps_per_s=round(t, 1),
        ratio_vs_ts=round(m / t, 2),
        target_ratio=0.5,
    )
    emit(f"python_concurrent_{sessions}", "ts_steps_per_s", t, "steps/s", rounds_min_median_max=spread(theirs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="seq,image,concurrent")
    args = parser.parse_args()
    if PINNED:
        os.sched_setaffinity(0, {CLIENT_CORE})
    only = set(args.only.split(","))
    if "seq" in only:
        sequential(args.quick)
    if "image" in only:
        images(args.quick)
    if "concurrent" in only:
        concurrent(args.quick)


if __name__ == "__main__":
    main()
