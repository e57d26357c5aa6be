"""Head to head with OpenEnv's released client (openenv-core) on the same work, in the same run:

- CartPole step round trip p50, one session, sequential: OpenEnv's `EnvClient` (its sync wrapper)
  against an OpenEnv server (`create_fastapi_app` under uvicorn) hosting Gymnasium's CartPole-v1,
  and the gymwire sync Client against `gymwire serve` (its built-in CartPole-v1);
- 224x224x3 uint8 observations, one session stepped back to back, pixels in hand as a numpy array:
  OpenEnv sending them as base64 text (its JSON wire has no binary type) against gymwire's tensors;
- 64 and 512 CartPole sessions stepped concurrently from this one process, steps/s: OpenEnv's async
  `EnvClient` (one client and WebSocket per session, as OpenEnv's sessions are, one asyncio task
  each, all on one event loop: the concurrency its async-by-default client is built for) against
  gymwire's `AsyncClient` (one connection, one asyncio task per session). Both sides' clients and
  sessions stay open over the rounds, which alternate between the sides. A third side, reported
  apart because it is another way to drive the sessions, steps the same number of gymwire sessions
  in lock step as one `gymwire.make_vec` (one `step_batch` frame per step of all of them).

The gymwire server is test/bench/server-process.ts bundled and run on plain node, as a deployment
runs the compiled server (bench_server.built_server_process); OpenEnv's runs under uvicorn.

openenv-core and its dependencies never enter the project's environments: on first run this script
creates a throwaway venv (default /tmp/gymwire-openenv-bench, `--venv` to choose) with
`pip install openenv-core==0.3.0` plus what the gymwire SDK imports, and re-runs itself there.

Run: python3 test/bench/python_openenv.bench.py [--steps 3000] [--seconds 3] [--rounds 3] [--only seq,image,concurrent]
     [--sessions 64,512] [--gymwire-src OTHER/client/python/src]
Prints JSON lines {"bench", "metric", "value", "unit", ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PINS = ["openenv-core==0.3.0", "gymnasium==1.3.0", "numpy==2.4.6", "msgpack==1.2.4", "websockets==17.4", "uvicorn==0.54.0"]
FRAME_SHAPE = (224, 224, 3)


def emit(metric: str, value: float, unit: str, **extra: Any) -> None:
    print(json.dumps({"bench": "python_openenv", "metric": metric, "value": round(value, 3), "unit": unit, **extra}), flush=True)


def ensure_venv(venv: Path) -> None:
    """Re-runs this script inside a venv that has openenv-core (made on first use)."""
    if os.environ.get("GYMWIRE_OPENENV_BENCH_VENV"):
        return  # already inside it (the OpenEnv server child inherits the variable)
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINS], check=True)
    env = {**os.environ, "GYMWIRE_OPENENV_BENCH_VENV": str(venv)}
    sys.exit(subprocess.run([str(python), __file__, *sys.argv[1:]], env=env).returncode)


# -- the OpenEnv side (imported only inside the throwaway venv) -----------------------------------


def openenv_types() -> tuple[Any, ...]:
    import gymnasium as gym
    import numpy as np
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class GymAction(Action):
        action: int

    class GymObservation(Observation):
        values: list[float] = []
        pixels: str = ""  # base64 of the raw frame: OpenEnv's wire is JSON

    class GymEnvironment(Environment):
        """Gymnasium's CartPole-v1, or a 224x224x3 frame per step (kind from GYMWIRE_OPENENV_KIND)."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.kind = os.environ.get("GYMWIRE_OPENENV_KIND", "cartpole")
            self.env = gym.make("CartPole-v1")
            self.frame = np.zeros(FRAME_SHAPE, np.uint8)
            self.steps = 0

        def _observe(self, values: Any, reward: float, done: bool) -> GymObservation:
            if self.kind == "image":
                self.frame[0, :, :] = self.steps & 0xFF
                return GymObservation(pixels=base64.b64encode(self.frame.tobytes()).decode("ascii"), reward=reward, done=done)
            return GymObservation(values=[float(v) for v in values], reward=reward, done=done)

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GymObservation:
            obs, _ = self.env.reset(seed=seed)
            self.steps = 0
            return self._observe(obs, 0.0, False)

        def step(self, action: GymAction, timeout_s: float | None = None, **kwargs: Any) -> GymObservation:
            self.steps += 1
            if self.kind == "image":
                return self._observe(None, 1.0, False)
            obs, reward, terminated, truncated, _ = self.env.step(action.action)
            return self._observe(obs, float(reward), bool(terminated or truncated))

        @property
        def state(self) -> State:
            return State(step_count=self.steps)

    class GymClient(EnvClient[GymAction, GymObservation, State]):
        def _step_payload(self, action: GymAction) -> dict[str, Any]:
            return {"action": action.action}

        def _parse_result(self, payload: dict[str, Any]) -> StepResult[GymObservation]:
            obs = GymObservation(**payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False))
            return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False))

        def _parse_state(self, payload: dict[str, Any]) -> State:
            return State(**payload)

    return GymAction, GymObservation, GymEnvironment, GymClient


def serve_openenv(port: int) -> None:
    import uvicorn
    from openenv.core.env_server.http_server import create_fastapi_app

    action, observation, environment, _ = openenv_types()
    # Room for the concurrent rows' sessions (OpenEnv refuses connections past max_concurrent_envs).
    app = create_fastapi_app(environment, action, observation, max_concurrent_envs=1024)
    # "critical": OpenEnv's endpoint logs a traceback at ERROR for every client that disconnects.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical", ws_max_size=64 * 1024 * 1024)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_openenv(kind: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve-openenv", str(port)], env={**os.environ, "GYMWIRE_OPENENV_KIND": kind})
    deadline = time.monotonic() + 300  # importing openenv's server (FastAPI, Gradio) takes 10 to 40 s on a busy 2-core VM
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the OpenEnv server did not start")


def start_gymwire() -> tuple[subprocess.Popen[str], str]:
    from bench_server import built_server_process

    proc = subprocess.Popen(built_server_process("gymwire", "ws"), cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["url"]


def openenv_steps(url: str, steps: int) -> list[float]:
    action_cls, _, _, client_cls = openenv_types()
    times = []
    with client_cls(base_url=url).sync() as env:
        env.reset(seed=0)
        for i in range(steps + 500):
            t0 = time.perf_counter()
            result = env.step(action_cls(action=i % 2))
            if i >= 500:
                times.append(time.perf_counter() - t0)
            if result.done:
                env.reset()
    return times


def openenv_image(url: str, seconds: float) -> float:
    import numpy as np

    action_cls, _, _, client_cls = openenv_types()
    with client_cls(base_url=url).sync() as env:
        env.reset()
        for _ in range(20):
            env.step(action_cls(action=0))
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            result = env.step(action_cls(action=0))
            pixels = np.frombuffer(base64.b64decode(result.observation.pixels), np.uint8).reshape(FRAME_SHAPE)
            steps += 1
        assert pixels.shape == FRAME_SHAPE
        return steps * pixels.nbytes / (time.perf_counter() - start) / 1e6


def gymwire_steps(url: str, steps: int) -> list[float]:
    import gymwire

    times = []
    with gymwire.Client(url) as client:
        env = client.make("gymwire/CartPole-v1")
        env.reset(seed=0)
        for i in range(steps + 500):
            t0 = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(i % 2)
            if i >= 500:
                times.append(time.perf_counter() - t0)
            if terminated or truncated:
                env.reset()
    return times


def gymwire_image(url: str, seconds: float) -> float:
    import gymwire

    with gymwire.Client(url) as client:
        env = client.make("bench/Image-v0")
        env.reset()
        for _ in range(20):
            env.step(0)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            obs, *_ = env.step(0)
            steps += 1
        assert obs.shape == FRAME_SHAPE
        return steps * obs.nbytes / (time.perf_counter() - start) / 1e6


# -- many sessions stepped concurrently from one process -------------------------------------------


class Stepping:
    """Sessions stepped in a loop each (one asyncio task per session) until stopped; counts steps while asked to."""

    def __init__(self) -> None:
        self.counting = False
        self.stop = False
        self.steps = 0

    async def measure(self, loops: list[Any], seconds: float, warmup: float = 0.5) -> float:
        """Steps/s of ``loops`` (coroutines stepping one session each) over ``seconds`` after ``warmup``."""
        self.counting, self.stop, self.steps = False, False, 0
        tasks = [asyncio.ensure_future(loop) for loop in loops]
        await asyncio.sleep(warmup)
        self.counting = True
        start = time.perf_counter()
        await asyncio.sleep(seconds)
        counted, elapsed = self.steps, time.perf_counter() - start
        self.stop = True
        await asyncio.gather(*tasks)
        return counted / elapsed


def vec_round(vec: Any, seconds: float, warmup: float = 0.5) -> float:
    """Env-steps/s of a gymwire vector env stepped back to back (actions alternating 0 and 1)."""
    import numpy as np

    actions = [np.full(vec.num_envs, a, np.int64) for a in (0, 1)]
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        vec.step(actions[0])
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        vec.step(actions[steps & 1])
        steps += 1
    return steps * vec.num_envs / (time.perf_counter() - start)


async def openenv_concurrent(url: str, sessions: int, seconds: float, rounds: int, stepping: Stepping, ours: Any) -> tuple[list[float], list[list[float]]]:
    """Rounds of OpenEnv's async clients (one per session) and of ``ours`` (gymwire's rounds, a list each), alternating."""
    action_cls, _, _, client_cls = openenv_types()
    clients = [client_cls(base_url=url, message_timeout_s=120) for _ in range(sessions)]
    # Connected in waves: a burst of hundreds of handshakes at once overflows uvicorn's accept queue.
    for i in range(0, sessions, 64):
        await asyncio.gather(*(c.connect() for c in clients[i : i + 64]))
    await asyncio.gather(*(c.reset(seed=0) for c in clients))

    async def loop(env: Any) -> None:
        n = 0
        while not stepping.stop:
            result = await env.step(action_cls(action=n & 1))
            n += 1
            if stepping.counting:
                stepping.steps += 1
            if result.done:
                await env.reset()

    theirs, mine = [], []
    try:
        for _ in range(rounds):
            theirs.append(await stepping.measure([loop(c) for c in clients], seconds))
            mine.append(await ours())
    finally:
        await asyncio.gather(*(c.disconnect() for c in clients), return_exceptions=True)
    return theirs, mine


async def concurrent_sides(gw_url: str, oe_url: str, sessions: int, seconds: float, rounds: int) -> tuple[list[float], list[list[float]]]:
    """OpenEnv's rounds, and gymwire's as [one task per session, make_vec] per round."""
    import gymwire

    stepping = Stepping()
    client = await gymwire.AsyncClient.connect(gw_url)
    vec = gymwire.make_vec(gw_url, "gymwire/CartPole-v1", num_envs=sessions)
    try:
        vec.reset(seed=0)
        envs = await asyncio.gather(*(client.make("gymwire/CartPole-v1") for _ in range(sessions)))
        await asyncio.gather(*(env.reset(seed=0) for env in envs))

        async def loop(env: Any) -> None:
            n = 0
            while not stepping.stop:
                _, _, terminated, truncated, _ = await env.step(n & 1)
                n += 1
                if stepping.counting:
                    stepping.steps += 1
                if terminated or truncated:
                    await env.reset()

        async def ours() -> list[float]:
            # The vector env blocks this loop for its round: nothing else is stepping then.
            return [await stepping.measure([loop(env) for env in envs], seconds), vec_round(vec, seconds)]

        return await openenv_concurrent(oe_url, sessions, seconds, rounds, stepping, ours)
    finally:
        vec.close()
        await client.close_all()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", default="/tmp/gymwire-openenv-bench")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="seq,image,concurrent")
    parser.add_argument("--sessions", default="64,512", help="session counts of the concurrent rows")
    # Another checkout's SDK (its client/python/src), to measure a change before and after against the same OpenEnv.
    parser.add_argument("--gymwire-src", default=str(REPO / "client" / "python" / "src"))
    parser.add_argument("--serve-openenv", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    ensure_venv(Path(args.venv))
    sys.path.insert(0, args.gymwire_src)
    if args.serve_openenv is not None:
        serve_openenv(args.serve_openenv)
        return
    import openenv  # noqa: F401 - fail early, inside the venv

    only = set(args.only.split(","))
    version = re.sub(r"[^0-9.]", "", __import__("importlib.metadata").metadata.version("openenv-core"))
    gw_proc, gw_url = start_gymwire()
    try:
        if only & {"seq", "concurrent"}:
            oe_proc, oe_url = start_openenv("cartpole")
            try:
                if "seq" in only:
                    sequential(gw_url, oe_url, args.steps, args.rounds, version)
                if "concurrent" in only:
                    for sessions in (int(n) for n in args.sessions.split(",")):
                        theirs, both = asyncio.run(concurrent_sides(gw_url, oe_url, sessions, args.seconds, args.rounds))
                        emit(f"concurrent_{sessions}_steps_per_s", statistics.median(theirs), "steps/s", side="openenv async EnvClient", rounds=[round(x) for x in theirs])
                        for i, side in enumerate(("gymwire AsyncClient, one task per session", "gymwire make_vec, lock step")):
                            ours = [b[i] for b in both]
                            ratios = [a / b for a, b in zip(ours, theirs)]
                            emit(f"concurrent_{sessions}_steps_per_s", statistics.median(ours), "steps/s", side=side, rounds=[round(x) for x in ours])
                            emit(
                                f"concurrent_{sessions}_ratio",
                                statistics.median(ratios),
                                "x",
                                side=side,
                                note="gymwire / openenv, median of per-round ratios",
                                min=round(min(ratios), 2),
                                max=round(max(ratios), 2),
                            )
            finally:
                oe_proc.terminate()
        if "image" in only:
            oe_proc, oe_url = start_openenv("image")
            try:
                theirs, ours = [], []
                for _ in range(args.rounds):
                    theirs.append(openenv_image(oe_url, args.seconds))
                    ours.append(gymwire_image(gw_url, args.seconds))
            finally:
                oe_proc.terminate()
            t, o = statistics.median(theirs), statistics.median(ours)
            emit("image_224_mb_s", o, "MB/s", side="gymwire", rounds=[round(x, 1) for x in ours])
            emit("image_224_mb_s", t, "MB/s", side="openenv (raw base64)", rounds=[round(x, 1) for x in theirs])
            emit("image_224_ratio", o / t, "x", note="gymwire / openenv")
    finally:
        gw_proc.terminate()


def sequential(gw_url: str, oe_url: str, steps: int, rounds: int, version: str) -> None:
    theirs, ours = [], []
    for _ in range(rounds):
        theirs.append(statistics.median(openenv_steps(oe_url, steps)) * 1e6)
        ours.append(statistics.median(gymwire_steps(gw_url, steps)) * 1e6)
    t, o = statistics.median(theirs), statistics.median(ours)
    emit("cartpole_step_p50", o, "us", side="gymwire", openenv_version=version, rounds=[round(x, 1) for x in ours])
    emit("cartpole_step_p50", t, "us", side="openenv", openenv_version=version, rounds=[round(x, 1) for x in theirs])
    emit("cartpole_step_p50_ratio", t / o, "x", note="openenv / gymwire: how many times faster gymwire is")


if __name__ == "__main__":
    main()
