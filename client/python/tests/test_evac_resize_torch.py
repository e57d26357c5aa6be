"""EVAC's `reset_resize: 'rlinf'` (envs/evac/resize.ts) against PyTorch live, on this machine's CPU.

RLinf's reset chain runs in torch (scripts/evac/torch_resize_reference.py `rlinf_chain`) on the
fixture's cases plus seeded random sizes, and gymwire's TypeScript resize runs the same cases
(scripts/evac/resize-cases.ts through tsx); the resized float32 frames and every byte must agree. Needs torch: skipped without it,
saying so (client/python/scripts/test-torch.sh runs the torch-marked tests).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.torch


def _reference_module() -> Any:
    spec = importlib.util.spec_from_file_location("torch_resize_reference", REPO / "scripts/evac/torch_resize_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _gymwire(cases: list[dict[str, Any]]) -> list[dict[str, str]]:
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    if not tsx.exists():
        pytest.fail("node_modules/.bin/tsx is missing: run npm ci at the repository root")
    out = subprocess.run([str(tsx), str(REPO / "scripts/evac/resize-cases.ts")], input=json.dumps(cases), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _cases(ref: Any) -> list[dict[str, Any]]:
    fixture_cases = [{"source": ref.SOURCES[s], "size": [h, w], "threads": t} for s, h, w, t in ref.CASES]
    rng = np.random.default_rng(19)
    random_cases = []
    for i in range(16):
        src_h, src_w = (int(v) for v in rng.integers(2, 300, size=2))
        out_h, out_w = (int(v) for v in rng.integers(1, 300, size=2))
        source = {"height": src_h, "width": src_w, "kind": "noise" if i % 2 else "ramp", "seed": 100 + i}
        random_cases.append({"source": source, "size": [out_h, out_w], "threads": 1 if i % 4 == 0 else 2})
    return fixture_cases + random_cases


def test_gymwire_resizes_reset_frames_to_pytorchs_bytes() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed in this venv: client/python/scripts/test-torch.sh runs the torch tests")
    ref = _reference_module()
    kernels = ref.KERNELS.get(torch.backends.cpu.get_cpu_capability())
    if kernels is None:
        pytest.skip(f"torch's CPU capability {torch.backends.cpu.get_cpu_capability()} is neither x86-64 build gymwire reproduces (AVX2/AVX512 or DEFAULT)")
    cases = [{**c, "kernels": kernels} for c in _cases(ref)]
    ours = _gymwire(cases)
    failures = []
    for case, mine in zip(cases, ours, strict=True):
        previous = torch.get_num_threads()
        torch.set_num_threads(case["threads"])
        try:
            resized, theirs = ref.rlinf_chain(ref.source_frame(**case["source"]), tuple(case["size"]))
        finally:
            torch.set_num_threads(previous)
        mine_bytes = np.frombuffer(base64.b64decode(mine["observed_base64"]), dtype=np.uint8).reshape(theirs.shape)
        differing = int((mine_bytes != theirs).sum())
        same_floats = hashlib.sha256(resized.astype("<f4").tobytes()).hexdigest() == mine["resized_sha256"]
        if differing or not same_floats:
            where = f"{case['source']} -> {case['size']} ({case['threads']} threads)"
            failures.append(f"{where}: {differing} of {theirs.size} bytes differ; float32 frame {'same' if same_floats else 'differs'}")
    assert not failures, "\n".join(failures)
