"""Trajectory writers for the formats trainers load: gymwire's Arrow (the default), LeRobot and Minari.

:func:`open_writer` gives a writer with the :class:`~gymwire.dataset.TrajectoryWriter` interface
(``add(episode)``, ``discarded(n)``, ``close(policy) -> manifest``) for any of them, so
:func:`gymwire.collect` streams whole episodes into each the same way. The LeRobot writer needs
``pip install 'gymwire[lerobot]'`` and the Minari one ``pip install 'gymwire[minari]'``; without
them :class:`MissingExtraError` names the extra. ``python -m gymwire.formats convert`` turns an
Arrow dataset (what ``gymwire rollout`` writes first) into either format, episode by episode.

Example::

    gymwire.collect(env, policy, episodes=10, out_dir="data/cartpole-lerobot", format="lerobot")
    LeRobotDataset("gymwire/cartpole-lerobot", root="data/cartpole-lerobot")
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from gymnasium import spaces as gs

from ._files import clear_for_writing as clear_for_writing  # re-exported: the writers' shared rule

FORMATS = ("arrow", "lerobot", "minari")
#: The modules each format's writer imports, checked before any collection starts.
_NEEDS = {"lerobot": ("lerobot", "av", "torch"), "minari": ("minari", "pyarrow"), "arrow": ("pyarrow",)}
_EXTRA = {"lerobot": "lerobot", "minari": "minari", "arrow": "datasets"}


class MissingExtraError(ImportError):
    """A format's library is not installed; the message names the pip extra that installs it."""


def require(format: str) -> None:
    """Raises :class:`MissingExtraError` unless ``format``'s libraries are installed here.

    Finds them without importing them: importing LeRobot (and torch with it) takes tens of seconds,
    which a rollout should not wait before it starts.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown dataset format {format!r}: one of {', '.join(FORMATS)}")
    for module in _NEEDS[format]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(f"the {format} format needs {module}, which is not installed; install it with: pip install 'gymwire[{_EXTRA[format]}]'")


def open_writer(
    format: str,
    out_dir: str | Path,
    env_id: str,
    observation_space: gs.Space[Any],
    action_space: gs.Space[Any],
    *,
    env_kwargs: dict[str, Any] | None = None,
    overwrite: bool = False,
    fps: int | None = None,
    dataset_id: str | None = None,
) -> Any:
    """A writer of ``format`` into ``out_dir`` (``fps``: LeRobot's frame rate; ``dataset_id``: the
    LeRobot repo id or the Minari dataset id, derived from ``out_dir`` by default)."""
    require(format)
    if format == "arrow":
        from ..dataset import TrajectoryWriter

        return TrajectoryWriter(out_dir, env_id, observation_space, action_space, env_kwargs=env_kwargs, overwrite=overwrite)
    if format == "lerobot":
        from .lerobot import LeRobotWriter

        return LeRobotWriter(out_dir, env_id, observation_space, action_space, overwrite=overwrite, fps=fps, repo_id=dataset_id)
    from .minari import MinariWriter

    return MinariWriter(out_dir, env_id, observation_space, action_space, env_kwargs=env_kwargs, overwrite=overwrite, dataset_id=dataset_id)
