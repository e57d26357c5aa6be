#!/usr/bin/env python3
"""Reference vectors for gymwire's RLinf reset resize (envs/evac/resize.ts), made by PyTorch itself.

RLinf's EvacEnv (rlinf/envs/world_model/world_model_evac_env.py @bf41fc33c, lines 286-308 and
774-799; rlinf/data/datasets/world_model.py `_convert_frame_to_lerobot_format`) turns a uint8 HWC
frame into `torch.from_numpy(frame).permute(2, 0, 1).float() / 255.0` (a channels-last float32
view), resizes it with `F.interpolate(x.unsqueeze(0), size, mode="bilinear", align_corners=False)`
when its size differs, normalises it in place with torchvision's `Normalize(0.5, 0.5)` and shows
`((x + 1) / 2 * 255).clamp(0, 255).to(torch.uint8)`. `rlinf_chain` below runs exactly that chain
(torchvision's Normalize is `tensor.sub_(mean[:, None, None]).div_(std[:, None, None])` with float32
mean and std; it is written out so that torchvision is not needed).

Source frames come from a counter-based hash that resize-cases.ts computes the same way, so the
fixture holds no source pixels. For each case it records the SHA-256 of the resized float32 frame
(the bits F.interpolate returns, HWC order), the SHA-256 of the uint8 observation, and, for small
outputs, the observation's bytes (base64).

    python scripts/evac/torch_resize_reference.py [--out FILE]   # needs torch and numpy

writes test/envs/evac/fixtures/torch-resize.json (or FILE). PyTorch's CPU result depends on its thread count
(with one thread a 3-channel frame always takes the channels-last kernel) and on its CPU kernel
build (the AVX2/AVX512 builds fuse multiply-adds, the portable `default` build does not), so each
case records the threads and the kernels (`fused` or `unfused`) it ran with; the unfused cases run
in a child process with ATEN_CPU_CAPABILITY=default.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "test/envs/evac/fixtures/torch-resize.json"

# Outputs up to this many bytes are stored whole (so a failing test can say how many bytes differ).
STORE_BYTES_UP_TO = 32 * 32 * 3

# PyTorch's CPU kernel builds: the AVX2 and AVX512 ones are compiled with fused multiply-adds, the portable one is not.
KERNELS = {"AVX2": "fused", "AVX512": "fused", "DEFAULT": "unfused"}

SOURCES: list[dict[str, Any]] = [
    {"height": 480, "width": 640, "kind": "noise", "seed": 1},
    {"height": 480, "width": 640, "kind": "ramp", "seed": 2},
    {"height": 224, "width": 224, "kind": "noise", "seed": 3},
    {"height": 40, "width": 56, "kind": "ramp", "seed": 4},
    {"height": 17, "width": 23, "kind": "noise", "seed": 5},
    {"height": 97, "width": 131, "kind": "ramp", "seed": 6},
    {"height": 256, "width": 256, "kind": "noise", "seed": 7},
    {"height": 300, "width": 200, "kind": "noise", "seed": 8},
]

# (source index, output height, output width, torch threads)
CASES: list[tuple[int, int, int, int]] = [
    (0, 256, 256, 2),
    (0, 128, 128, 2),
    (0, 64, 64, 2),
    (0, 32, 32, 2),
    (1, 256, 256, 2),
    (1, 64, 64, 2),
    (2, 256, 256, 2),
    (2, 128, 128, 2),
    (2, 64, 64, 2),
    (3, 64, 64, 2),
    (3, 32, 32, 2),
    (3, 40, 64, 2),
    (4, 64, 64, 2),
    (4, 256, 256, 2),
    (4, 1, 1, 2),
    (5, 33, 45, 2),
    (5, 255, 257, 2),
    (5, 97, 64, 2),
    (6, 128, 128, 2),
    (6, 512, 384, 2),
    (7, 64, 96, 2),
    (7, 96, 32, 2),
    (7, 300, 64, 2),
    # One thread: PyTorch runs a 3-channel frame through its channels-last kernel at every size.
    (0, 256, 256, 1),
    (2, 128, 128, 1),
    (5, 255, 257, 1),
    (3, 64, 64, 1),
]

# Cases also run with ATEN_CPU_CAPABILITY=default (PyTorch's build for CPUs without AVX2).
DEFAULT_KERNEL_CASES: list[tuple[int, int, int, int]] = [
    (0, 256, 256, 2),
    (0, 64, 64, 2),
    (3, 32, 32, 2),
    (5, 255, 257, 2),
    (7, 96, 32, 2),
    (2, 128, 128, 1),
]


def lowbias32(x: np.ndarray) -> np.ndarray:
    """Chris Wellons' lowbias32 integer hash on uint32 (resize-cases.ts `lowbias32`)."""
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def source_frame(height: int, width: int, kind: str, seed: int) -> np.ndarray:
    """A uint8 [height, width, 3] frame: `noise` is hashed bytes; `ramp` is a wrapping gradient with 3 bits of hash noise."""
    index = np.arange(height * width * 3, dtype=np.uint32)
    h = lowbias32(index ^ lowbias32(np.full(1, seed, dtype=np.uint32)))
    if kind == "noise":
        flat = (h >> np.uint32(24)).astype(np.uint8)
    elif kind == "ramp":
        y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(3), indexing="ij")
        flat = ((3 * y + 2 * x + 85 * c).reshape(-1) + (h >> np.uint32(29))) % 256
        flat = flat.astype(np.uint8)
    else:
        raise ValueError(f"unknown source kind {kind!r}")
    return flat.reshape(height, width, 3)


def rlinf_chain(frame: np.ndarray, size: tuple[int, int], device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """RLinf's reset chain on one frame: (resized float32 [H, W, 3] before normalising, uint8 observation [H, W, 3])."""
    import torch
    import torch.nn.functional as F

    image = torch.from_numpy(frame).to(device).permute(2, 0, 1).float() / 255.0  # world_model.py: a channels-last view
    if tuple(image.shape[1:]) != size:
        image = F.interpolate(image.unsqueeze(0), size=size, mode="bilinear", align_corners=False).squeeze(0)
    resized = image.permute(1, 2, 0).cpu().numpy().copy()
    mean = torch.as_tensor([0.5, 0.5, 0.5], dtype=image.dtype, device=image.device).view(-1, 1, 1)
    std = torch.as_tensor([0.5, 0.5, 0.5], dtype=image.dtype, device=image.device).view(-1, 1, 1)
    image = image.sub_(mean).div_(std)  # torchvision Normalize(inplace=True)
    full_image = (image.permute(1, 2, 0) + 1.0) / 2.0 * 255.0
    observed = torch.clamp(full_image, 0, 255).to(torch.uint8)
    return resized, observed.cpu().numpy()


def run_case(source: dict[str, Any], height: int, width: int, threads: int) -> dict[str, Any]:
    """One case in this process (whose CPU kernels are what ATEN_CPU_CAPABILITY chose at import)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        resized, observed = rlinf_chain(source_frame(**source), (height, width))
    finally:
        torch.set_num_threads(previous)
    case: dict[str, Any] = {
        "source": source,
        "size": [height, width],
        "threads": threads,
        "kernels": KERNELS[torch.backends.cpu.get_cpu_capability()],
        "resized_sha256": hashlib.sha256(resized.astype("<f4").tobytes()).hexdigest(),
        "observed_sha256": hashlib.sha256(observed.tobytes()).hexdigest(),
    }
    if observed.size <= STORE_BYTES_UP_TO:
        case["observed_base64"] = base64.b64encode(observed.tobytes()).decode("ascii")
    return case


def cases_with_default_kernels(cases: list[tuple[int, int, int, int]]) -> list[dict[str, Any]]:
    """The cases run by PyTorch's portable `default` CPU build (no fused multiply-adds), in a child process:
    ATEN_CPU_CAPABILITY is read once, when torch loads."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    child = subprocess.run([sys.executable, __file__, "--cases", json.dumps(cases)], env=env, check=True, capture_output=True, text=True)
    return json.loads(child.stdout)


def main(argv: list[str]) -> int:
    import torch

    if "--cases" in argv:  # the child of cases_with_default_kernels
        print(json.dumps([run_case(SOURCES[s], h, w, t) for s, h, w, t in json.loads(argv[argv.index("--cases") + 1])]))
        return 0
    capability = torch.backends.cpu.get_cpu_capability()
    if KERNELS.get(capability) != "fused":
        print(f"torch's CPU capability here is {capability}: the reference needs an AVX2 or AVX512 build (x86-64 with AVX2)", file=sys.stderr)
        return 1
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else FIXTURE
    fixture = {
        "about": "PyTorch's result for RLinf's reset chain (scripts/evac/torch_resize_reference.py), checked by test/envs/evac/resize.test.ts",
        "torch": torch.__version__,
        "cpu_capability": capability,
        "cases": [run_case(SOURCES[s], h, w, t) for s, h, w, t in CASES] + cases_with_default_kernels(DEFAULT_KERNEL_CASES),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {out}: {len(fixture['cases'])} cases, torch {fixture['torch']} ({capability}, and DEFAULT in a child process)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
