"""The contract a torch world model follows to be served as ``gymwire/TorchWorldModel-v0``.

A world model is a ``torch.nn.Module`` with a ``world_model_spec`` attribute (:class:`WorldModelSpec`)
whose ``forward`` takes keyword tensors, all with the batch first (B sessions):

- ``context`` uint8 [B, T, H, W, 3]: the last T frames (RGB, 0..255);
- ``actions`` float32 [B, C, A]: the action chunk;
- ``poses`` float32 [B, P]: the pose before the chunk, when ``pose_dim`` > 0;
- ``latent`` float32 [B, *latent_shape]: the model's state from the last chunk (zeros after
  reset), when ``latent_shape`` is set;
- ``noise`` float32 [B, *noise_shape]: standard normal from the session's seeded generator, when
  ``noise_shape`` is set (same seed, same frames, whatever the batch);

and returns a mapping with ``frames`` uint8 [B, C, H, W, 3], ``reward`` float32 [B, C] and, as the
inputs ask, ``next_latent`` [B, *latent_shape] and optionally ``next_pose`` [B, P]. Samples must
not depend on each other (no batch statistics): the host batches sessions of many clients into one
call and hands each its own row.

It may define ``initial_observation(seed: int) -> (frame uint8 [H, W, 3], pose float32 [P])`` for
resets that bring no ``options={"frame": ..., "pose": ...}``; without it a reset starts from a
seeded noise frame and a zero pose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class WorldModelContractError(TypeError):
    """The module breaks the contract (a missing spec, an input or output of the wrong shape or dtype); the message says what."""


class WorldModelMemoryError(MemoryError):
    """A make would take the model's device past its memory budget; ``details`` has the figures."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


class WorldModelOutputError(ArithmeticError):
    """The model returned NaN or infinity for this session; the session's state is left as it was."""


class InvalidActionError(ValueError):
    """The action chunk does not fit the action space (shape, NaN, bounds)."""


class WorldModelDeviceError(RuntimeError):
    """The device asked for is not there (cuda on a machine without one)."""


@dataclass(frozen=True)
class WorldModelSpec:
    """What a world model takes and gives, and how the env drives it."""

    height: int
    width: int
    context_frames: int = 4
    chunk: int = 8
    action_dim: int = 7
    #: 0: the model takes no pose.
    pose_dim: int = 0
    #: (): the model keeps no latent state between chunks.
    latent_shape: tuple[int, ...] = ()
    #: (): the model takes no noise.
    noise_shape: tuple[int, ...] = ()
    action_low: float = -1.0
    action_high: float = 1.0
    #: A frame whose reward reaches this terminates the episode on the chunk's last frame; None: never.
    success_threshold: float | None = None
    #: Episode length in frames (a chunk counts ``chunk`` frames); the step that reaches it truncates.
    max_episode_steps: int = 256

    @staticmethod
    def of(module: Any) -> WorldModelSpec:
        spec = getattr(module, "world_model_spec", None)
        if not isinstance(spec, WorldModelSpec):
            raise WorldModelContractError(
                f"{type(module).__name__} has no world_model_spec (a gymwire.worldmodel.WorldModelSpec); see docs/world-models.md, 'Torch world models'"
            )
        for name in ("height", "width", "context_frames", "chunk", "action_dim"):
            if int(getattr(spec, name)) < 1:
                raise WorldModelContractError(f"world_model_spec.{name} must be at least 1, got {getattr(spec, name)}")
        return spec
