"""``python -m gymwire.worker [--fd N]``: serves one gymwire server's requests on file descriptor N
(default 3) until the server closes it. Started by ``gymwire serve``; not meant to be run by hand."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from ..codec import packer, unpack
from ..sim.rendering import configure_gl
from .channel import FrameChannel
from .host import Host, error_answer
from .loop import serve


def _encode(pack: Callable[[Any], bytes], ids: list[int], results: list[dict[str, Any]]) -> bytes:
    try:
        return pack({"ids": ids, "results": results})
    except Exception:  # noqa: BLE001 - find which answers cannot be encoded and turn only those into errors
        safe: list[dict[str, Any]] = []
        for result in results:
            try:
                pack(result)
                safe.append(result)
            except Exception as err:  # noqa: BLE001
                safe.append({"error": error_answer(err)})
        return pack({"ids": ids, "results": safe})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gymwire.worker", description=__doc__)
    parser.add_argument("--fd", type=int, default=3, help="the socket the server talks on")
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY"):
        # Headless: MuJoCo renders rgb_array frames through EGL on a GPU, else OSMesa where it is
        # installed, instead of failing to open a window.
        configure_gl()
    channel = FrameChannel(args.fd)
    host = Host()
    pack = packer().pack
    # Imports are done: the server starts timing calls from here, so a slow start is not a hang.
    channel.write(pack({"id": 0, "ready": os.getpid()}))
    loop = serve(channel, host, unpack, lambda ids, results: _encode(pack, ids, results))
    # Envs whose session thread is still inside a call are left to the exit.
    for handle, hosted in list(host.envs.items()):
        if handle in loop.busy:
            continue
        try:
            hosted.env.close()
        except Exception as err:  # noqa: BLE001 - closing at exit is best effort
            print(f"gymwire worker: closing an env failed: {err!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
