"""gymwire: Gymnasium environments served over WebSockets, from Python.

``gymwire.make(url, env_id, **kwargs)`` returns a ``gymnasium.Env`` for a remote session;
``gymwire.make_vec(url, env_id, num_envs)`` a ``gymnasium.vector.VectorEnv`` stepping all its
sessions in one frame; :class:`Client`/:class:`AsyncClient` share one connection between many
sessions. Importing the package registers the bundled envs with Gymnasium, so
``gymnasium.make("gymwire/CartPole-v1", url=...)`` works too. See docs/python-sdk.md.

Example::

    import gymwire
    env = gymwire.make("ws://127.0.0.1:8765", "gymwire/CartPole-v1")
    obs, info = env.reset(seed=0)
"""

from ._version import __version__
from .client import PROTOCOL_VERSION, AsyncClient, Client, make, make_vec
from .collection import collect
from .dataset import DatasetExistsError, episodes_to_arrays, load_dataset
from .env import AsyncRemoteEnv, GymwireEnv
from .errors import (
    ClientClosedError,
    ConnectFailedError,
    ConnectionLostError,
    GymwireError,
    InvalidActionError,
    RequestTimeoutError,
    SdkError,
    ServerError,
    ServerShutdownError,
    SessionLostError,
    VersionMismatchError,
)
from .policies import ActContext, Policy, PolicyOutput, WaypointPID, make_policy, register_policy
from .registration import BUNDLED_ENV_IDS, register_bundled_envs, register_env, register_server_envs
from .tools import ToolEnvironment, ToolSet
from .vector import AsyncRemoteVectorEnv, GymwireVectorEnv

register_bundled_envs()

__all__ = [
    "PROTOCOL_VERSION",
    "AsyncClient",
    "AsyncRemoteEnv",
    "AsyncRemoteVectorEnv",
    "Client",
    "ClientClosedError",
    "ConnectFailedError",
    "ConnectionLostError",
    "GymwireEnv",
    "GymwireError",
    "GymwireVectorEnv",
    "InvalidActionError",
    "RequestTimeoutError",
    "SdkError",
    "ServerError",
    "ServerShutdownError",
    "SessionLostError",
    "ToolEnvironment",
    "ToolSet",
    "VersionMismatchError",
    "ActContext",
    "Policy",
    "PolicyOutput",
    "WaypointPID",
    "DatasetExistsError",
    "collect",
    "episodes_to_arrays",
    "load_dataset",
    "make",
    "make_policy",
    "make_vec",
    "register_policy",
    "BUNDLED_ENV_IDS",
    "register_bundled_envs",
    "register_env",
    "register_server_envs",
    "__version__",
]
