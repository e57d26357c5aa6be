"""One loaded world model and the queue of steps that share its forward passes (the batcher).

Where the batching lives: every session of a model must reach the same batcher, and the batcher
must own the weights on the device (a forward pass can only stack tensors that live in one
process). So the server gives each torch world model one worker process of its own (not the
shared pool, which spreads sessions over workers), and this host batches inside it: steps from all
sessions and all client connections queue here, and the worker's loop
(gymwire/worker/batching.py) runs the queue when the first step has waited ``window_s`` or
``max_batch`` steps wait. One process per model also means one copy of the weights on the card.

Order is first come, first served across sessions and clients: a batch takes the oldest steps, so
a client with one session waits behind at most the steps queued before its own, however many
sessions another client steps.

A session's failure stays with the session: a bad action is refused before it queues; a NaN or
infinite output fails only the rows that have one; a forward pass that raises is run again one
session at a time, so only the sessions whose own input makes it raise fail.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ..worker.batching import Deferred, add_batcher
from ..worker.targets import _callable
from .contract import WorldModelContractError, WorldModelDeviceError, WorldModelMemoryError, WorldModelOutputError, WorldModelSpec


def pick_device(device: str) -> torch.device:
    """'auto' is CUDA when torch sees a GPU, else the CPU; 'cuda' without one is an error, never a silent CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise WorldModelDeviceError(f"device {device!r} was asked for, but torch {torch.__version__} sees no CUDA device here")
    if device != "cpu" and not device.startswith("cuda"):
        raise WorldModelDeviceError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}")
    return torch.device(device)


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    return "cpu"


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class StepRequest:
    """One queued step: the session that asked, its action chunk and the answer to fill."""

    __slots__ = ("session", "actions", "deferred", "queued_at")

    def __init__(self, session: Any, actions: np.ndarray, deferred: Deferred) -> None:
        self.session = session
        self.actions = actions
        self.deferred = deferred
        self.queued_at = time.monotonic()


class ModelHost:
    """A world model on its device, its sessions' memory account, and its step queue."""

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        device: torch.device,
        max_batch: int,
        window_s: float,
        memory_budget_bytes: int | None,
        name: str,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self.spec = WorldModelSpec.of(module)
        self.device = device
        self.device_name = describe_device(device)
        self.name = name
        self.max_batch = max_batch
        self.window_s = window_s
        self.module = module.to(device).eval().requires_grad_(False)
        self.weight_bytes = sum(_nbytes(p) for p in self.module.parameters()) + sum(_nbytes(b) for b in self.module.buffers())
        self.queue: deque[StepRequest] = deque()
        self.sessions = 0
        self.batches = 0
        s = self.spec
        self.session_bytes = s.context_frames * s.height * s.width * 3 + 4 * (
            s.pose_dim + int(np.prod(s.latent_shape or (0,))) + int(np.prod(s.noise_shape or (0,)))
        )
        self.sample_bytes = self._probe()
        if memory_budget_bytes is None and device.type == "cuda":
            memory_budget_bytes = torch.cuda.get_device_properties(device).total_memory
        self.memory_budget_bytes = memory_budget_bytes
        self._check_budget(0)

    # -- memory ---------------------------------------------------------------------------------

    def need_bytes(self, sessions: int) -> int:
        """Device memory the model needs with this many sessions: weights, a full batch's forward pass, and each session's state."""
        return self.weight_bytes + self.max_batch * self.sample_bytes + sessions * self.session_bytes

    def _check_budget(self, sessions: int) -> None:
        if self.memory_budget_bytes is None:
            return
        need = self.need_bytes(sessions)
        if need > self.memory_budget_bytes:
            raise WorldModelMemoryError(
                f"{self.name} on {self.device_name} would need {need} bytes with {sessions} sessions "
                f"(weights {self.weight_bytes}, a batch of {self.max_batch} x {self.sample_bytes} in the forward pass, "
                f"{self.session_bytes} per session); the budget is {self.memory_budget_bytes}",
                {"estimated_bytes": need, "limit_bytes": self.memory_budget_bytes, "sessions": sessions, "device": self.device_name},
            )

    def open_session(self) -> None:
        """Counts a new session against the budget, or raises WorldModelMemoryError and counts nothing."""
        self._check_budget(self.sessions + 1)
        self.sessions += 1

    def close_session(self) -> None:
        self.sessions = max(0, self.sessions - 1)

    def memory_bytes(self) -> int:
        """What the device holds for this process now (CUDA: torch's allocator; CPU: the estimate)."""
        if self.device.type == "cuda":
            return int(torch.cuda.memory_allocated(self.device))
        return self.need_bytes(self.sessions)

    def _probe(self) -> int:
        """Runs one sample through the model: checks the contract at load, and measures what a sample
        costs in the forward pass (CUDA: the allocator's peak; CPU: inputs and outputs twice, an estimate)."""
        s = self.spec
        inputs = self.inputs(
            torch.zeros((1, s.context_frames, s.height, s.width, 3), dtype=torch.uint8, device=self.device),
            np.zeros((1, s.chunk, s.action_dim), dtype=np.float32),
            torch.zeros((1, s.pose_dim), device=self.device) if s.pose_dim else None,
            torch.zeros((1, *s.latent_shape), device=self.device) if s.latent_shape else None,
            torch.zeros((1, *s.noise_shape), device=self.device) if s.noise_shape else None,
        )
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            before = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        out = self.forward(inputs, 1)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return max(1, int(torch.cuda.max_memory_allocated(self.device) - before))
        return 2 * (sum(_nbytes(t) for t in inputs.values()) + sum(_nbytes(t) for t in out.values()))

    # -- the forward pass -----------------------------------------------------------------------

    def inputs(
        self, context: torch.Tensor, actions: np.ndarray, poses: torch.Tensor | None, latent: torch.Tensor | None, noise: torch.Tensor | None
    ) -> dict[str, torch.Tensor]:
        named = {"context": context, "actions": torch.from_numpy(actions).to(self.device), "poses": poses, "latent": latent, "noise": noise}
        return {k: v for k, v in named.items() if v is not None}

    def forward(self, inputs: Mapping[str, torch.Tensor], batch: int) -> dict[str, torch.Tensor]:
        """The model's outputs for a batch, checked against the contract (a break is a WorldModelContractError naming the output)."""
        with torch.inference_mode():
            out = self.module(**inputs)
        if not isinstance(out, Mapping):
            raise WorldModelContractError(f"{self.name}.forward returned a {type(out).__name__}, not a mapping of frames, reward, ...")
        s = self.spec
        expected: dict[str, tuple[tuple[int, ...], tuple[torch.dtype, ...]]] = {
            "frames": ((batch, s.chunk, s.height, s.width, 3), (torch.uint8,)),
            "reward": ((batch, s.chunk), (torch.float32, torch.float64, torch.float16, torch.bfloat16)),
        }
        if s.latent_shape:
            expected["next_latent"] = ((batch, *s.latent_shape), (torch.float32,))
        if s.pose_dim and "next_pose" in out:
            expected["next_pose"] = ((batch, s.pose_dim), (torch.float32,))
        checked: dict[str, torch.Tensor] = {}
        for key, (shape, dtypes) in expected.items():
            t = out.get(key)
            if not isinstance(t, torch.Tensor):
                raise WorldModelContractError(f"{self.name}.forward returned no tensor {key!r} (it returned {sorted(out)})")
            if tuple(t.shape) != shape or t.dtype not in dtypes:
                raise WorldModelContractError(f"{self.name}.forward output {key!r} is {t.dtype} {list(t.shape)}; expected {dtypes[0]} {list(shape)}")
            checked[key] = t
        return checked

    # -- the queue (gymwire.worker.batching.Batcher) ---------------------------------------------

    def submit(self, session: Any, actions: np.ndarray) -> Deferred:
        # A session whose call once stalled submits from its own thread (worker/loop.py) while the
        # loop's thread may be flushing: deque's append and popleft are atomic, and a step appended
        # during a flush waits for the next one.
        deferred = Deferred()
        self.queue.append(StepRequest(session, actions, deferred))
        return deferred

    def deadline(self) -> float | None:
        if not self.queue:
            return None
        if len(self.queue) >= self.max_batch:
            return 0.0
        return self.queue[0].queued_at + self.window_s

    def flush(self) -> None:
        """Runs one batch: the oldest ``max_batch`` steps (the loop calls again while steps are due)."""
        if not self.queue:
            return
        batch = [self.queue.popleft() for _ in range(min(self.max_batch, len(self.queue)))]
        try:
            self._run(batch)
        except Exception:  # noqa: BLE001 - find the sessions whose own input fails, one by one
            if len(batch) == 1:
                raise
            for request in batch:
                try:
                    self._run([request])
                except Exception as err:  # noqa: BLE001
                    request.deferred.fail(err)

    def _run(self, batch: list[StepRequest]) -> None:
        started = time.monotonic()
        sessions = [r.session for r in batch]
        s = self.spec
        inputs = self.inputs(
            torch.stack([x.context for x in sessions]),
            np.stack([r.actions for r in batch]),
            torch.stack([x.pose for x in sessions]) if s.pose_dim else None,
            torch.stack([x.latent for x in sessions]) if s.latent_shape else None,
            torch.stack([x.draw_noise() for x in sessions]).to(self.device) if s.noise_shape else None,
        )
        try:
            out = self.forward(inputs, len(batch))
        except Exception:
            for x in sessions:
                x.undraw_noise()
            raise
        frames = out["frames"]
        # Per row: is every float output finite? One reduction over the batch, one copy to the host.
        finite = torch.isfinite(out["reward"].float()).all(dim=1)
        for key in ("next_latent", "next_pose"):
            if key in out:
                finite &= torch.isfinite(out[key].reshape(len(batch), -1)).all(dim=1)
        frames_host = frames.cpu().numpy()
        reward_host = out["reward"].float().cpu().numpy()
        finite_host = finite.cpu().numpy()
        forward_s = time.monotonic() - started
        self.batches += 1
        stats = {
            "batch": self.batches,
            "batch_size": len(batch),
            "forward_ms": forward_s * 1000,
            "device": self.device_name,
            "memory_bytes": self.memory_bytes(),
        }
        for i, request in enumerate(batch):
            if not finite_host[i]:
                request.session.undraw_noise()
                request.deferred.fail(WorldModelOutputError(f"{self.name} returned NaN or infinity for this session; its state is unchanged"))
                continue
            row = {key: t[i] for key, t in out.items()}
            request.deferred.resolve(
                request.session.advance(frames[i], frames_host[i], reward_host[i], row, {**stats, "queue_ms": (started - request.queued_at) * 1000})
            )


_hosts: dict[str, ModelHost] = {}


def model_host(target: str, model_kwargs: dict[str, Any], *, device: str, max_batch: int, window_ms: float, memory_budget_bytes: int | None) -> ModelHost:
    """The host of a model in this worker, loaded on first use and shared by every session that names the same model and settings."""
    key = json.dumps([target, model_kwargs, device, max_batch, window_ms, memory_budget_bytes], sort_keys=True, default=str)
    host = _hosts.get(key)
    if host is None:
        chosen = pick_device(device)
        if chosen.type == "cpu":
            # Deterministic kernels, and torch's own convolution instead of oneDNN's: it computes each
            # sample on its own, where oneDNN picks kernels by batch size and rounds differently. So
            # a batch equals its sessions stepped one by one, bit for bit (for batch-invariant models:
            # docs/world-models.md, "Equal results").
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.backends.mkldnn.enabled = False
        module = _callable(target)(**model_kwargs)
        if not isinstance(module, torch.nn.Module):
            raise WorldModelContractError(f"{target} returned a {type(module).__name__}, not a torch.nn.Module")
        host = ModelHost(module, device=chosen, max_batch=max_batch, window_s=window_ms / 1000, memory_budget_bytes=memory_budget_bytes, name=target)
        add_batcher(host)
        _hosts[key] = host
    return host
