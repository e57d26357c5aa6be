#!/usr/bin/env python3
"""GPU checks of the policy layer's devices: run on a machine with a CUDA GPU and torch.

    python test/gpu/check_policy_devices.py        # from the repository root; exit 0 = passed

Needs Python >= 3.10 with torch (CUDA build), numpy and onnxruntime (CPU or GPU build); no Node,
no network, no gymwire install: it loads the SDK's device and VLA modules from client/python/src
without the package's client (so gymnasium and websockets are not needed). Checks:

1. a torch policy (gymwire.vla.TorchModel) gives the same waypoints on cuda and on cpu (within
   1e-4), and reports the device its parameters are on;
2. asking torch for cuda here resolves to cuda without a warning ('auto' too);
3. the same network exported to ONNX and run through gymwire's onnxruntime session with
   device='cuda': the reported device matches the providers onnxruntime registered; with a
   CPU-only onnxruntime it is 'cpu' with a RuntimeWarning naming the fallback; outputs match torch.

Prints one JSON line per check and exits non-zero on the first failure. Without CUDA it says so
and exits 0 (skipped).
"""

from __future__ import annotations

import json
import sys
import tempfile
import types
import warnings
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parents[2] / "client" / "python" / "src"


def _load_sdk_modules():
    """gymwire._devices and gymwire.vla.{types,frameworks}, without running gymwire/__init__.py (it imports the client)."""
    for name, path in (
        ("gymwire", SRC / "gymwire"),
        ("gymwire.vla", SRC / "gymwire" / "vla"),
    ):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [str(path)]
            sys.modules[name] = pkg
    import gymwire._devices as devices
    import gymwire.vla.frameworks as frameworks
    import gymwire.vla.types as vla_types

    return devices, frameworks, vla_types


def report(check: str, ok: bool, **details) -> None:
    print(json.dumps({"check": check, "ok": ok, **details}))
    if not ok:
        sys.exit(1)


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        print(
            json.dumps(
                {
                    "check": "cuda",
                    "ok": True,
                    "skipped": "torch.cuda.is_available() is False: no GPU checks ran",
                }
            )
        )
        return
    devices, frameworks, vla_types = _load_sdk_modules()

    class Planner(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.Tanh(), torch.nn.Linear(64, 12))

        def forward(self, batch):
            state = batch["state"] if isinstance(batch, dict) else batch
            return {"waypoints": self.net(state).reshape(-1, 6, 2)}

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    inputs = vla_types.VLAInput(
        state=rng.normal(size=(16, 10)).astype(np.float32),
        command=np.full(16, 4),
        instruction=["follow the lane"] * 16,
    )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on_cuda = frameworks.TorchModel(Planner(), device="cuda")
    cpu_module = Planner()
    cpu_module.load_state_dict({k: v.detach().to("cpu") for k, v in on_cuda.module.state_dict().items()})
    on_cpu = frameworks.TorchModel(cpu_module, device="cpu")
    report(
        "torch devices reported",
        on_cuda.device.startswith("cuda") and on_cpu.device == "cpu" and not caught,
        cuda=on_cuda.device,
        cpu=on_cpu.device,
    )
    gpu_wps = on_cuda.predict(inputs).waypoints
    cpu_wps = on_cpu.predict(inputs).waypoints
    diff = float(np.abs(gpu_wps - cpu_wps).max())
    report(
        "torch cuda vs cpu waypoints",
        gpu_wps.shape == (16, 6, 2) and diff < 1e-4,
        max_abs_diff=diff,
    )
    report(
        "torch_device resolves cuda",
        devices.torch_device("cuda") == ("cuda", None) and devices.torch_device("auto") == ("cuda", None),
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "planner.onnx")

        class Exported(torch.nn.Module):
            def __init__(self, inner: torch.nn.Module) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, state):
                return self.inner(state)["waypoints"]

        try:
            torch.onnx.export(
                Exported(cpu_module),
                (torch.zeros(2, 10),),
                path,
                input_names=["state"],
                output_names=["waypoints"],
                dynamic_axes={"state": {0: "N"}, "waypoints": {0: "N"}},
                dynamo=False,
            )
        except Exception as err:  # the exporter's own dependencies (onnx) may be missing there
            print(
                json.dumps(
                    {
                        "check": "onnx export",
                        "ok": True,
                        "skipped": f"torch.onnx.export failed: {err}",
                    }
                )
            )
            return
        import onnxruntime as ort

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            session, device, fallback = devices.onnx_session(path, device="cuda")
        registered = session.get_providers()
        truthful = device == ("cuda" if "CUDAExecutionProvider" in registered else "cpu")
        warned = any("CUDA execution provider unavailable; running the ONNX policy on CPU" in str(w.message) for w in caught)
        consistent = (device == "cuda" and fallback is None and not warned) or (device == "cpu" and bool(fallback) and warned)
        report(
            "onnxruntime device reported truthfully",
            truthful and consistent,
            device=device,
            registered=registered,
            available=ort.get_available_providers(),
            fallback=fallback,
        )
        onnx_wps = session.run(None, {"state": inputs.state})[0]
        diff = float(np.abs(onnx_wps - cpu_wps).max())
        report("onnx vs torch waypoints", diff < 1e-4, max_abs_diff=diff)


if __name__ == "__main__":
    main()
