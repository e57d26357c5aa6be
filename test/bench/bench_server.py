"""Servers for the Python benches: `gymwire serve` on port 0 (its workers running this interpreter),
and test/bench/server-process.ts built as a deployment runs the server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_server(*args: str) -> tuple[subprocess.Popen[str], str]:
    """The server process and its URL. Its log is read to the end in a thread, so workers' warnings never fill the pipe and block it."""
    proc = subprocess.Popen(
        ["node", str(REPO / "bin" / "gymwire.js"), "serve", "--port", "0", "--log-level", "warn", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "GYMWIRE_PYTHON": sys.executable},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        m = re.search(r"on (ws://\S+)", line)
        if m:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, m.group(1)
    raise RuntimeError("the server exited before printing its URL")


def built_server_process(*args: str) -> list[str]:
    """The command that runs test/bench/server-process.ts with ``args`` the way a deployment runs the
    server: bundled to JavaScript (esbuild, as test/bench/run-built.sh does) on plain node, not
    through tsx's loader, whose name-keeping wrappers add about a fifth to the server's CPU per
    small request. Rebuilt on every call (a fraction of a second), so it never runs stale code."""
    out = REPO / ".bench-build" / "server-process.mjs"
    esbuild = REPO / "node_modules" / ".bin" / "esbuild"
    bundle = [str(esbuild), "test/bench/server-process.ts", "--bundle", "--platform=node", "--format=esm", "--packages=external"]
    subprocess.run([*bundle, f"--outfile={out}", "--log-level=warning"], cwd=REPO, check=True)
    return ["node", "--initial-old-space-size=256", str(out), *args]
