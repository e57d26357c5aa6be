"""gymwire servers across a Ray cluster: ``pip install "gymwire[ray]"``.

:class:`ServerPool` starts ``gymwire serve`` processes as Ray actors (one per node, N per node, or on
the nodes with a resource such as GPU), checks each through ``/healthz``, and makes envs spread over
them; a vector env from ``make_vec`` steps every server in parallel with one frame each. Dead
servers are restarted by Ray; their sessions fail with :class:`ServerLostError`, or are recreated
when asked. Every node that runs a server needs the ``gymwire`` command (the npm package, Node >= 20)
and this Python package. See docs/scale-out.md.

Example::

    from gymwire.ray import ServerPool
    pool = ServerPool(num_servers=2)                  # ray.init() unless Ray is running already
    envs = pool.make_vec("gymwire/CartPole-v1", num_envs=8)
    obs, infos = envs.reset(seed=0)
    pool.shutdown()
"""

try:
    import ray as _ray  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the install
    raise ImportError('gymwire.ray needs Ray: pip install "gymwire[ray]"') from err

from .placement import eligible_nodes, plan_placement
from .pool import ServerLostError, ServerPool
from .server import GymwireCommandNotFoundError, GymwireServer, ServerStartError, find_gymwire_command
from .vector import PoolVectorEnv

__all__ = [
    "GymwireCommandNotFoundError",
    "GymwireServer",
    "PoolVectorEnv",
    "ServerLostError",
    "ServerPool",
    "ServerStartError",
    "eligible_nodes",
    "find_gymwire_command",
    "plan_placement",
]
