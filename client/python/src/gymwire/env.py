"""Remote sessions as Gymnasium environments.

:class:`AsyncRemoteEnv` is one session driven with ``await``; :class:`GymwireEnv` is the same
session as a real ``gymnasium.Env`` (spaces rebuilt exactly, ``check_env`` clean). Seeding follows
Gymnasium: ``reset(seed=s)`` seeds a local ``np_random`` (``super().reset``) and forwards ``s`` to
the server, whose env seeds its own RNG, so equal seeds give equal episodes.

Example::

    env = gymwire.make("ws://127.0.0.1:8765", "gymwire/CartPole-v1")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    env.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
import numpy as np

from . import errors as E
from .client import release, with_owned_client
from .spaces import space_from_wire, value_from_wire, value_to_wire
from .tools import ToolSet

if TYPE_CHECKING:
    from .client import AsyncClient, Client


def _decode_info(info: Any) -> dict[str, Any]:
    return info if isinstance(info, dict) else {}


class AsyncRemoteEnv:
    """One remote session, asyncio flavour: ``await env.reset(seed=0)``, ``await env.step(a)``."""

    def __init__(self, client: AsyncClient, made: dict[str, Any]) -> None:
        self.client = client
        self.session_id: str = made["session_id"]
        self.env_id: str = made["env_id"]
        self.observation_space = space_from_wire(made["observation_space"])
        self.action_space = space_from_wire(made["action_space"])
        self.metadata: dict[str, Any] = dict(made.get("metadata") or {})
        self.render_mode: str | None = made.get("render_mode")
        self.max_episode_steps: int | None = made.get("max_episode_steps")
        self.tool_schemas: list[dict[str, Any]] = list(made.get("tools") or [])
        self.closed_reason: str | None = None

    @property
    def closed(self) -> bool:
        return self.closed_reason is not None

    def mark_closed(self, reason: str) -> None:
        self.closed_reason = reason

    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.reset_result(await self.client.request("reset", self.reset_request(seed, options)))

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.step_result(await self.client.request("step", self.step_request(action)))

    # The halves of reset and step, for a caller that sends the request itself (the blocking env).

    def reset_request(self, seed: int | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """The fields of this session's ``reset`` request."""
        return {"session_id": self.session_id, "seed": seed, "options": options}

    def reset_result(self, r: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """A ``reset`` result as Gymnasium's ``reset`` returns it."""
        return value_from_wire(self.observation_space, r["obs"]), _decode_info(r["info"])

    def step_request(self, action: Any) -> dict[str, Any]:
        """The fields of this session's ``step`` request for ``action`` (converted to its wire form)."""
        return {"session_id": self.session_id, "action": value_to_wire(self.action_space, action)}

    def step_result(self, r: dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """A ``step`` result as Gymnasium's ``step`` returns it."""
        return (
            value_from_wire(self.observation_space, r["obs"]),
            float(r["reward"]),
            bool(r["terminated"]),
            bool(r["truncated"]),
            _decode_info(r["info"]),
        )

    async def render(self, format: str = "tensor", quality: int | None = None) -> Any:
        """The current frame: a uint8 ``[H, W, C]`` array (``format='tensor'``), PNG/JPEG bytes, or text."""
        fields: dict[str, Any] = {"session_id": self.session_id, "format": format}
        if quality is not None:
            fields["quality"] = quality
        return (await self.client.request("render", fields))["frame"]

    async def list_tools(self) -> list[dict[str, Any]]:
        """The env's tools as OpenAI function-calling schemas."""
        self.tool_schemas = (await self.client.request("list_tools", {"session_id": self.session_id}))["tools"]
        return self.tool_schemas

    async def call_tool(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Executes a tool; arguments are validated by the tool's schema on the server."""
        return (await self.client.request("execute", {"session_id": self.session_id, "tool": name, "args": args or {}}))["result"]

    async def get_state(self) -> bytes:
        return (await self.client.request("get_state", {"session_id": self.session_id}))["state"]

    async def set_state(self, state: bytes) -> None:
        await self.client.request("set_state", {"session_id": self.session_id, "state": bytes(state)})

    async def close(self) -> None:
        """Closes the session; idempotent, and quiet when the connection is already gone."""
        if self.closed:
            return
        self.mark_closed("closed by the client")
        self.client.forget(self.session_id)
        if self.client.is_open:
            try:
                await self.client.request("close", {"session_id": self.session_id})
            except E.SdkError:
                pass


class GymwireEnv(gym.Env[Any, Any]):
    """A remote session as a ``gymnasium.Env``; made by :func:`gymwire.make` or ``Client.make``.

    Besides the Gymnasium API it offers ``tools`` (a :class:`~gymwire.tools.ToolSet` of OpenAI
    schemas with ``execute``), ``call_tool``, ``get_state``/``set_state`` and ``session_id``.

    Envs made by :func:`gymwire.make` or ``gymnasium.make`` pickle (for ``AsyncVectorEnv`` and
    other process pools): unpickling connects again and opens a new session of the same env with the
    same kwargs, so the copy starts unreset, like a freshly made env.
    """

    #: ``(url, env_id, kwargs, client_options)`` for pickling; set by :func:`make`.
    reopen_args: tuple[str, str, dict[str, Any], dict[str, Any] | None] | None = None

    def __init__(self, client: Client, remote: AsyncRemoteEnv, *, owns_client: bool = False) -> None:
        self._client = client
        self._remote = remote
        self._owns_client = owns_client
        self.observation_space = remote.observation_space
        self.action_space = remote.action_space
        self.metadata = {"render_modes": [], **remote.metadata}
        self.render_mode = remote.render_mode
        self._closed = False
        self.tools = ToolSet(self)

    @property
    def session_id(self) -> str:
        return self._remote.session_id

    @property
    def env_id(self) -> str:
        return self._remote.env_id

    @property
    def max_episode_steps(self) -> int | None:
        return self._remote.max_episode_steps

    @property
    def remote(self) -> AsyncRemoteEnv:
        return self._remote

    @property
    def client(self) -> Client:
        return self._client

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        remote = self._remote
        return remote.reset_result(self._client.request("reset", remote.reset_request(seed, options)))

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        # One direction: the remote env's fields, the client's blocking request, the remote env's result.
        remote = self._remote
        return remote.step_result(self._client.request("step", remote.step_request(action)))

    def render(self) -> Any:
        if self.render_mode is None:
            return None
        frame = self._client.drive(self._remote.render("tensor"))
        return frame.copy() if isinstance(frame, np.ndarray) else frame

    def list_tools(self) -> list[dict[str, Any]]:
        return self._client.drive(self._remote.list_tools())

    def call_tool(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self._client.drive(self._remote.call_tool(name, {**(args or {}), **kw}))

    def get_state(self) -> bytes:
        return self._client.drive(self._remote.get_state())

    def set_state(self, state: bytes) -> None:
        self._client.drive(self._remote.set_state(state))

    def close(self) -> None:
        """Closes the session (and the connection when this env made it); idempotent."""
        if self._closed:
            return
        self._closed = True
        release(self._client, self._remote.close(), self._owns_client)
        super().close()

    def __repr__(self) -> str:
        return f"<GymwireEnv {self.env_id} session={self.session_id}>"

    def __reduce__(self) -> tuple[Any, ...]:
        if self.reopen_args is None:
            raise TypeError(
                f"{self!r} shares a Client made elsewhere and cannot be pickled; "
                "make it with gymwire.make(url, env_id, ...) or gymnasium.make(env_id, url=...) to pickle it"
            )
        # The spec travels as state: gymnasium.make sets it after construction, and wrappers read it.
        return (_reopen, self.reopen_args, {"spec": self.spec})


def _reopen(url: str, env_id: str, kwargs: dict[str, Any], client_options: dict[str, Any] | None) -> GymwireEnv:
    return make(url, env_id, client_options=client_options, **kwargs)


def make(url: str, env_id: str, *, client_options: dict[str, Any] | None = None, **kwargs: Any) -> GymwireEnv:
    """Connects to ``url`` and makes a session of ``env_id`` with ``kwargs`` as a ``gymnasium.Env``.

    The env owns its connection and closes it in ``close()``. ``client_options`` go to
    :class:`~gymwire.client.AsyncClient` (token, request_timeout, reconnect, ...).
    """
    env = with_owned_client(url, client_options, lambda c: GymwireEnv(c, c.drive(c.aclient.make(env_id, kwargs)), owns_client=True))
    env.reopen_args = (url, env_id, dict(kwargs), dict(client_options) if client_options is not None else None)
    return env
