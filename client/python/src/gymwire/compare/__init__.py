"""A world model against its simulator: both envs start from the same frame and take the same
actions, and every imagined frame is measured against the simulated one (PSNR, SSIM) with the two
envs' success flags side by side (docs/world-models.md, "A world model against its simulator").

The simulator is reset with the seed; its first frame, resized to the world model's resolution,
starts the world model (reset option ``frame``; its ``task_description`` goes as ``task`` when both
observations have one). Each world-model step takes a chunk of ``C`` actions; the simulator takes
the chunk's rows one by one, and frame ``t`` of the chunk is compared with the simulator's frame
after its ``t``-th step (every frame when the world model's step info carries ``frames``
[C, H, W, 3], as ``gymwire/EvacWorldModel-v0`` does with ``return_all_frames``; else the chunk's last
frame only). Row 0 compares the two first frames. The run stops when either env's episode ends.

Works on any pair of Gymnasium envs, remote (``gymwire.make``) or local:

>>> from gymwire.compare import compare_envs
>>> report = compare_envs(world_model, simulator, simulator_image="agentview_image", chunks=4, seed=0)  # doctest: +SKIP
>>> report.summary["mean_ssim"]  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from .metrics import psnr, resize_frame, ssim

SSIM_METHOD = "Wang et al. 2004 (scikit-image structural_similarity: Gaussian window sigma 1.5, K1 0.01, K2 0.03, data range 255, mean over RGB)"
PSNR_METHOD = "10 log10(255^2 / MSE) over uint8 RGB (null when the frames are identical)"
RESIZE_METHOD = "scikit-image resize: bilinear, anti-aliased when shrinking, rounded to uint8"


@dataclass
class FrameRow:
    """One compared frame: ``step`` counts simulator steps (0 is the first frame)."""

    step: int
    chunk: int | None
    psnr: float | None
    ssim: float
    simulator_success: bool | None
    world_model_success: bool | None

    @property
    def success_agrees(self) -> bool | None:
        if self.simulator_success is None or self.world_model_success is None:
            return None
        return self.simulator_success == self.world_model_success

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "chunk": self.chunk,
            "psnr": self.psnr,
            "ssim": self.ssim,
            "simulator_success": self.simulator_success,
            "world_model_success": self.world_model_success,
            "success_agrees": self.success_agrees,
        }


@dataclass
class ComparisonReport:
    rows: list[FrameRow]
    frame_shape: tuple[int, int, int]
    simulator_frame_shape: tuple[int, ...]
    chunk: int
    seed: int | None
    ended: str
    about: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> dict[str, Any]:
        stepped = [r for r in self.rows if r.step > 0]
        psnrs = [r.psnr for r in stepped if r.psnr is not None]
        ssims = [r.ssim for r in stepped]
        judged = [r.success_agrees for r in stepped if r.success_agrees is not None]

        def first(key: str) -> int | None:
            return next((r.step for r in stepped if getattr(r, key)), None)

        return {
            "frames": len(stepped),
            "mean_psnr": float(np.mean(psnrs)) if psnrs else None,
            "mean_ssim": float(np.mean(ssims)) if ssims else None,
            "min_ssim": float(np.min(ssims)) if ssims else None,
            "success_agreement": sum(judged) / len(judged) if judged else None,
            "first_success": {"simulator": first("simulator_success"), "world_model": first("world_model_success")},
            "success_agrees": all(judged) if judged else None,
            "ended": self.ended,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.about,
            "seed": self.seed,
            "chunk": self.chunk,
            "frame_shape": list(self.frame_shape),
            "simulator_frame_shape": list(self.simulator_frame_shape),
            "methods": {"psnr": PSNR_METHOD, "ssim": SSIM_METHOD, "resize": RESIZE_METHOD},
            "steps": [r.as_dict() for r in self.rows],
            "summary": self.summary,
        }

    def table(self) -> str:
        """The per-frame rows and the summary as a text table for a terminal."""

        def show(value: Any, fmt: str) -> str:
            if value is None:
                return "-"
            if isinstance(value, bool):
                return "yes" if value else "no"
            return format(value, fmt)

        head = f"{'step':>5} {'chunk':>5} {'PSNR dB':>8} {'SSIM':>7} {'sim ok':>6} {'wm ok':>6} {'agree':>6}"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            lines.append(
                f"{r.step:>5} {show(r.chunk, 'd'):>5} {show(r.psnr, '.2f'):>8} {r.ssim:>7.4f} "
                f"{show(r.simulator_success, ''):>6} {show(r.world_model_success, ''):>6} {show(r.success_agrees, ''):>6}"
            )
        s = self.summary
        lines.append("-" * len(head))
        lines.append(
            f"{s['frames']} frames: mean PSNR {show(s['mean_psnr'], '.2f')} dB, mean SSIM {show(s['mean_ssim'], '.4f')}, "
            f"min SSIM {show(s['min_ssim'], '.4f')}; success agrees on {show(s['success_agreement'], '.0%')} of frames "
            f"(first success: simulator {show(s['first_success']['simulator'], 'd')}, world model {show(s['first_success']['world_model'], 'd')}); "
            f"ended: {s['ended']}"
        )
        return "\n".join(lines)


def pick(obs: Any, key: str | None) -> Any:
    """The part of an observation (or of its space) at a dotted key path (``None``: all of it)."""
    if key is None:
        return obs
    for part in key.split("."):
        if isinstance(obs, gym.spaces.Dict):
            obs = obs.spaces
        if not isinstance(obs, dict) or part not in obs:
            have = ", ".join(map(str, obs)) if isinstance(obs, dict) else type(obs).__name__
            raise KeyError(f"the observation has no {key!r} (at {part!r}: it has {have})")
        obs = obs[part]
    return obs


def simulator_columns(world_model: Any, simulator: Any, columns: Sequence[int] | None) -> list[int]:
    """Which columns of a world-model action row the simulator takes (all, in order, by default)."""
    width = _row_bounds(world_model.action_space)[0].size
    sim_width = int(np.prod(simulator.action_space.shape))
    chosen = list(range(width)) if columns is None else [int(c) for c in columns]
    if any(c < 0 or c >= width for c in chosen):
        raise ValueError(f"simulator columns {chosen} must lie in the world model's {width} action values")
    if len(chosen) != sim_width:
        hint = "" if columns is not None else " (pass the columns the simulator takes, e.g. 0,1,2,6 for x, y, z and the gripper)"
        raise ValueError(f"the simulator takes {sim_width} action values and is given {len(chosen)} of the world model's {width}{hint}")
    return chosen


def action_rows(world_model: Any, simulator: Any, count: int, seed: int | None, columns: Sequence[int] | None = None) -> np.ndarray:
    """``count`` seeded world-model action rows, float32 [count, A], uniform within its bounds and,
    in the ``columns`` the simulator takes, within the simulator's too."""
    low, high = _row_bounds(world_model.action_space)
    chosen = simulator_columns(world_model, simulator, columns)
    s_low = np.asarray(simulator.action_space.low, np.float64).reshape(-1)
    s_high = np.asarray(simulator.action_space.high, np.float64).reshape(-1)
    low[chosen] = np.maximum(low[chosen], s_low)
    high[chosen] = np.minimum(high[chosen], s_high)
    if not (np.isfinite(low).all() and np.isfinite(high).all()) or (low > high).any():
        raise ValueError("the two envs' action bounds have no finite range in common; pass actions explicitly")
    return np.random.default_rng(seed).uniform(low, high, (count, low.size)).astype(np.float32)


def _row_bounds(space: Any) -> tuple[np.ndarray, np.ndarray]:
    # Copies: the caller narrows them, and the space's own arrays must stay as they are.
    low = np.array(space.low, np.float64)
    high = np.array(space.high, np.float64)
    if low.ndim == 2:
        # Every row of a chunk has the same bounds in the envs gymwire serves; the tightest are used.
        return low.max(axis=0), high.min(axis=0)
    return low.reshape(-1), high.reshape(-1)


def chunk_length(world_model: Any) -> int:
    shape = world_model.action_space.shape
    return int(shape[0]) if len(shape) == 2 else 1


def compare_envs(
    world_model: Any,
    simulator: Any,
    *,
    simulator_image: str | None,
    world_model_image: str | None = "full_image",
    chunks: int = 4,
    seed: int | None = 0,
    actions: np.ndarray | Sequence[Sequence[float]] | None = None,
    simulator_reset_options: dict[str, Any] | None = None,
    simulator_action_columns: Sequence[int] | None = None,
    pose: Callable[[Any], Sequence[float]] | None = None,
    about: dict[str, Any] | None = None,
) -> ComparisonReport:
    """Drives ``world_model`` and ``simulator`` from the same first frame through the same actions
    and measures every imagined frame against the simulated one (module doc).

    ``actions`` are world-model action rows [N, A] (N a multiple of its chunk); without them
    ``chunks`` chunks of seeded uniform actions within both envs' bounds are drawn. The simulator
    takes ``simulator_action_columns`` of each row (all by default; Meta-World's 4 values are EVAC's
    columns 0, 1, 2 and 6: x, y, z and the gripper). ``pose`` maps the simulator's first observation
    to the world model's reset pose (reset option ``pose``).
    """
    C = chunk_length(world_model)
    columns = simulator_columns(world_model, simulator, simulator_action_columns)
    if actions is None:
        rows = action_rows(world_model, simulator, chunks * C, seed, columns)
    else:
        rows = np.asarray(actions, np.float32)
        if rows.ndim != 2 or rows.shape[0] % C or rows.shape[1] != _row_bounds(world_model.action_space)[0].size:
            raise ValueError(f"actions must be world-model rows [N, A] with N a multiple of its chunk {C}; got {list(rows.shape)}")
    wm_shape = tuple(int(d) for d in pick(world_model.observation_space, world_model_image).shape)
    if len(wm_shape) != 3 or wm_shape[2] != 3:
        raise ValueError(f"the world model's frame {world_model_image!r} must be [H, W, 3]; its space has {list(wm_shape)}")
    H, W = wm_shape[0], wm_shape[1]

    s_obs, s_info = simulator.reset(seed=seed, options=simulator_reset_options)
    s_frame = np.asarray(pick(s_obs, simulator_image))
    start = resize_frame(s_frame, H, W)
    options: dict[str, Any] = {"frame": start}
    task = s_obs.get("task_description") if isinstance(s_obs, dict) else None
    if isinstance(task, str) and "task_description" in getattr(world_model.observation_space, "spaces", {}):
        options["task"] = task
    if pose is not None:
        options["pose"] = np.asarray(pose(s_obs), np.float64)
    w_obs, _ = world_model.reset(seed=seed, options=options)
    w_frame = np.asarray(pick(w_obs, world_model_image))
    rows_out = [FrameRow(0, None, psnr(w_frame, start), ssim(w_frame, start), _success(s_info, False), None)]

    ended = "actions exhausted"
    step = 0
    for k in range(rows.shape[0] // C):
        chunk = rows[k * C : (k + 1) * C]
        w_obs, _, w_term, w_trunc, w_info = world_model.step(chunk if len(world_model.action_space.shape) == 2 else chunk[0])
        frames = w_info.get("frames")
        per_frame = _per_frame_success(w_info, C)
        chunk_success = _success(w_info, bool(w_term))
        sim_ended = None
        for t in range(C):
            s_obs, _, s_term, s_trunc, s_info = simulator.step(chunk[t, columns])
            step += 1
            last = t == C - 1
            if frames is not None or last or s_term or s_trunc:
                imagined = np.asarray(frames[t]) if frames is not None else np.asarray(pick(w_obs, world_model_image))
                simulated = resize_frame(np.asarray(pick(s_obs, simulator_image)), H, W)
                wm_ok = per_frame[t] if per_frame is not None else (chunk_success if last else None)
                rows_out.append(FrameRow(step, k, psnr(imagined, simulated), ssim(imagined, simulated), _success(s_info, bool(s_term)), wm_ok))
            if s_term or s_trunc:
                sim_ended = f"simulator {'terminated' if s_term else 'truncated'} at step {step}"
                break
        if sim_ended:
            ended = sim_ended
            break
        if w_term or w_trunc:
            ended = f"world model {'terminated' if w_term else 'truncated'} at step {step}"
            break
    about = {**(about or {}), "simulator_action_columns": columns}
    return ComparisonReport(rows_out, (H, W, 3), tuple(s_frame.shape), C, seed, ended, about)


def _success(info: dict[str, Any], fallback: bool) -> bool:
    value = info.get("success", fallback)
    return bool(np.asarray(value).any())


def _per_frame_success(info: dict[str, Any], chunk: int) -> list[bool] | None:
    """Each frame's success where the world model reports it (EVAC's ``raw_rewards`` [C], 0 or 1)."""
    raw = info.get("raw_rewards")
    if raw is None:
        return None
    values = np.asarray(raw).reshape(-1)
    if values.size != chunk or not all(math.isfinite(float(v)) for v in values):
        return None
    return [bool(v > 0) for v in values]
