"""Env tools as OpenAI function-calling tools, and the AReaL-style tool environment.

Every gymwire env may declare tools (name, description, JSON Schema of the arguments); the server
validates arguments and runs them. :class:`ToolSet` (``gymwire.env``) lists them as OpenAI tool schemas and executes
them. :class:`ToolEnvironment` has the shape that AReaL shipped as ``areal.api.env_api.Environment``
(``ainitialize``, ``list_tools``, ``aexecute``, ``aclose``) with ``reset`` and ``step`` reachable as
tools too, so agent code written for that class drives any gymwire env.

Example::

    env = ToolEnvironment("ws://127.0.0.1:8765", "gymwire/CartPole-v1")
    await env.ainitialize()
    await env.aexecute("reset", {"seed": 0})
    out = await env.aexecute("step", {"action": 1})   # {"obs": [...], "reward": 1.0, ...}
    await env.aclose()
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ._transport_asyncio import AsyncioDriver
from .env import AsyncRemoteEnv
from .env import ToolSet as ToolSet  # re-exported: GymwireEnv.tools, built with the env it belongs to


def to_jsonable(value: Any) -> Any:
    """Turns a wire value into JSON-safe Python (arrays to lists, bytes to base64, tuples to lists)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, gs.GraphInstance):
        return {"nodes": to_jsonable(value.nodes), "edges": to_jsonable(value.edges), "edge_links": to_jsonable(value.edge_links)}
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def space_json_schema(space: gs.Space[Any]) -> dict[str, Any]:
    """A JSON Schema for values of ``space`` as an LLM would write them (lists for arrays)."""
    if isinstance(space, gs.Discrete):
        return {"type": "integer", "minimum": int(space.start), "maximum": int(space.start + space.n - 1)}
    if isinstance(space, (gs.Box, gs.MultiDiscrete, gs.MultiBinary)):
        shape = space.shape or ()
        kind = "number" if isinstance(space, gs.Box) and space.dtype.kind == "f" else "integer"
        item: dict[str, Any] = {"type": kind}
        if (
            isinstance(space, gs.Box)
            and space.is_bounded("both")
            and np.all(space.low == space.low.flat[0])
            and np.all(space.high == space.high.flat[0])
            and space.low.size
        ):
            item.update({"minimum": float(space.low.flat[0]), "maximum": float(space.high.flat[0])})
        schema: dict[str, Any] = item
        for dim in reversed(shape):
            schema = {"type": "array", "items": schema, "minItems": int(dim), "maxItems": int(dim)}
        return schema
    if isinstance(space, gs.Text):
        return {"type": "string", "minLength": space.min_length, "maxLength": space.max_length}
    if isinstance(space, gs.Dict):
        return {
            "type": "object",
            "properties": {k: space_json_schema(v) for k, v in space.spaces.items()},
            "required": list(space.spaces),
            "additionalProperties": False,
        }
    if isinstance(space, gs.Tuple):
        return {"type": "array", "prefixItems": [space_json_schema(s) for s in space.spaces], "minItems": len(space.spaces), "maxItems": len(space.spaces)}
    return {}


def _reserved_names(tool_names: list[str]) -> tuple[str, str]:
    reset, step = "reset", "step"
    if reset in tool_names or step in tool_names:
        reset, step = "env_reset", "env_step"
    return reset, step


def env_control_tools(remote: AsyncRemoteEnv) -> list[dict[str, Any]]:
    """OpenAI schemas for the env's own tools followed by ``reset`` and ``step`` as tools."""
    names = [t["function"]["name"] for t in remote.tool_schemas]
    reset, step = _reserved_names(names)
    return [
        *remote.tool_schemas,
        {
            "type": "function",
            "function": {
                "name": reset,
                "description": f"Start a new episode of {remote.env_id}; returns the first observation.",
                "parameters": {
                    "type": "object",
                    "properties": {"seed": {"type": "integer", "minimum": 0}, "options": {"type": "object"}},
                    "additionalProperties": False,
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": step,
                "description": f"Take one action in {remote.env_id}; returns obs, reward, terminated, truncated and info.",
                "parameters": {
                    "type": "object",
                    "properties": {"action": space_json_schema(remote.action_space)},
                    "required": ["action"],
                    "additionalProperties": False,
                },
            },
        },
    ]


async def execute_control_tool(remote: AsyncRemoteEnv, tool_name: str, tool_args: dict[str, Any] | str | None) -> Any:
    """Runs an env tool, or ``reset``/``step`` as tools; results are JSON-safe."""
    if isinstance(tool_args, str):
        tool_args = json.loads(tool_args) if tool_args.strip() else {}
    args = dict(tool_args or {})
    reset, step = _reserved_names([t["function"]["name"] for t in remote.tool_schemas])
    if tool_name == reset:
        obs, info = await remote.reset(seed=args.get("seed"), options=args.get("options"))
        return {"obs": to_jsonable(obs), "info": to_jsonable(info)}
    if tool_name == step:
        obs, reward, terminated, truncated, info = await remote.step(args.get("action"))
        return {"obs": to_jsonable(obs), "reward": reward, "terminated": terminated, "truncated": truncated, "info": to_jsonable(info)}
    return to_jsonable(await remote.call_tool(tool_name, args))


class ToolEnvironment:
    """The tool-calling environment shape of AReaL's former ``areal.api.env_api.Environment``.

    ``ainitialize`` connects and makes the session in the caller's event loop; ``list_tools``
    returns OpenAI schemas (the env's tools, then ``reset`` and ``step``); ``aexecute`` runs one
    and returns JSON-safe data; ``aclose`` closes the session and connection (idempotent).
    """

    def __init__(self, url: str, env_id: str, kwargs: dict[str, Any] | None = None, **client_options: Any) -> None:
        self.url = url
        self.env_id = env_id
        self.kwargs = kwargs or {}
        self.client_options = client_options
        self._client: AsyncioDriver | None = None
        self._remote: AsyncRemoteEnv | None = None

    @property
    def remote(self) -> AsyncRemoteEnv:
        if self._remote is None:
            raise RuntimeError("call await ainitialize() first")
        return self._remote

    async def ainitialize(self) -> None:
        if self._remote is not None:
            return
        self._client = await AsyncioDriver.connect(self.url, **self.client_options)
        try:
            self._remote = await AsyncRemoteEnv.make(self._client, self.env_id, self.kwargs)
        except BaseException:
            await self._client.close()
            self._client = None
            raise

    def list_tools(self) -> list[dict[str, Any]]:
        return env_control_tools(self.remote)

    async def aexecute(self, tool_name: str, tool_args: dict[str, Any] | str | None = None) -> Any:
        return await execute_control_tool(self.remote, tool_name, tool_args)

    async def aclose(self) -> None:
        if self._remote is not None:
            await self._remote.close()
        if self._client is not None:
            await self._client.close()
        self._remote = None
        self._client = None
