"""Shared by the Python examples: the server URL from $GYMWIRE_URL, or a local `gymwire serve` started for the run."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
try:
    import gymwire  # noqa: F401
except ImportError:  # running from a checkout without `pip install ./client/python`
    sys.path.insert(0, str(REPO / "client" / "python" / "src"))


@contextlib.contextmanager
def server_url() -> Iterator[str]:
    """Yields $GYMWIRE_URL when set, else starts `node bin/gymwire.js serve --port 0` and stops it afterwards."""
    if os.environ.get("GYMWIRE_URL"):
        yield os.environ["GYMWIRE_URL"]
        return
    proc = subprocess.Popen(
        ["node", str(REPO / "bin" / "gymwire.js"), "serve", "--port", "0", "--log-level", "warn"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.search(r"on (ws://\S+)", line)
            if m:
                yield m.group(1)
                return
        raise RuntimeError("gymwire serve exited before printing its URL")
    finally:
        proc.terminate()
        proc.wait(10)


def check(condition: bool, message: str) -> None:
    """Examples check their own result and exit non-zero on failure."""
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)
