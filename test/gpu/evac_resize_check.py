#!/usr/bin/env python3
"""Check gymwire's RLinf reset resize (envs/evac/resize.ts) against PyTorch itself.

RLinf's EvacEnv (world_model_evac_env.py @bf41fc33c, lines 286-308 and 774-799) turns a uint8 frame
into float32 / 255, resizes it with F.interpolate(bilinear, align_corners=False) when its size
differs, normalises it to [-1, 1], and observes ((x + 1) / 2 * 255).clamp(0, 255).to(uint8).
evac_resize_reference.json holds gymwire's output for a fixed 40x56 frame at a few sizes
(scripts/evac/resize-reference.ts). This runs PyTorch's chain on the CPU and, when available, on
CUDA. gymwire reproduces PyTorch's CPU kernels (x86-64 AVX2/AVX512 builds), so a CPU byte that
differs exits 1; CUDA's kernel rounds differently and is reported, not failed (docs/envs/evac.md).
Needs torch and numpy only.

    python test/gpu/evac_resize_check.py
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F


def source(height: int, width: int) -> np.ndarray:
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    return ((7 * y + 3 * x + 50 * c + 11) % 256).astype(np.uint8)


def rlinf_chain(image: np.ndarray, size: tuple[int, int], device: str) -> np.ndarray:
    x = torch.from_numpy(image).permute(2, 0, 1).float().to(device) / 255.0
    if tuple(x.shape[1:]) != size:
        x = F.interpolate(x.unsqueeze(0), size=size, mode="bilinear", align_corners=False).squeeze(0)
    x = (x - 0.5) / 0.5
    observed = ((x.permute(1, 2, 0) + 1.0) / 2.0 * 255.0).clamp(0, 255).to(torch.uint8)
    return observed.cpu().numpy()


def main() -> int:
    reference = json.loads((Path(__file__).parent / "evac_resize_reference.json").read_text())
    image = source(reference["source"]["height"], reference["source"]["width"])
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    failed = False
    for device in devices:
        for out in reference["outputs"]:
            size = (out["height"], out["width"])
            ours = np.frombuffer(bytes.fromhex(out["hex"]), dtype=np.uint8).reshape(size[0], size[1], 3)
            theirs = rlinf_chain(image, size, device)
            diff = np.abs(ours.astype(int) - theirs.astype(int))
            print(
                json.dumps(
                    {
                        "device": device,
                        "size": list(size),
                        "bytes_differing": int((diff > 0).sum()),
                        "max_abs_diff": int(diff.max()),
                        "torch": torch.__version__,
                    }
                )
            )
            failed |= device == "cpu" and bool(diff.max() > 0)
    print("evac resize check:", "FAILED" if failed else "ok (gymwire's bytes equal PyTorch's CPU bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
