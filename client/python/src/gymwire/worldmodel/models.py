"""Seeded convolutional world models that follow the contract: a tiny one for tests and examples, and a
mid-size one (tens of millions of parameters) for benchmarks. Their frames mean nothing; they cost
what a real model's forward pass of their size costs, and every sample is computed on its own
(no batch statistics) with
ops whose rounding does not depend on the batch (convolutions, ReLU, clamps, sums; no sigmoid or
tanh, whose vectorised CPU kernels round a short tensor's tail differently), so batching cannot
change a session's result by a bit on the CPU.

``fault_nan_at`` and ``fault_raise_at`` inject faults for tests: a row whose first action value is
at least ``fault_nan_at`` gets a NaN reward; a batch holding a row whose first action value is at
most ``fault_raise_at`` raises.

Example::

    env = TorchWorldModelEnv("gymwire.worldmodel.models:tiny_world_model", device="cpu")
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .contract import WorldModelSpec


class RowLinear(nn.Linear):
    """A linear layer run as a 1x1 convolution: BLAS rounds a batch of one differently from a larger
    batch (another kernel), while torch's CPU convolution without oneDNN (which the host turns off
    on the CPU) computes each sample on its own, so a session's result is the same bits whatever
    batch it runs in."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x[:, :, None, None], self.weight[:, :, None, None], self.bias).flatten(1)


class ConvWorldModel(nn.Module):
    """Context frames, actions, pose, latent and noise in; a chunk of frames, rewards, the next latent and pose out."""

    def __init__(
        self,
        *,
        height: int = 16,
        width: int = 16,
        context_frames: int = 4,
        chunk: int = 4,
        action_dim: int = 7,
        pose_dim: int = 8,
        latent_dim: int = 16,
        widths: tuple[int, ...] = (8, 16),
        blocks: int = 1,
        seed: int = 0,
        fault_nan_at: float | None = None,
        fault_raise_at: float | None = None,
    ) -> None:
        super().__init__()
        down = len(widths) - 1
        self.world_model_spec = WorldModelSpec(
            height=height,
            width=width,
            context_frames=context_frames,
            chunk=chunk,
            action_dim=action_dim,
            pose_dim=pose_dim,
            latent_shape=(latent_dim,),
            noise_shape=(1, height >> down, width >> down),
            success_threshold=None,
        )
        self.fault_nan_at = fault_nan_at
        self.fault_raise_at = fault_raise_at
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.stem = nn.Conv2d(context_frames * 3, widths[0], 3, padding=1)
            self.down = nn.ModuleList(nn.Conv2d(a, b, 3, stride=2, padding=1) for a, b in zip(widths[:-1], widths[1:], strict=True))
            c = widths[-1]
            self.condition = RowLinear(chunk * action_dim + pose_dim + latent_dim, c)
            self.noise_in = nn.Conv2d(1, c, 1)
            self.blocks = nn.ModuleList(nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1)) for _ in range(blocks))
            self.up = nn.ModuleList(nn.Conv2d(b, a, 3, padding=1) for a, b in reversed(list(zip(widths[:-1], widths[1:], strict=True))))
            self.head = nn.Conv2d(widths[0], chunk * 3, 3, padding=1)
            self.reward_head = RowLinear(c, chunk)
            self.latent_head = RowLinear(c, latent_dim)
            self.pose_head = RowLinear(action_dim, pose_dim)
            # Rewards around 0.5 (the scale folded into the weights: one op fewer to round).
            self.reward_head.weight.data.mul_(0.25)
            self.reward_head.bias.data.mul_(0.25).add_(0.5)

    def forward(self, context: torch.Tensor, actions: torch.Tensor, poses: torch.Tensor, latent: torch.Tensor, noise: torch.Tensor) -> dict[str, torch.Tensor]:
        s = self.world_model_spec
        if self.fault_raise_at is not None and bool((actions[:, 0, 0] <= self.fault_raise_at).any()):
            raise ValueError(f"fault injected: an action starts at or below {self.fault_raise_at}")
        b = context.shape[0]
        x = context.permute(0, 1, 4, 2, 3).reshape(b, s.context_frames * 3, s.height, s.width).float() / 127.5 - 1
        h = F.relu(self.stem(x))
        for conv in self.down:
            h = F.relu(conv(h))
        h = h + self.condition(torch.cat([actions.flatten(1), poses, latent], dim=1))[:, :, None, None] + self.noise_in(noise)
        for block in self.blocks:
            h = h + block(h)
        pooled = h.mean(dim=(2, 3))
        for conv in self.up:
            h = F.relu(conv(F.interpolate(h, scale_factor=2.0, mode="nearest")))
        out = self.head(h).add(1).mul(127.5).round().clamp(0, 255).to(torch.uint8)
        frames = out.reshape(b, s.chunk, 3, s.height, s.width).permute(0, 1, 3, 4, 2).contiguous()
        reward = self.reward_head(pooled).clamp(0, 1)
        if self.fault_nan_at is not None:
            reward = torch.where((actions[:, 0, 0] >= self.fault_nan_at)[:, None], torch.full_like(reward, float("nan")), reward)
        return {
            "frames": frames,
            "reward": reward,
            "next_latent": self.latent_head(pooled).clamp(-1, 1),
            "next_pose": poses + 0.01 * self.pose_head(actions.mean(dim=1)),
        }

    def initial_observation(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """A seeded smooth start frame and pose."""
        s = self.world_model_spec
        rng = np.random.default_rng(seed)
        ys, xs = np.mgrid[0 : s.height, 0 : s.width]
        base = rng.uniform(0, 255, 3)
        slope = rng.uniform(-2, 2, (2, 3)) * 64 / max(s.height, s.width)
        frame = np.clip(base + ys[..., None] * slope[0] + xs[..., None] * slope[1], 0, 255).astype(np.uint8)
        return frame, rng.uniform(-0.5, 0.5, s.pose_dim).astype(np.float32)


def tiny_world_model(**kwargs: Any) -> ConvWorldModel:
    """16x16 frames, a chunk of 4, about 10 thousand parameters: for tests."""
    return ConvWorldModel(**kwargs)


def bench_world_model(size: int = 128, width: int = 384, blocks: int = 8, chunk: int = 8, **kwargs: Any) -> ConvWorldModel:
    """size x size frames, a chunk of 8; with the defaults about 22 million parameters (a mid-size model for benchmarks)."""
    return ConvWorldModel(height=size, width=size, chunk=chunk, widths=(64, 128, width), blocks=blocks, **kwargs)
