"""gymwire's /mcp and `gymwire mcp` stdio bridge driven by the official MCP Python SDK.

Run by ``client/python/scripts/test-mcp.sh`` in two venvs: ``mcp`` 2.3.0 (revision 2026-07-28 with
``server/discover``, and 2025-11-25 with ``mode="legacy"``) and ``mcp`` 1.30.0, the last 1.x
(2025-11-25 only). Each client sees every registered env's tools without a list_changed, makes a
session, steps it, calls an env tool and gets an image with its text block; a session made through
one client is stepped through another, since env sessions belong to the caller.

Standalone (no gymwire import, no conftest): ``pytest --noconftest tests/mcp_suite.py``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

REPO = Path(__file__).resolve().parents[3]
MCP_VERSION = importlib.metadata.version("mcp")
MCP_MAJOR = int(MCP_VERSION.split(".")[0])
TOKEN = "mcp-suite-token"
CARTPOLE = "gymwire/CartPole-v1"
NAVSIM = "gymwire/NavsimEnv-v1"
# Tools every client must list up front: the fixed ones and env tools of three families.
EXPECTED_TOOLS = {
    "list_envs",
    "make_env",
    "reset",
    "step",
    "render",
    "close_env",
    "NavsimEnv-v1__step_with_waypoints",
    "NavsimEnv-v1__get_route_info",
    "Bench2Drive-v0__drive",
    "Bench2Drive-v0__follow_waypoints_for",
}


class Server:
    """One ``gymwire serve`` child on an ephemeral port, with a token."""

    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH; the MCP suite needs the gymwire server")
        self.proc = subprocess.Popen(
            [node, str(REPO / "bin" / "gymwire.js"), "serve", "--port", "0", "--log-level", "warn", "--token", TOKEN],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        self.output: list[str] = []
        for line in self.proc.stdout:
            self.output.append(line)
            m = re.search(r"on (ws://[0-9A-Za-z.:\[\]-]+)", line)
            if m:
                self.ws_url = m.group(1)
                break
        else:
            raise RuntimeError("gymwire serve exited before printing its URL:\n" + "".join(self.output))
        self.mcp_url = self.ws_url.replace("ws://", "http://") + "/mcp"
        threading.Thread(target=lambda: [self.output.append(x) for x in self.proc.stdout or []], daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


class Session:
    """The calls the suite needs, over either SDK major version's result types."""

    def __init__(self, impl: Any, protocol_version: str) -> None:
        self.impl = impl
        self.protocol_version = protocol_version

    async def tools(self) -> list[Any]:
        return list((await self.impl.list_tools()).tools)

    async def call(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """Structured content and content blocks of a call that must succeed."""
        res = await self.impl.call_tool(name, args)
        is_error = getattr(res, "is_error", None) if MCP_MAJOR >= 2 else res.isError
        blocks = list(res.content)
        assert not is_error, f"{name} failed: {blocks}"
        structured = res.structured_content if MCP_MAJOR >= 2 else res.structuredContent
        return dict(structured or {}), blocks

    async def error(self, name: str, args: dict[str, Any]) -> str:
        res = await self.impl.call_tool(name, args)
        assert res.is_error if MCP_MAJOR >= 2 else res.isError, f"{name} should have failed"
        return res.content[0].text


def _http_client(token: str) -> Any:
    if MCP_MAJOR >= 2:
        import httpx2 as httpx  # the HTTP client mcp 2.x ships with
    else:
        import httpx
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)


@contextlib.asynccontextmanager
async def http_session(url: str, mode: str) -> AsyncIterator[Session]:
    """An official client over Streamable HTTP; ``mode`` 'auto' (newest revision) or 'legacy'."""
    async with _http_client(TOKEN) as http:
        if MCP_MAJOR >= 2:
            from mcp.client.client import Client
            from mcp.client.streamable_http import streamable_http_client

            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                yield Session(client, client.protocol_version)
        else:
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client

            async with streamable_http_client(url, http_client=http) as (read, write, _), ClientSession(read, write) as session:
                init = await session.initialize()
                yield Session(session, init.protocolVersion)


@contextlib.asynccontextmanager
async def stdio_session(ws_url: str, mode: str) -> AsyncIterator[Session]:
    """An official client over stdio to ``gymwire mcp --url``."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=shutil.which("node") or "node",
        args=[str(REPO / "bin" / "gymwire.js"), "mcp", "--url", ws_url, "--token", TOKEN],
        cwd=str(REPO),
        # One process instead of a re-run with a larger heap: a faster start.
        env={"PATH": os.environ.get("PATH", ""), "GYMWIRE_NO_REEXEC": "1"},
    )
    if MCP_MAJOR >= 2:
        from mcp.client.client import Client

        async with Client(params, mode=mode) as client:
            yield Session(client, client.protocol_version)
    else:
        from mcp import ClientSession

        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            yield Session(session, init.protocolVersion)


# (mode, the revision it must agree): mcp 2.x speaks both, 1.x the older one only.
MODES = [("auto", "2026-07-28"), ("legacy", "2025-11-25")] if MCP_MAJOR >= 2 else [("legacy", "2025-11-25")]
# Over stdio mcp 2.x's 'auto' gives a process 10 s (DISCOVER_TIMEOUT_SECONDS) to answer its
# server/discover probe and otherwise settles on 2025-11-25; `node bin/gymwire.js mcp` compiles
# its TypeScript at start and can take longer on a loaded machine, so the newer revision is pinned.
STDIO_MODES = [("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")] if MCP_MAJOR >= 2 else MODES


async def _play(s: Session) -> None:
    names = {t.name for t in await s.tools()}
    missing = EXPECTED_TOOLS - names
    assert not missing, f"tools not listed up front: {sorted(missing)}"

    made, _ = await s.call("make_env", {"env_id": CARTPOLE, "kwargs": '{"render_mode": "rgb_array"}'})
    sid = made["session_id"]
    await s.call("reset", {"session_id": sid, "seed": 0})
    stepped, _ = await s.call("step", {"session_id": sid, "action": 1})
    assert stepped["reward"] == 1 and stepped["episode_steps"] == 1
    rendered, blocks = await s.call("render", {"session_id": sid})
    assert [b.type for b in blocks] == ["text", "image"]
    assert blocks[0].text.startswith(f"Frame of session {sid} (PNG")
    mime = blocks[1].mime_type if MCP_MAJOR >= 2 else blocks[1].mimeType
    assert mime == "image/png" and rendered["format"] == "png"

    nav, _ = await s.call("make_env", {"env_id": NAVSIM, "kwargs": None})
    await s.call("reset", {"session_id": nav["session_id"], "seed": 2})
    route, _ = await s.call("NavsimEnv-v1__get_route_info", {"session_id": nav["session_id"]})
    assert route["tool"] == "get_route_info" and isinstance(route["result"], dict)
    text = await s.error("NavsimEnv-v1__get_route_info", {"session_id": sid})
    assert text.startswith("Input validation error: NavsimEnv-v1__get_route_info is a tool of gymwire/NavsimEnv-v1 sessions")
    await s.call("close_env", {"session_id": nav["session_id"]})
    await s.call("close_env", {"session_id": sid})


@pytest.mark.parametrize(("mode", "revision"), MODES)
def test_http_client_sees_every_tool_and_plays(server: Server, mode: str, revision: str) -> None:
    async def main() -> None:
        async with http_session(server.mcp_url, mode) as s:
            assert s.protocol_version == revision
            await _play(s)

    anyio.run(main)


@pytest.mark.parametrize(("mode", "revision"), STDIO_MODES)
def test_stdio_bridge_sees_every_tool_and_plays(server: Server, mode: str, revision: str) -> None:
    async def main() -> None:
        async with stdio_session(server.ws_url, mode) as s:
            assert s.protocol_version == revision
            await _play(s)

    anyio.run(main)


def test_a_session_outlives_the_client_that_made_it(server: Server) -> None:
    """Env sessions belong to the caller: a new client (of any revision) steps a session another made."""
    modes = [m for m, _ in MODES]

    async def main() -> None:
        async with http_session(server.mcp_url, modes[0]) as first:
            made, _ = await first.call("make_env", {"env_id": CARTPOLE, "kwargs": None})
            sid = made["session_id"]
            await first.call("reset", {"session_id": sid, "seed": 0})
        async with http_session(server.mcp_url, modes[-1]) as second:
            stepped, _ = await second.call("step", {"session_id": sid, "action": 0})
            assert stepped["session_id"] == sid and stepped["episode_steps"] == 1
            await second.call("close_env", {"session_id": sid})

    anyio.run(main)


def test_a_wrong_token_is_refused(server: Server) -> None:
    async def main() -> None:
        async with _http_client("wrong") as http:
            res = await http.post(
                server.mcp_url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"},
            )
            assert res.status_code == 401
            assert "resource_metadata=" in res.headers["www-authenticate"]

    anyio.run(main)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "--noconftest", "-q"]))
