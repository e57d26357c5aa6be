"""Where models run: onnxruntime sessions and torch devices, reporting what actually runs.

Both SDKs fall back the same way: asking for CUDA where it cannot run warns once (a
``RuntimeWarning`` and the logger) and runs on CPU; ``"auto"`` picks CUDA silently when it runs.
Kept free of gymnasium and the client so that the GPU checks (test/gpu/) can import it alone.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

ONNX_CUDA_FALLBACK = "CUDA execution provider unavailable; running the ONNX policy on CPU"
TORCH_CUDA_FALLBACK = "CUDA unavailable; running the torch model on CPU"


def _warn(message: str, reason: str, logger: logging.Logger | None) -> None:
    warnings.warn(f"{message}: {reason}", RuntimeWarning, stacklevel=3)
    (logger or logging.getLogger("gymwire.devices")).warning("%s: %s", message, reason)


def onnx_session(
    path: str, device: str = "auto", device_id: int = 0, threads: int | None = None, logger: logging.Logger | None = None
) -> tuple[Any, str, str | None]:
    """An onnxruntime session for ``path`` on ``device`` ('auto', 'cpu' or 'cuda').

    Returns the session, the device it runs on ('cuda' only when onnxruntime registered the CUDA
    provider: a provider whose libraries fail to load is left out, and the session runs on CPU) and
    the reason for a fallback from an explicit 'cuda' (None otherwise).
    """
    import onnxruntime as ort

    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
    available = ort.get_available_providers()
    providers: list[Any] = ["CPUExecutionProvider"]
    if device != "cpu" and "CUDAExecutionProvider" in available:
        providers = [("CUDAExecutionProvider", {"device_id": device_id}), "CPUExecutionProvider"]
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=providers)
    runs = "cuda" if "CUDAExecutionProvider" in session.get_providers() else "cpu"
    fallback = None
    if device == "cuda" and runs != "cuda":
        fallback = (
            f"onnxruntime has only {available}"
            if "CUDAExecutionProvider" not in available
            else "the CUDA provider did not load (its CUDA libraries are missing)"
        )
        _warn(ONNX_CUDA_FALLBACK, fallback, logger)
    return session, runs, fallback


def torch_device(device: str = "auto", logger: logging.Logger | None = None) -> tuple[str, str | None]:
    """The torch device to use for ``device`` ('auto', 'cpu', 'cuda' or 'cuda:N') and the fallback reason, if any."""
    import torch

    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if device == "cpu":
        return "cpu", None
    if not torch.cuda.is_available():
        if device == "auto":
            return "cpu", None
        reason = "torch.cuda.is_available() is False"
        _warn(TORCH_CUDA_FALLBACK, reason, logger)
        return "cpu", reason
    return ("cuda" if device == "auto" else device), None
