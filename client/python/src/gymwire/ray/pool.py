"""A pool of gymwire servers running as Ray actors, and the connections to them.

:class:`ServerPool` starts the servers (placement by :func:`~gymwire.ray.placement.plan_placement`),
keeps one :class:`~gymwire.Client` per server, and makes envs on them: ``make`` puts a session on
the least-loaded server, ``make_vec`` spreads sessions over every server and steps them with one
``step_batch`` frame per server, all servers in parallel (:class:`~gymwire.ray.vector.PoolVectorEnv`).

Faults: the actors restart (``max_restarts``). When a server's connection drops, the pool asks its
actor where it is; a new incarnation means the old server and its sessions are gone, so everything
still waiting on it fails at once with :class:`ServerLostError` and the pool connects to the
restarted server. A server that does not come back within ``restart_timeout`` is marked lost and
later requests for it raise at once. Other servers are untouched and keep stepping.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..client import Client, EventLoopThread
from ..env import GymwireEnv
from ..errors import SdkError
from .errors import ServerLostError as ServerLostError  # re-exported: where it was first defined
from .placement import plan_placement
from .server import GymwireServer, fetch_health, http_url_of
from .vector import PoolVectorEnv

_log = logging.getLogger("gymwire.ray")
T = TypeVar("T")


@dataclass
class _Server:
    """One pool server: its actor, where it is now, and the pool's connection to it."""

    index: int
    actor: Any
    info: dict[str, Any]
    client: Client | None = None
    #: Bumped each time the server is replaced; envs remember the generation they were made in.
    generation: int = 0
    #: Why the current generation has no server (restart failed), or None.
    lost: ServerLostError | None = None
    recovering: bool = False
    sessions: int = 0
    changed: threading.Condition = field(default_factory=threading.Condition)


def _wait_for_servers(actors: list[Any], timeout: float) -> list[dict[str, Any]]:
    """Each actor's server info, in order, showing progress while the servers start (a bar when
    tqdm is installed, else a log line per server): starting takes seconds per server."""
    pending = {a.info.remote(): i for i, a in enumerate(actors)}
    infos: list[dict[str, Any] | None] = [None] * len(actors)
    deadline = time.monotonic() + timeout
    try:
        from tqdm.auto import tqdm

        bar: Any = tqdm(total=len(actors), desc="gymwire servers starting", unit="server")
    except ImportError:
        bar = None
    try:
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{len(pending)} of {len(actors)} gymwire servers did not start within {timeout:.0f} s")
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=remaining)
            for ref in ready:
                index = pending.pop(ref)
                infos[index] = ray.get(ref)
                if bar is not None:
                    bar.update(1)
                else:
                    _log.info("gymwire server %d/%d up at %s", len(actors) - len(pending), len(actors), infos[index]["url"])
    finally:
        if bar is not None:
            bar.close()
    return [info for info in infos if info is not None]


class ServerPool:
    """gymwire servers as Ray actors across a cluster, with envs spread over them.

    Placement: ``num_servers`` (spread by Ray), ``servers_per_node`` (on every node), and
    ``node_resource`` (only nodes that have it, such as ``"GPU"`` for world models); with none of
    them, one server per node. Each server actor reserves ``num_cpus``/``num_gpus``/``resources``;
    ``actor_options`` go to ``.options()`` as they are (a framework's placement group, say).
    ``serve_args`` are extra ``gymwire serve`` flags, ``token`` the server token (also used by the
    pool's clients), ``gymwire_bin`` the server command on the nodes (see
    :func:`~gymwire.ray.server.find_gymwire_command`). If Ray is not initialized the pool calls
    ``ray.init(**ray_init_kwargs)`` and ``shutdown()`` ends that Ray session again; inside a
    framework's cluster it uses the running one.

    ``recreate_sessions`` is the default for ``make_vec``: when a server dies, make new sessions on
    its restarted server (reported as truncated episodes) instead of raising :class:`ServerLostError`.

    Example::

        from gymwire.ray import ServerPool
        with ServerPool(num_servers=2) as pool:
            envs = pool.make_vec("gymwire/CartPole-v1", num_envs=8)
            obs, infos = envs.reset(seed=0)
    """

    def __init__(
        self,
        num_servers: int | None = None,
        *,
        servers_per_node: int | None = None,
        node_resource: str | None = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
        resources: dict[str, float] | None = None,
        actor_options: dict[str, Any] | None = None,
        serve_args: Sequence[str] = (),
        token: str | None = None,
        gymwire_bin: str | Sequence[str] | None = None,
        env_vars: dict[str, str] | None = None,
        max_restarts: int = -1,
        startup_timeout: float = 120.0,
        restart_timeout: float = 60.0,
        recreate_sessions: bool = False,
        client_options: dict[str, Any] | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.restart_timeout = restart_timeout
        self.recreate_sessions = recreate_sessions
        self._token = token
        self._client_options = dict(client_options or {})
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(**(ray_init_kwargs or {}))
        self._closed = False
        # Every server's connection runs on this one loop: a vector step is one hop to it, and the
        # servers' frames go out together (a loop thread per connection would contend for the GIL).
        self._loop_thread = EventLoopThread("gymwire-pool")
        self.loop = self._loop_thread.loop
        self._retired: list[Client] = []
        self._vectors: list[PoolVectorEnv] = []
        self._envs: list[GymwireEnv] = []
        actors: list[Any] = []
        try:
            targets = plan_placement(ray.nodes(), num_servers=num_servers, servers_per_node=servers_per_node, node_resource=node_resource)
            actor_class = ray.remote(GymwireServer)
            for target in targets:
                # Soft affinity: a server whose node is lost restarts elsewhere rather than not at all.
                strategy: Any = "SPREAD" if target is None else NodeAffinitySchedulingStrategy(node_id=target, soft=True)
                options: dict[str, Any] = {
                    "num_cpus": num_cpus,
                    "num_gpus": num_gpus,
                    "max_restarts": max_restarts,
                    # Calls made while the actor restarts wait for it (bounded by the pool's timeouts).
                    "max_task_retries": -1 if max_restarts != 0 else 0,
                    "scheduling_strategy": strategy,
                    **({"resources": resources} if resources else {}),
                    **(actor_options or {}),
                }
                actors.append(
                    actor_class.options(**options).remote(
                        list(serve_args), gymwire_bin=gymwire_bin, token=token, env_vars=env_vars, startup_timeout=startup_timeout
                    )
                )
            infos = _wait_for_servers(actors, timeout=startup_timeout + 30)
            self._servers = [_Server(index=i, actor=a, info=info) for i, (a, info) in enumerate(zip(actors, infos, strict=True))]
            for server in self._servers:
                server.client = self._connect(server)
        except BaseException:
            for a in actors:
                ray.kill(a, no_restart=True)
            if self._owns_ray:
                ray.shutdown()
            self._loop_thread.stop()
            raise

    # -- what the pool has ---------------------------------------------------------------------

    @property
    def urls(self) -> list[str]:
        """The servers' WebSocket URLs, reachable from any node (they change when a server restarts)."""
        return [s.info["url"] for s in self._servers]

    @property
    def servers(self) -> list[dict[str, Any]]:
        """Per server: ``url``, ``incarnation``, ``node_id``, ``node_ip``, ``pid``, and ``lost`` (a message, or None)."""
        return [{**s.info, "lost": None if s.lost is None else str(s.lost)} for s in self._servers]

    @property
    def actors(self) -> list[Any]:
        """The servers' Ray actor handles (for ``ray.kill`` in fault drills, or custom calls)."""
        return [s.actor for s in self._servers]

    def health(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Each server's ``/healthz`` fetched from this process: ``{"ok", "status", "body", "url"}``."""
        return [{**fetch_health(http_url_of(s.info["url"]), timeout), "url": s.info["url"]} for s in self._servers]

    # -- making envs ---------------------------------------------------------------------------

    def make(self, env_id: str, *, server: int | None = None, **kwargs: Any) -> GymwireEnv:
        """A ``gymnasium.Env`` for one session of ``env_id`` on the least-loaded server (or ``server``)."""
        self._check_open()
        chosen = self._servers[server] if server is not None else min(self._servers, key=lambda s: (s.lost is not None, s.sessions))
        env = self.client_of(chosen.index).make(env_id, **kwargs)
        chosen.sessions += 1
        self._envs.append(env)
        return env

    def make_vec(self, env_id: str, num_envs: int, autoreset_mode: str = "next_step", *, recreate_sessions: bool | None = None, **kwargs: Any) -> PoolVectorEnv:
        """A ``gymnasium.vector.VectorEnv`` of ``num_envs`` sessions spread evenly over the servers.

        Envs ``0..k-1`` live on server 0, the next block on server 1, and so on; each step sends one
        ``step_batch`` frame to every server at once. ``recreate_sessions`` overrides the pool's default.
        """
        self._check_open()
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        live = [s for s in self._servers if s.lost is None] or self._servers
        counts = [num_envs // len(live) + (1 if i < num_envs % len(live) else 0) for i in range(len(live))]
        assignment = [(server.index, count) for server, count in zip(live, counts, strict=True) if count > 0]
        vec = PoolVectorEnv(
            self,
            env_id,
            assignment,
            kwargs,
            autoreset_mode,
            recreate_sessions=self.recreate_sessions if recreate_sessions is None else recreate_sessions,
        )
        for index, count in assignment:
            self._servers[index].sessions += count
        self._vectors.append(vec)
        return vec

    # -- connections and faults (used by PoolVectorEnv) -----------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine on the pool's loop, where every server's ``AsyncClient`` (``client_of(i).aclient``) runs."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def generation_of(self, index: int) -> int:
        return self._servers[index].generation

    def client_of(self, index: int, generation: int | None = None) -> Client:
        """The connection to server ``index``; raises ServerLostError if it is gone (or replaced since ``generation``)."""
        server = self._servers[index]
        with server.changed:
            if generation is not None and generation != server.generation:
                raise self._lost_error(server, f"it was replaced since generation {generation}")
            if server.lost is not None or server.client is None:
                raise server.lost or self._lost_error(server, "it has no connection")
            return server.client

    def wait_replaced(self, index: int, generation: int, timeout: float | None = None) -> bool:
        """Whether server ``index`` is past ``generation`` (replaced or lost).

        Called when a request on it failed with a connection error: the error can come before the
        connection's drop starts the check (a server that shuts down says so first), so the check
        runs here unless it is running already, and its verdict is awaited.
        """
        server = self._servers[index]
        deadline = time.monotonic() + (self.restart_timeout if timeout is None else timeout)
        self.recover(index, generation)
        with server.changed:
            while server.recovering and server.generation == generation:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                server.changed.wait(remaining)
            return server.generation != generation

    def recover(self, index: int, generation: int) -> None:
        """Finds out whether server ``index`` was replaced (after its connection dropped), and reconnects if so.

        Runs on its own thread, started by the connection's ``disconnected`` event; it asks the actor
        for its incarnation (waiting while Ray restarts it, up to ``restart_timeout``).
        """
        server = self._servers[index]
        with server.changed:
            if server.generation != generation or server.recovering or self._closed:
                return
            server.recovering = True
        info: dict[str, Any] | None = None
        cause: BaseException | None = None
        try:
            info = self._actor_info(server.actor, self.restart_timeout)
        except Exception as err:  # noqa: BLE001 - any failure here means the server did not come back
            cause = err
        if info is not None and info["incarnation"] == server.info["incarnation"]:
            # The same server: a network blip, which the client resumes by itself.
            with server.changed:
                server.recovering = False
                server.changed.notify_all()
            return
        old_client = server.client
        lost = self._lost_error(
            server,
            f"Ray restarted it at {info['url']}" if info is not None else f"it did not come back within {self.restart_timeout} s ({cause})",
            restarted_url=None if info is None else info["url"],
        )
        if old_client is not None:
            _retire(old_client, lost)
        new_client: Client | None = None
        if info is not None and not self._closed:
            try:
                new_client = self._connect(server, info)
            except SdkError as err:
                lost = self._lost_error(server, f"its restarted server at {info['url']} refused the connection ({err})")
        with server.changed:
            if old_client is not None:
                self._retired.append(old_client)
            server.generation += 1
            server.sessions = 0
            server.client = new_client
            server.lost = None if new_client is not None else lost
            if info is not None:
                server.info = info
            server.recovering = False
            server.changed.notify_all()

    def _connect(self, server: _Server, info: dict[str, Any] | None = None) -> Client:
        info = info or server.info
        generation = server.generation if info is server.info else server.generation + 1

        def on_event(event: dict[str, Any]) -> None:
            dropped = event.get("type") == "disconnected" or (event.get("type") == "reconnected" and not event.get("resumed"))
            if dropped and not self._closed:
                # Called on the client's loop: asking Ray (which may wait for a restart) happens elsewhere.
                threading.Thread(target=self.recover, args=(server.index, generation), name="gymwire-pool-recover", daemon=True).start()

        options = {"request_timeout": 120.0, "reconnect_timeout": self.restart_timeout, **self._client_options, "on_event": on_event}
        if self._token is not None:
            options.setdefault("token", self._token)
        # On the pool's shared loop (the asyncio transport): closing the client leaves the loop running.
        return Client(info["url"], loop=self.loop, **options)

    @staticmethod
    def _actor_info(actor: Any, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no answer from the server actor within {timeout} s")
            try:
                return ray.get(actor.info.remote(), timeout=remaining)
            except ray.exceptions.GetTimeoutError:
                raise TimeoutError(f"no answer from the server actor within {timeout} s") from None
            except ray.exceptions.ActorDiedError:
                raise
            except ray.exceptions.RayActorError:
                time.sleep(0.2)  # unavailable for a moment (restarting): ask again

    def _lost_error(self, server: _Server, what: str, restarted_url: str | None = None) -> ServerLostError:
        return ServerLostError(
            f"gymwire server {server.index} at {server.info['url']} died and its sessions are gone; {what}",
            {"server": server.index, "url": server.info["url"], "restarted_url": restarted_url},
        )

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the server pool is shut down")

    # -- ending --------------------------------------------------------------------------------

    def shutdown(self, timeout: float = 15.0) -> None:
        """Closes the pool's envs and connections, stops every server and actor it started, and ends
        the Ray session if the pool started it; idempotent."""
        if self._closed:
            return
        for vec in list(self._vectors):
            vec.close()
        for env in list(self._envs):
            env.close()
        self._closed = True
        clients = [s.client for s in self._servers if s.client is not None] + self._retired
        for client in clients:
            client.close()
        try:
            ray.get([s.actor.stop.remote() for s in self._servers], timeout=timeout)
        except Exception:  # noqa: BLE001 - a dead or stuck actor is killed below either way
            pass
        for server in self._servers:
            ray.kill(server.actor, no_restart=True)
        if self._owns_ray:
            ray.shutdown()
        self._loop_thread.stop()

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<ServerPool {len(self._servers)} servers: {', '.join(self.urls)}>"


def _retire(client: Client, err: SdkError) -> None:
    """Fails everything waiting on a dead server's connection with ``err``, and closes it for good
    (later calls raise ``err``)."""
    try:
        client.abandon(err)
    except Exception:  # noqa: BLE001 - best effort: the connection is dead already
        pass
