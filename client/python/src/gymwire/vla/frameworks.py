"""Framework adapters: a torch ``nn.Module``, an ONNX model or a plain function as a VLA model.

Each has ``predict(inputs: VLAInput) -> VLAPrediction`` and ``device``, the device that actually
runs it. A torch module plugs in directly (no export): it is moved to the device and called under
``torch.no_grad()`` with a dict of tensors. Asking for CUDA where it is unavailable warns and runs
on CPU, as the ONNX policies of both SDKs do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from .._devices import torch_device
from .types import VLAInput, VLAPrediction


class CallableModel:
    """A function of :class:`VLAInput` returning a prediction, a dict of outputs or one array."""

    device = "cpu"

    def __init__(self, fn: Callable[[VLAInput], Any], interval: float = 0.5) -> None:
        self.fn = fn
        self.interval = interval

    def predict(self, inputs: VLAInput) -> VLAPrediction:
        return VLAPrediction.from_outputs(self.fn(inputs), self.interval)


class TorchModel:
    """A torch ``nn.Module`` as a VLA model, on ``device`` (``"auto"``: CUDA when available).

    The module is called with a dict of float32 tensors on its device: ``state``, ``command``
    (int64), ``image/<camera>`` (the images as given, uint8 unless a preprocessing hook changed them)
    and ``instruction`` (a list of str). It returns a dict (``waypoints``, ``actions``, ``log_probs``,
    ``values``, any other name becomes an extra) or one tensor (3-D: waypoints; else actions).

    Example::

        model = TorchModel(MyPlanner(), device="cuda")
        policy = VLAPolicy(model, adapter_for("gymwire/Bench2Drive-v0", num_envs=4))
    """

    def __init__(self, module: Any, device: str = "auto", interval: float = 0.5, logger: logging.Logger | None = None) -> None:
        import torch

        device, self.fallback = torch_device(device, logger)
        self.torch = torch
        self.module = module.to(device).eval()
        self.interval = interval

    @property
    def device(self) -> str:
        """Where the module's parameters actually are (``cpu``, ``cuda:0``...)."""
        for p in self.module.parameters():
            return str(p.device)
        for b in self.module.buffers():
            return str(b.device)
        return "cpu"

    def predict(self, inputs: VLAInput) -> VLAPrediction:
        torch = self.torch
        device = self.device
        batch: dict[str, Any] = {}
        for name, value in inputs.as_dict().items():
            if name == "instruction":
                batch[name] = list(value)
            else:
                array = np.asarray(value)
                dtype = torch.int64 if name == "command" else (torch.uint8 if array.dtype == np.uint8 else torch.float32)
                batch[name] = torch.as_tensor(array).to(device=device, dtype=dtype)
        with torch.no_grad():
            out = self.module(batch)
        to_numpy = lambda t: t.detach().to("cpu").numpy() if hasattr(t, "detach") else t  # noqa: E731
        if isinstance(out, dict):
            return VLAPrediction.from_outputs({k: to_numpy(v) for k, v in out.items()}, self.interval)
        return VLAPrediction.from_outputs(to_numpy(out), self.interval)


class OnnxModel:
    """An ONNX model as a VLA model: inputs by name from :meth:`VLAInput.as_dict` (``state``, ``command``,
    ``image/<camera>``, or through ``inputs``), outputs by name (``waypoints``, ``actions``, ...).

    Runs on :class:`gymwire.policies.OnnxPolicy`'s session, so devices and fallback are the same.
    """

    def __init__(self, path: str, device: str = "auto", inputs: dict[str, str] | None = None, interval: float = 0.5) -> None:
        from ..policies import OnnxPolicy

        self.policy = OnnxPolicy(path, device=device, inputs=inputs)
        self.interval = interval

    @property
    def device(self) -> str:
        return self.policy.device

    def predict(self, inputs: VLAInput) -> VLAPrediction:
        named = {k: v for k, v in inputs.as_dict().items() if k != "instruction"}
        feeds = self.policy.feeds(named)
        outputs = dict(zip(self.policy.output_names, self.policy.session.run(None, feeds), strict=True))
        return VLAPrediction.from_outputs(outputs, self.interval)


def wrap_model(model: Any, framework: str | None = None, **options: Any) -> Any:
    """A model ready for :class:`~gymwire.vla.VLAPolicy`: torch modules and functions get their adapter.

    ``framework``: ``"torch"``, ``"onnx"`` (``model`` is a path), ``"callable"``, or None to tell
    from the object (anything with ``predict`` is used as it is).
    """
    if framework is None:
        if hasattr(model, "predict"):
            return model
        framework = "torch" if hasattr(model, "parameters") and hasattr(model, "to") else "callable" if callable(model) else None
    if framework == "torch":
        return TorchModel(model, **options)
    if framework == "onnx":
        return OnnxModel(model, **options)
    if framework == "callable":
        return CallableModel(model, **options)
    raise ValueError(f"cannot tell how to run {type(model).__name__}; framework must be 'torch', 'onnx' or 'callable', got {framework!r}")
