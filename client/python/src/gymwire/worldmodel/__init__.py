"""Torch world models served as gymwire envs (``gymwire serve --torch-world-model module:callable``),
with the steps of every session, from every client, batched into shared forward passes.

See docs/world-models.md, "Torch world models", for the contract and when to choose it over the
ONNX path (``gymwire/EvacWorldModel-v0``).
"""

from .contract import InvalidActionError, WorldModelContractError, WorldModelDeviceError, WorldModelMemoryError, WorldModelOutputError, WorldModelSpec
from .env import TorchWorldModelEnv

__all__ = [
    "InvalidActionError",
    "TorchWorldModelEnv",
    "WorldModelContractError",
    "WorldModelDeviceError",
    "WorldModelMemoryError",
    "WorldModelOutputError",
    "WorldModelSpec",
]
