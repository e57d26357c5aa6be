"""The TypeScript SDK's seeded generator (runtime/random.ts: xoshiro128** seeded through splitmix32), bit for bit.

Policies that sample (the ONNX policy's Discrete and Gaussian heads) draw from it, so the same seed
gives the same actions from Python and from TypeScript.
"""

from __future__ import annotations

import math

_M = 0xFFFFFFFF


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M


class Random:
    """Seeded uniform and normal draws; ``Random(seed).random()`` equals ``new Random(seed).random()`` in TS."""

    def __init__(self, seed: int = 0) -> None:
        s = int(seed)
        x = ((s & _M) ^ ((s // 2**32) & _M)) & _M
        state = []
        for _ in range(4):
            x = (x + 0x9E3779B9) & _M
            z = x
            z = ((z ^ (z >> 16)) * 0x85EBCA6B) & _M
            z = ((z ^ (z >> 13)) * 0xC2B2AE35) & _M
            state.append(z ^ (z >> 16))
        self._s = state

    def next_uint32(self) -> int:
        s0, s1, s2, s3 = self._s
        result = (_rotl((s1 * 5) & _M, 7) * 9) & _M
        t = (s1 << 9) & _M
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 11)
        self._s = [s0, s1, s2, s3]
        return result

    def random(self) -> float:
        """Uniform in [0, 1) with 53 random bits."""
        hi = self.next_uint32() >> 5
        lo = self.next_uint32() >> 6
        return (hi * 67108864 + lo) / 9007199254740992

    def normal(self, mean: float = 0.0, std: float = 1.0) -> float:
        """Standard normal by Box-Muller, as the TypeScript generator draws it."""
        u = 0.0
        while u == 0.0:
            u = self.random()
        v = self.random()
        return mean + std * math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * v)
