"""Gymnasium registration: ``import gymwire`` registers the server's bundled envs.

``gymnasium.make("gymwire/CartPole-v1", url="ws://127.0.0.1:8765")`` (or the
``"gymwire:gymwire/CartPole-v1"`` form, which imports this package first) then makes a remote
session wrapped like any registered env, with ``env.spec`` set; ``gymnasium.make_vec(id, num_envs,
url=...)`` makes a :class:`~gymwire.vector.GymwireVectorEnv` stepping every session in one frame. Further ``make`` keyword arguments
are the env's own kwargs, validated by the server; ``client_options`` go to the connection.

Envs a server hosts under other ids (plugins, Python envs) are registered with
:func:`register_server_envs` or :func:`register_env`.

Example::

    import gymnasium as gym
    import gymwire  # noqa: F401  (registers the envs)

    env = gym.make("gymwire/CartPole-v1", url="ws://127.0.0.1:8765")
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from .client import Client, make, make_vec

if TYPE_CHECKING:
    from .env import GymwireEnv
    from .vector import GymwireVectorEnv

#: The envs every gymwire server hosts (``gymwire envs``); tests/test_registration.py keeps this
#: list equal to what a live server lists.
BUNDLED_ENV_IDS: tuple[str, ...] = (
    "gymwire/Bench2Drive-v0",
    "gymwire/CartPole-v1",
    "gymwire/Conformance-v0",
    "gymwire/EvacWorldModel-v0",
    "gymwire/NavsimEnv-v1",
    "gymwire/NavsimEnv-v2",
)

ENTRY_POINT = "gymwire.registration:make_registered"
VECTOR_ENTRY_POINT = "gymwire.registration:make_registered_vec"


def make_registered(*, env_id: str, url: str | None = None, client_options: dict[str, Any] | None = None, **kwargs: Any) -> GymwireEnv:
    """The entry point of every registered id: a session of ``env_id`` on the server at ``url``."""
    if url is None:
        raise TypeError(f'{env_id} is a remote env: pass the server\'s address, e.g. gymnasium.make("{env_id}", url="ws://127.0.0.1:8765")')
    return make(url, env_id, client_options=client_options, **kwargs)


def make_registered_vec(
    *,
    env_id: str,
    num_envs: int,
    url: str | None = None,
    client_options: dict[str, Any] | None = None,
    autoreset_mode: str = "next_step",
    **kwargs: Any,
) -> GymwireVectorEnv:
    """The vector entry point: ``gymnasium.make_vec(id, num_envs, url=...)`` steps every session in one frame."""
    if url is None:
        raise TypeError(f'{env_id} is a remote env: pass the server\'s address, e.g. gymnasium.make_vec("{env_id}", num_envs, url="ws://127.0.0.1:8765")')
    return make_vec(url, env_id, num_envs, autoreset_mode, client_options=client_options, **kwargs)


def register_env(env_id: str, **spec_kwargs: Any) -> None:
    """Registers ``env_id`` with Gymnasium as a remote env (``url`` is then a ``make`` argument).

    ``spec_kwargs`` become the spec's default kwargs (a ``url`` among them makes it optional in
    ``gymnasium.make``). Registering an id again replaces its spec.
    """
    if env_id in gym.registry:
        del gym.registry[env_id]  # replaced quietly: re-registering is how a server's url becomes the default
    gym.register(
        id=env_id,
        entry_point=ENTRY_POINT,
        vector_entry_point=VECTOR_ENTRY_POINT,
        kwargs={"env_id": env_id, **spec_kwargs},
        disable_env_checker=False,
    )


def register_server_envs(url: str, **client_options: Any) -> list[str]:
    """Registers every env the server at ``url`` lists, with ``url`` as their default; returns the ids."""
    client = Client(url, **client_options)
    try:
        ids = [listing["id"] for listing in client.list_envs()]
    finally:
        client.close()
    for env_id in ids:
        register_env(env_id, url=url, **({"client_options": client_options} if client_options else {}))
    return ids


#: Ids whose higher "version" is another benchmark, not a newer release of the same env: NAVSIM's
#: v1 scores the PDM Score and v2 the Extended PDM Score. Gymnasium would call v1 out of date.
DISTINCT_VERSIONS: tuple[str, ...] = ("gymwire/NavsimEnv-v1",)


def register_bundled_envs() -> None:
    """Registers :data:`BUNDLED_ENV_IDS` (``import gymwire`` does this once)."""
    for env_id in BUNDLED_ENV_IDS:
        if env_id not in gym.registry:
            register_env(env_id)
    for env_id in DISTINCT_VERSIONS:
        # Only Gymnasium's "out of date" warning for these ids; every other warning stays.
        warnings.filterwarnings("ignore", message=f".*The environment {env_id} is out of date", category=DeprecationWarning)
