"""`gymwire serve` on port 0 for the Python benches, its workers running this interpreter."""

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
