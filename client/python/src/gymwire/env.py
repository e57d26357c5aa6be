"""Remote sessions: their I/O-free half, and as asyncio and Gymnasium environments.

:class:`RemoteSession` is what a session is without any I/O: its spaces and metadata, and each of
its requests as fields and each answer as Gymnasium values. :class:`AsyncRemoteEnv` sends them with
``await`` on an asyncio driver; :class:`GymwireEnv` sends them through a blocking ``Client`` and is
a real ``gymnasium.Env`` (spaces rebuilt exactly, ``check_env`` clean). Seeding follows Gymnasium:
``reset(seed=s)`` seeds a local ``np_random`` (``super().reset``) and forwards ``s`` to the server,
whose env seeds its own RNG, so equal seeds give equal episodes.

Example::

    env = gymwire.make("ws://127.0.0.1:8765", "gymwire/CartPole-v1")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    env.close()
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

from . import errors as E
from ._request_template import FilledRequest
from .spaces import space_from_wire, value_from_wire, value_to_wire

if TYPE_CHECKING:
    from ._transport_asyncio import AsyncioDriver
    from .client import Client


class AsyncRequester(Protocol):
    """What an :class:`AsyncRemoteEnv` sends through: the asyncio driver (``AsyncClient`` is one)."""

    @property
    def is_open(self) -> bool: ...
    async def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]: ...  # type: ignore[assignment]
    def forget(self, session_id: str) -> None: ...


class BlockingRequester(Protocol):
    """What a :class:`GymwireEnv` sends through: a ``Client`` (blocking on either transport)."""

    @property
    def is_open(self) -> bool: ...
    def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]: ...  # type: ignore[assignment]
    def forget(self, session_id: str) -> None: ...


def _decode_info(info: Any) -> dict[str, Any]:
    return info if isinstance(info, dict) else {}


def make_fields(env_id: str, kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The fields of a ``make`` request for ``env_id`` (kwargs are validated by the env's schema on the server)."""
    return {"env_id": env_id, "kwargs": kwargs or {}}


class RemoteSession:
    """One remote session without I/O: its spaces and metadata, its requests as fields, its answers as Gymnasium values.

    Made from a ``make`` answer. The asyncio env (:class:`AsyncRemoteEnv`) and the Gymnasium env
    (:class:`GymwireEnv`) send these requests through their drivers; a caller with a driver of its
    own can too: ``session.step_result(client.request("step", session.step_request(a)))``.
    """

    def __init__(self, made: dict[str, Any]) -> None:
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

    def fields(self, **more: Any) -> dict[str, Any]:
        """This session's id with ``more``: the fields of most of its requests."""
        return {"session_id": self.session_id, **more}

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

    def render_request(self, format: str = "tensor", quality: int | None = None) -> dict[str, Any]:
        """The fields of a ``render`` request: a uint8 ``[H, W, C]`` array (``format='tensor'``), PNG/JPEG bytes, or text."""
        return self.fields(format=format) if quality is None else self.fields(format=format, quality=quality)

    def list_tools_result(self, r: dict[str, Any]) -> list[dict[str, Any]]:
        """A ``list_tools`` result: the env's tools as OpenAI function-calling schemas (kept as :attr:`tool_schemas`)."""
        self.tool_schemas = r["tools"]
        return self.tool_schemas

    def tool_request(self, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """The fields of an ``execute`` request; arguments are validated by the tool's schema on the server."""
        return self.fields(tool=name, args=args or {})

    def close_request(self) -> dict[str, Any] | None:
        """Marks the session closed; the fields of its ``close`` request, or None when it was closed already."""
        if self.closed:
            return None
        self.mark_closed("closed by the client")
        return self.fields()


class AsyncRemoteEnv(RemoteSession):
    """One remote session, asyncio flavour: ``await env.reset(seed=0)``, ``await env.step(a)``."""

    def __init__(self, client: AsyncRequester, made: dict[str, Any]) -> None:
        super().__init__(made)
        self.client = client

    @classmethod
    async def make(cls, client: AsyncioDriver, env_id: str, kwargs: dict[str, Any] | None = None) -> AsyncRemoteEnv:
        """Makes a session of ``env_id`` on an asyncio driver and registers it there (for its close events)."""
        return client.track(cls(client, await client.request("make", make_fields(env_id, kwargs))))

    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.reset_result(await self.client.request("reset", self.reset_request(seed, options)))

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.step_result(await self.client.request("step", self.step_request(action)))

    async def render(self, format: str = "tensor", quality: int | None = None) -> Any:
        """The current frame: a uint8 ``[H, W, C]`` array (``format='tensor'``), PNG/JPEG bytes, or text."""
        return (await self.client.request("render", self.render_request(format, quality)))["frame"]

    async def list_tools(self) -> list[dict[str, Any]]:
        """The env's tools as OpenAI function-calling schemas."""
        return self.list_tools_result(await self.client.request("list_tools", self.fields()))

    async def call_tool(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Executes a tool; arguments are validated by the tool's schema on the server."""
        return (await self.client.request("execute", self.tool_request(name, args)))["result"]

    async def get_state(self) -> bytes:
        return (await self.client.request("get_state", self.fields()))["state"]

    async def set_state(self, state: bytes) -> None:
        await self.client.request("set_state", self.fields(state=bytes(state)))

    async def close(self) -> None:
        """Closes the session; idempotent, and quiet when the connection is already gone."""
        fields = self.close_request()
        if fields is None:
            return
        self.client.forget(self.session_id)
        if self.client.is_open:
            try:
                await self.client.request("close", fields)
            except E.SdkError:
                pass


def close_session(client: BlockingRequester, session: RemoteSession) -> None:
    """Closes a session through a blocking client; idempotent, and quiet when the connection is already gone."""
    fields = session.close_request()
    if fields is None:
        return
    client.forget(session.session_id)
    if client.is_open:
        try:
            client.request("close", fields)
        except (E.GymwireError, RuntimeError):
            pass


class ToolSet:
    """The tools of a :class:`GymwireEnv`: OpenAI schemas plus ``execute``."""

    def __init__(self, env: GymwireEnv) -> None:
        self._env = env

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas: ``[{"type": "function", "function": {name, description, parameters}}]``."""
        return list(self._env.remote.tool_schemas)

    @property
    def names(self) -> list[str]:
        return [t["function"]["name"] for t in self.schemas]

    def execute(self, name: str, args: dict[str, Any] | str | None = None) -> Any:
        """Runs a tool; ``args`` may be a dict or the JSON string an OpenAI tool call carries."""
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        return self._env.call_tool(name, args or {})

    def __len__(self) -> int:
        return len(self.schemas)


class GymwireEnv(gym.Env[Any, Any]):
    """A remote session as a ``gymnasium.Env``; made by :func:`gymwire.make` or ``Client.make``.

    Besides the Gymnasium API it offers ``tools`` (a :class:`ToolSet` of OpenAI schemas with
    ``execute``), ``call_tool``, ``get_state``/``set_state`` and ``session_id``; ``remote`` is the
    session's I/O-free half (:class:`RemoteSession`) and ``client`` the ``Client`` it runs on.

    Envs made by :func:`gymwire.make` or ``gymnasium.make`` pickle (for ``AsyncVectorEnv`` and
    other process pools): unpickling connects again and opens a new session of the same env with the
    same kwargs, so the copy starts unreset, like a freshly made env.
    """

    #: ``(url, env_id, kwargs, client_options)`` for pickling; set by :func:`gymwire.make`.
    reopen_args: tuple[str, str, dict[str, Any], dict[str, Any] | None] | None = None
    #: What unpickling calls with :attr:`reopen_args` (``gymwire.make``'s reopener); set with them.
    reopener: Callable[..., GymwireEnv] | None = None

    def __init__(self, client: Client, remote: RemoteSession, *, owns_client: bool = False) -> None:
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
    def remote(self) -> RemoteSession:
        return self._remote

    @property
    def client(self) -> Client:
        return self._client

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        remote = self._remote
        return remote.reset_result(self._client.request("reset", remote.reset_request(seed, options)))

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        # One direction: the session's fields, the client's blocking request, the session's result.
        remote = self._remote
        return remote.step_result(self._client.request("step", remote.step_request(action)))

    def render(self) -> Any:
        if self.render_mode is None:
            return None
        frame = self._client.request("render", self._remote.render_request("tensor"))["frame"]
        return frame.copy() if isinstance(frame, np.ndarray) else frame

    def list_tools(self) -> list[dict[str, Any]]:
        return self._remote.list_tools_result(self._client.request("list_tools", self._remote.fields()))

    def call_tool(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self._client.request("execute", self._remote.tool_request(name, {**(args or {}), **kw}))["result"]

    def get_state(self) -> bytes:
        return self._client.request("get_state", self._remote.fields())["state"]

    def set_state(self, state: bytes) -> None:
        self._client.request("set_state", self._remote.fields(state=bytes(state)))

    def close(self) -> None:
        """Closes the session (and the connection when this env made it); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            close_session(self._client, self._remote)
        finally:
            if self._owns_client:
                self._client.close()
        super().close()

    def __repr__(self) -> str:
        return f"<GymwireEnv {self.env_id} session={self.session_id}>"

    def __reduce__(self) -> tuple[Any, ...]:
        if self.reopen_args is None or self.reopener is None:
            raise TypeError(
                f"{self!r} shares a Client made elsewhere and cannot be pickled; "
                "make it with gymwire.make(url, env_id, ...) or gymnasium.make(env_id, url=...) to pickle it"
            )
        # The spec travels as state: gymnasium.make sets it after construction, and wrappers read it.
        return (self.reopener, self.reopen_args, {"spec": self.spec})
