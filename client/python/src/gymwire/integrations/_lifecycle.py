"""Who owns a gymwire session inside a framework, when it is reset, and when it is closed.

Every integration opens its sessions here, so one set of rules holds for all of them:

- A trajectory owns one :class:`Episode`: a session made and reset (with the trajectory's seed) when
  the trajectory first needs it, and never shared with another trajectory.
- The episode's return is summed here, from the ``step`` results, and handed out once
  (:meth:`Episode.claim_return`), so a framework that asks several tools for "the" reward counts it once.
- The session is closed when the first of these happens: the episode ends (terminated or
  truncated), the framework releases the trajectory (:meth:`EpisodeTable.close`), the object the
  framework keeps for the trajectory is garbage-collected (``owner=``: a trajectory the framework
  abandons without a word), the episode sits idle past ``idle_timeout``, the worker shuts down
  (:meth:`EpisodeTable.close_all`, and at interpreter exit), or opening it fails half-way.
- A key names one episode for its whole life: a key the framework reuses for a new trajectory (verl's
  ``det-<index>`` request ids repeat every batch) never reaches an older trajectory's session, because
  owners get keys of their own (:func:`owner_key`).

:class:`VectorSessions` is the same guarantee for the N sessions a simulator-style env worker holds
(RLinf, siiRL's embodied rollout, verl's VLA env): closed by ``close()``, by garbage collection, or at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import Any

from ..tools import ToolEnvironment

_LOG = logging.getLogger(__name__)
_OWNER_KEY_ATTR = "_gymwire_episode_key"
# How many closed episodes a table remembers (for late reward claims and refusing ended keys).
_REMEMBERED_CLOSED = 4096


class EpisodeEndedError(RuntimeError):
    """A call for a trajectory whose episode already ended: a trajectory never silently gets a second episode."""


class Episode:
    """One trajectory's session: made, reset, stepped and closed once; its return summed once."""

    def __init__(self, env: ToolEnvironment, first: tuple[Any, dict[str, Any]]) -> None:
        self.env = env
        #: The reset's ``(obs, info)`` (wire values, not JSON).
        self.first = first
        self.episode_return = 0.0
        self.steps = 0
        self.done = False
        self.closed = False
        self.last_used = time.monotonic()
        self._claimed = False
        #: Free for the integration: what it needs to remember about the trajectory (the last text it showed, say).
        self.notes: dict[str, Any] = {}

    @property
    def remote(self) -> Any:
        return self.env.remote

    async def execute(self, tool_name: str, args: dict[str, Any] | str | None = None) -> Any:
        """Runs an env tool (``step``, ``reset`` or one of the env's own) and keeps the return and the end."""
        self.last_used = time.monotonic()
        result = await self.env.aexecute(tool_name, args)
        if isinstance(result, dict) and "reward" in result and "terminated" in result:
            self.record(float(result["reward"]), bool(result["terminated"] or result["truncated"]))
        elif isinstance(result, dict) and set(result) == {"obs", "info"}:
            # The model asked for a new episode in the same session: its return starts again.
            self.episode_return, self.steps, self.done = 0.0, 0, False
        return result

    def record(self, reward: float, done: bool) -> None:
        """Counts one step (for callers that step ``remote`` directly)."""
        self.episode_return += reward
        self.steps += 1
        self.done = done
        self.last_used = time.monotonic()

    def claim_return(self) -> float:
        """The episode's return the first time it is asked for, 0.0 after: summing over tools counts it once."""
        if self._claimed:
            return 0.0
        self._claimed = True
        return float(self.episode_return)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self.env.aclose()


async def start_episode(
    url: str,
    env_id: str,
    kwargs: dict[str, Any] | None = None,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    client_options: dict[str, Any] | None = None,
) -> Episode:
    """Makes a session and resets it; nothing is left open when either step fails."""
    env = ToolEnvironment(url, env_id, kwargs or {}, **(client_options or {}))
    await env.ainitialize()
    try:
        first = await env.remote.reset(seed=None if seed is None else int(seed), options=options)
    except BaseException:
        await env.aclose()
        raise
    return Episode(env, first)


@contextlib.asynccontextmanager
async def episode_session(url: str, env_id: str, kwargs: dict[str, Any] | None = None, **start: Any) -> AsyncIterator[Episode]:
    """An episode for the length of a ``with`` block: the shape of loops that run a whole trajectory in one call."""
    episode = await start_episode(url, env_id, kwargs, **start)
    try:
        yield episode
    finally:
        await episode.close()


def owner_key(owner: Any) -> str:
    """A key of the owner's own, kept on it: unique for its lifetime, unlike ``id()`` or a framework's reused request id."""
    key = getattr(owner, _OWNER_KEY_ATTR, None)
    if key is None:
        key = uuid.uuid4().hex
        setattr(owner, _OWNER_KEY_ATTR, key)
    return str(key)


class EpisodeTable:
    """The episodes of one kind of tool or env, by key; each key's episode is started once even when calls race.

    ``idle_timeout`` (seconds) closes episodes nobody touched for that long, checked whenever an
    episode is opened: the trajectories a framework stops without telling the env (siiRL's turn and
    length limits).
    """

    def __init__(self, name: str, idle_timeout: float | None = None) -> None:
        self.name = name
        self.idle_timeout = idle_timeout
        self._episodes: dict[Hashable, Episode] = {}
        self._loops: dict[Hashable, asyncio.AbstractEventLoop] = {}
        self._locks: dict[Hashable, asyncio.Lock] = {}
        self._closing: set[asyncio.Task[None]] = set()
        # Episodes closed lately: their returns can still be claimed (a release racing a calc_reward), and a key
        # whose episode ended is refused rather than silently given a new episode. The oldest are forgotten.
        self._closed: dict[Hashable, Episode] = {}
        _TABLES.add(self)

    def __len__(self) -> int:
        return len(self._episodes)

    def get(self, key: Hashable) -> Episode | None:
        return self._episodes.get(key)

    async def open(self, key: Hashable, start: Callable[[], Awaitable[Episode]], *, owner: Any = None) -> Episode:
        """The key's open episode, or a new one from ``start()``; with ``owner``, the episode closes when the owner is collected."""
        episode = self._episodes.get(key)
        if episode is not None and not episode.closed:
            return episode
        ended = self._closed.get(key)
        if ended is not None and ended.done:
            raise EpisodeEndedError(f"the episode of {key} has ended (terminated or truncated); a trajectory gets one episode")
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            episode = self._episodes.get(key)
            if episode is not None and not episode.closed:
                return episode
            if self.idle_timeout is not None:
                await self.close_idle(self.idle_timeout)
            episode = await start()
            self._episodes[key] = episode
            self._loops[key] = asyncio.get_running_loop()
            if owner is not None:
                try:
                    weakref.finalize(owner, self._abandoned, key, episode)
                except TypeError:  # an owner without weak references: the other rules still close it
                    _LOG.debug("gymwire %s: %s cannot be watched for collection", self.name, type(owner).__name__)
            return episode

    async def close(self, key: Hashable) -> Episode | None:
        """Closes the key's episode (idempotent); returns it, so its return can still be claimed."""
        self._locks.pop(key, None)
        self._loops.pop(key, None)
        episode = self._episodes.pop(key, None)
        if episode is None:
            return self._closed.get(key)
        self._closed[key] = episode
        while len(self._closed) > _REMEMBERED_CLOSED:
            self._closed.pop(next(iter(self._closed)))
        await episode.close()
        return episode

    def claim_return(self, key: Hashable) -> float:
        """The return of the key's episode, open or lately closed, counted once."""
        episode = self._episodes.get(key) or self._closed.get(key)
        return 0.0 if episode is None else episode.claim_return()

    async def close_idle(self, max_idle: float) -> int:
        now = time.monotonic()
        stale = [key for key, ep in self._episodes.items() if now - ep.last_used > max_idle]
        for key in stale:
            _LOG.info("gymwire %s: closing episode %s, idle for over %.0f s (its trajectory was given up)", self.name, key, max_idle)
            await self.close(key)
        return len(stale)

    async def close_all(self) -> None:
        """Closes every open episode (a worker shutting down, or the end of a batch)."""
        for key in list(self._episodes):
            await self.close(key)

    def _abandoned(self, key: Hashable, episode: Episode) -> None:
        # Runs when the owner is garbage-collected, in whatever thread that happens: the close goes to the episode's loop.
        if self._episodes.get(key) is not episode or episode.closed:
            return
        loop = self._loops.get(key)
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._spawn_close, key)
        except RuntimeError:  # the loop closed in between
            pass

    def _spawn_close(self, key: Hashable) -> None:
        task = asyncio.ensure_future(self.close(key))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def close_at_exit(self) -> None:
        for key in list(self._episodes):
            loop = self._loops.get(key)
            if loop is None or loop.is_closed():
                continue
            try:
                if loop.is_running():
                    asyncio.run_coroutine_threadsafe(self.close(key), loop).result(timeout=5)
                else:
                    loop.run_until_complete(self.close(key))
            except Exception as err:  # noqa: BLE001 - exiting anyway; the server's resume grace reclaims the rest
                _LOG.warning("gymwire %s: could not close episode %s at exit: %s", self.name, key, err)


class VectorSessions:
    """Closes a synchronous client's sessions exactly once: on ``close()``, when its holder is collected, or at exit."""

    def __init__(self, holder: Any, vec: Any, client: Any) -> None:
        self._finalizer = weakref.finalize(holder, VectorSessions._shutdown, vec, client)

    @staticmethod
    def _shutdown(vec: Any, client: Any) -> None:
        try:
            vec.close()
        except Exception as err:  # noqa: BLE001 - the connection may already be gone; the client still closes
            _LOG.debug("gymwire: closing sessions failed: %s", err)
        finally:
            client.close()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        self._finalizer()


_TABLES: weakref.WeakSet[EpisodeTable] = weakref.WeakSet()


@atexit.register
def _close_tables_at_exit() -> None:
    for table in list(_TABLES):
        table.close_at_exit()
