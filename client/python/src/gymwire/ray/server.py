"""One ``gymwire serve`` process owned by a Ray actor.

:class:`GymwireServer` is the actor's class (``ray.remote`` is applied by the pool, so this module
imports without Ray). Its ``__init__`` starts ``gymwire serve --port 0`` as a child process, reads
the URL the server prints, waits until ``/healthz`` answers, and reports the URL with the node's IP
address. When the child dies the actor exits too, so Ray restarts the actor (and with it a fresh
server); when the actor dies the child is ended by the kernel (``PR_SET_PDEATHSIG``), so no server
outlives its actor.

The ``gymwire`` command (the npm package's bin, Node >= 20) must be installed on every node that
runs a server; :func:`find_gymwire_command` says where it is looked for.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_URL_RE = re.compile(r" on (ws://\S+)")
_PR_SET_PDEATHSIG = 1


class GymwireCommandNotFoundError(RuntimeError):
    """No ``gymwire`` command on this node: not ``GYMWIRE_BIN``, a checkout's ``bin/gymwire.js``,
    ``gymwire`` on PATH, nor ``node_modules/.bin/gymwire``."""


class ServerStartError(RuntimeError):
    """``gymwire serve`` exited, or did not become healthy, during start-up; the message holds its output."""


def _checkout_command() -> list[str] | None:
    """``node <checkout>/bin/gymwire.js`` when this package runs from a gymwire checkout whose
    ``npm install`` has run (the sources need its node_modules), else None."""
    # This file is <checkout>/client/python/src/gymwire/ray/server.py in a checkout.
    parents = Path(__file__).resolve().parents
    if len(parents) < 6:
        return None
    root = parents[5]
    script = root / "bin" / "gymwire.js"
    node = shutil.which("node")
    if node and script.is_file() and (root / "node_modules").is_dir():
        return [node, str(script)]
    return None


def _project_command(start: Path) -> list[str] | None:
    """``node_modules/.bin/gymwire`` in ``start`` or a folder above it (a project that installed the
    npm package), else None."""
    for folder in (start, *start.parents):
        candidate = folder / "node_modules" / ".bin" / "gymwire"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate)]
    return None


def find_gymwire_command(explicit: str | Sequence[str] | None = None) -> list[str]:
    """The command that runs the gymwire CLI on this node, as an argv prefix.

    In order: ``explicit`` (a command line or argv list), the ``GYMWIRE_BIN`` environment variable
    (a command line such as ``node /opt/gymwire/bin/gymwire.js``), the checkout this package runs
    from (``node <checkout>/bin/gymwire.js``, once ``npm install`` has run there), ``gymwire`` on
    PATH, and ``node_modules/.bin/gymwire`` in the working directory or a folder above it. Nothing
    is fetched from a registry; when none is there it raises :class:`GymwireCommandNotFoundError`.

    Example::

        find_gymwire_command()            # ['/usr/bin/node', '/src/gymwire/bin/gymwire.js']
        find_gymwire_command("node bin/gymwire.js")
    """
    if explicit:
        return shlex.split(explicit) if isinstance(explicit, str) else list(explicit)
    from_env = os.environ.get("GYMWIRE_BIN", "").strip()
    if from_env:
        return shlex.split(from_env)
    checkout = _checkout_command()
    if checkout:
        return checkout
    on_path = shutil.which("gymwire")
    if on_path:
        return [on_path]
    project = _project_command(Path.cwd())
    if project:
        return project
    raise GymwireCommandNotFoundError(
        "the gymwire server command is not on this node: not GYMWIRE_BIN, a gymwire checkout's bin/gymwire.js, "
        "`gymwire` on PATH, nor node_modules/.bin/gymwire. Install the npm package (README, Install: a checkout's "
        "`npm install`, or `npm install -g /path/to/gymwire-0.1.0.tgz`; Node >= 20) or set GYMWIRE_BIN to the command "
        "that runs it (for example 'node /path/to/gymwire/bin/gymwire.js')"
    )


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel sends SIGTERM when the thread that forked it
    # ends, so the server cannot outlive its actor (SIGKILLed actors included).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except OSError:
        pass  # not Linux: the actor's own stop() and Ray's worker cleanup remain


def _node_ip() -> str:
    try:
        import ray.util

        return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 - outside a Ray worker (tests of this class alone): loopback
        return "127.0.0.1"


def _node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - outside a Ray worker
        return None


def fetch_health(http_url: str, timeout: float = 5.0) -> dict[str, Any]:
    """GET ``<http_url>/healthz``: ``{"ok", "status", "body"}``; never raises for an unreachable server."""
    try:
        with urllib.request.urlopen(http_url.rstrip("/") + "/healthz", timeout=timeout) as resp:
            return {"ok": resp.status == 200, "status": resp.status, "body": json.loads(resp.read() or b"{}")}
    except urllib.error.HTTPError as err:
        return {"ok": False, "status": err.code, "body": None, "error": str(err)}
    except (OSError, ValueError) as err:
        return {"ok": False, "status": None, "body": None, "error": str(err)}


def http_url_of(ws_url: str) -> str:
    return "http" + ws_url[2:] if ws_url.startswith("ws") else ws_url


class GymwireServer:
    """A ``gymwire serve`` child process; the pool runs this class as a Ray actor.

    ``serve_args`` are extra ``gymwire serve`` flags; ``token`` reaches the child as
    ``GYMWIRE_TOKEN`` (never on its command line); ``host`` is the interface it listens on (all of
    them by default, so other nodes reach it).
    """

    def __init__(
        self,
        serve_args: Sequence[str] = (),
        *,
        gymwire_bin: str | Sequence[str] | None = None,
        token: str | None = None,
        host: str = "0.0.0.0",
        env_vars: dict[str, str] | None = None,
        startup_timeout: float = 120.0,
    ) -> None:
        self.incarnation = uuid.uuid4().hex
        command = [*find_gymwire_command(gymwire_bin), "serve", "--host", host, "--port", "0", *serve_args]
        env = {**os.environ, **(env_vars or {})}
        if token is not None:
            env["GYMWIRE_TOKEN"] = token
        self._output: collections.deque[str] = collections.deque(maxlen=200)
        self._stopping = False
        self._ready = False
        self._started = threading.Event()
        self._spawn_error: BaseException | None = None
        self.proc: subprocess.Popen[str] | None = None
        # The child is forked by a thread that lives exactly as long as the child (see _die_with_parent).
        threading.Thread(target=self._supervise, args=(command, env), name="gymwire-serve", daemon=True).start()
        self._started.wait()
        if self.proc is None:
            raise ServerStartError(f"could not run {shlex.join(command)}: {self._spawn_error}")
        try:
            self.local_url = self._wait_for_url(startup_timeout)
            self._wait_healthy(startup_timeout)
        except BaseException:
            # A failed start is reported as the actor's creation error, not retried as a crash.
            self.stop(timeout=2.0)
            raise
        port = self.local_url.rsplit(":", 1)[1]
        self.url = f"ws://{_node_ip()}:{port}"
        self._ready = True

    def _supervise(self, command: list[str], env: dict[str, str]) -> None:
        try:
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, preexec_fn=_die_with_parent)
        except OSError as err:
            self._spawn_error = err
            return
        finally:
            self._started.set()
        code = self.proc.wait()
        # Before it is ready, an exit is a start-up failure that __init__ reports; a restart would repeat it.
        if self._ready and not self._stopping:
            # The server died under us: end the actor so Ray restarts it with a fresh server.
            print(f"gymwire serve exited with {code}; ending the actor so Ray restarts it:\n{self.output()}", flush=True)
            os._exit(1)

    def _wait_for_url(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        killer = threading.Timer(timeout, self.stop, kwargs={"timeout": 1.0})
        killer.start()
        url: str | None = None
        try:
            for line in self.proc.stdout:
                self._output.append(line)
                found = _URL_RE.search(line)
                if found:
                    url = found.group(1)
                    break
        finally:
            killer.cancel()
        if url is None:
            raise ServerStartError(f"gymwire serve exited before printing its URL:\n{self.output()}")
        threading.Thread(target=self._drain, name="gymwire-serve-output", daemon=True).start()
        return url.replace("0.0.0.0", "127.0.0.1").replace("[::]", "127.0.0.1")

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._output.append(line)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            health = fetch_health(http_url_of(self.local_url), timeout=2.0)
            if health["ok"]:
                return
            if time.monotonic() > deadline:
                raise ServerStartError(f"{self.local_url}/healthz did not answer 200 within {timeout} s: {health}\n{self.output()}")
            time.sleep(0.1)

    def output(self) -> str:
        """The last lines the server printed (logs at its --log-level)."""
        return "".join(self._output)

    def info(self) -> dict[str, Any]:
        """Where this server is: ``url`` (reachable from other nodes), ``incarnation`` (new after every restart), node, pid."""
        return {
            "url": self.url,
            "incarnation": self.incarnation,
            "node_id": _node_id(),
            "node_ip": self.url.split("//", 1)[1].rsplit(":", 1)[0],
            "pid": self.proc.pid if self.proc is not None else None,
            "actor_pid": os.getpid(),
        }

    def health(self) -> dict[str, Any]:
        """``/healthz`` as seen on the server's own node."""
        return fetch_health(http_url_of(self.local_url))

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stops the server gracefully (SIGTERM: in-flight requests are answered), then kills it if needed."""
        self._stopping = True
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)
