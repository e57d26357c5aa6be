"""Fixtures: a live gymwire server (``node bin/gymwire.js serve --port 0``) for the whole session.

The server is started lazily (also at collection time, because check_env is parametrised over
whatever ``list_envs`` returns) and stopped when pytest finishes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
URL_RE = re.compile(r"on (ws://[0-9A-Za-z.:\[\]-]+)")


class ServerProcess:
    """One `gymwire serve` child process; ``url`` is parsed from its first stdout line."""

    def __init__(self, *args: str, start_timeout: float = 60) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH; the Python tests need the gymwire server (node bin/gymwire.js serve)")
        self.proc = subprocess.Popen(
            [node, str(REPO / "bin" / "gymwire.js"), "serve", "--port", "0", "--log-level", "warn", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "NODE_ENV": "test"},
        )
        self.output: list[str] = []
        self.url = self._wait_for_url(start_timeout)
        # Keep draining stdout so the child never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_for_url(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            for line in self.proc.stdout:
                self.output.append(line)
                m = URL_RE.search(line)
                if m:
                    return m.group(1)
        finally:
            timer.cancel()
        raise RuntimeError("gymwire serve exited before printing its URL:\n" + "".join(self.output))

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


_shared: ServerProcess | None = None
_env_list: list[dict[str, Any]] | None = None


def shared_server() -> ServerProcess:
    global _shared
    if _shared is None:
        _shared = ServerProcess()
    return _shared


def server_envs() -> list[dict[str, Any]]:
    """Every env the server lists (cached)."""
    global _env_list
    if _env_list is None:
        import gymwire

        with gymwire.Client(shared_server().url) as client:
            _env_list = client.list_envs()
    return _env_list


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _shared is not None:
        _shared.stop()


@pytest.fixture(scope="session")
def server() -> ServerProcess:
    return shared_server()


@pytest.fixture
def own_server_url():
    """A server of this test's own: its open-session count is this test's alone (the shared server
    also holds sessions that earlier tests' clients close lazily, on the asyncio transport)."""
    proc = ServerProcess()
    try:
        yield proc.url
    finally:
        proc.stop()


def sim_python() -> str | None:
    """The Python of the simulator venv, if robosuite is in it: GYMWIRE_SIM_PYTHON, else
    client/python/.venv-sim (scripts/test-sim.sh builds it). The framework suites serve robosuite
    from it while they run in their own venvs."""
    python = os.environ.get("GYMWIRE_SIM_PYTHON") or str(Path(__file__).resolve().parents[1] / ".venv-sim" / "bin" / "python")
    if not os.path.exists(python):
        return None
    found = subprocess.run([python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('robosuite') is None)"], timeout=60)
    return python if found.returncode == 0 else None


def robosuite_server() -> ServerProcess:
    """A server whose workers serve robosuite from the simulator venv; skips the test where there is none."""
    python = sim_python()
    if python is None:
        pytest.skip("no simulator venv with robosuite (bash client/python/scripts/test-sim.sh builds client/python/.venv-sim)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GYMWIRE_PYTHON", python)
        return ServerProcess("--workers", "2", start_timeout=120)


@pytest.fixture(scope="session")
def sim_server() -> Iterator[ServerProcess]:
    """A server whose Python workers run this venv's Python: the embodied-simulator suites
    (test_sim*.py, run in scripts/test-sim.sh's venv) share it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GYMWIRE_PYTHON", sys.executable)
        server = ServerProcess("--workers", "2", start_timeout=120)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def url(server: ServerProcess) -> str:
    return server.url


def open_sessions(url: str) -> int:
    """The server's open sessions, as its ``/metrics`` reports them (``gymwire_open_sessions``, summed over envs)."""
    import urllib.request

    http = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    with urllib.request.urlopen(f"{http}/metrics", timeout=10) as r:
        text = r.read().decode()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("gymwire_open_sessions")))


def sessions_left(url: str, wait: float = 10.0) -> int:
    """The open-session count once it reaches 0, or after ``wait`` seconds (closes that a framework's loop runs a moment later)."""
    import time

    deadline = time.monotonic() + wait
    count = open_sessions(url)
    while count and time.monotonic() < deadline:
        time.sleep(0.1)
        count = open_sessions(url)
    return count


@pytest.fixture
def client(url: str):
    import gymwire

    c = gymwire.Client(url, request_timeout=30)
    yield c
    c.close()


@pytest.fixture
def cartpole(url: str):
    import gymwire

    env = gymwire.make(url, "gymwire/CartPole-v1")
    yield env
    env.close()


@pytest.fixture
def cartpole_dataset(url: str, tmp_path: Path):
    """Two random-policy CartPole episodes (first seed 4) recorded with gymwire.collect and read back."""
    import gymwire
    from gymwire.policies import make_policy

    env = gymwire.make(url, "gymwire/CartPole-v1")
    try:
        gymwire.collect(env, make_policy("random", action_space=env.action_space, seed=0), episodes=2, out_dir=tmp_path, seed=4)
    finally:
        env.close()
    return gymwire.load_dataset(tmp_path)
