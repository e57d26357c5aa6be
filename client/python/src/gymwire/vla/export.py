"""Exporting a VLA torch module to ONNX, the cross-language path (both SDKs' ``OnnxPolicy``).

A module that :class:`~gymwire.vla.TorchModel` runs takes a dict built by an env adapter
(``state``, ``command``); an ONNX policy takes the env's observation keys by name. The exported
graph is the module behind the adapter's own observation -> input step, written in torch, so
the ``.onnx`` file reads observations directly: NAVSIM's ``ego_status`` and ``driving_command``,
Bench2Drive's ``speed``, ``target_point``, ``imu`` and ``command``. Its outputs follow the ONNX
contract: ``action`` (the waypoints, or the module's actions), ``value``, ``log_prob``, and every
other output as an extra.

What the graph cannot hold stays out: cameras and the text instruction are not fed (a module that
reads them cannot be exported this way), waypoints are not resampled (the module must predict the
env's trajectory: NAVSIM ``[N, 8, 3]``, Bench2Drive ``[N, 6, 2]``), and no waypoint controller
runs: make Bench2Drive with ``action_type='waypoints'`` so the env's reference controller does.

Example::

    export_onnx(planner, "gymwire/Bench2Drive-v0", "planner.onnx")
    policy = OnnxPolicy("planner.onnx", seed=0)  # or OnnxPolicy.load('planner.onnx') in TypeScript
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .adapters import Bench2DriveAdapter, EnvAdapter, NavsimAdapter, adapter_for

#: Module output names -> the ONNX contract's (besides the action; any other name is an extra, kept as it is).
CONTRACT_NAMES = {"values": "value", "log_probs": "log_prob"}


@dataclass(frozen=True)
class ObservationInput:
    """One graph input: an observation key, the element type the graph takes and the shape after the batch dimension."""

    key: str
    dtype: str
    shape: tuple[int, ...]


def _navsim_batch(torch: Any, obs: dict[str, Any]) -> dict[str, Any]:
    # NavsimAdapter.to_input: the ego status history flattened, the one-hot command's index.
    ego = obs["ego_status"]
    return {"state": ego.reshape(ego.shape[0], -1), "command": torch.argmax(obs["driving_command"], dim=1)}


def _bench2drive_batch(torch: Any, obs: dict[str, Any]) -> dict[str, Any]:
    # Bench2DriveAdapter.to_input: state = [speed, target point, IMU], the RoadOption command.
    return {"state": torch.cat([obs["speed"], obs["target_point"], obs["imu"]], dim=1), "command": obs["command"]}


#: Per adapter: the observation inputs and their mapping to the module's batch (torch code, so it is traced into the graph).
GRAPH_INPUTS: dict[type[EnvAdapter], tuple[tuple[ObservationInput, ...], Callable[[Any, dict[str, Any]], dict[str, Any]]]] = {
    NavsimAdapter: ((ObservationInput("ego_status", "float32", (4, 7)), ObservationInput("driving_command", "float32", (4,))), _navsim_batch),
    Bench2DriveAdapter: (
        (
            ObservationInput("speed", "float32", (1,)),
            ObservationInput("target_point", "float32", (2,)),
            ObservationInput("imu", "float32", (7,)),
            ObservationInput("command", "int64", ()),
        ),
        _bench2drive_batch,
    ),
}


def export_onnx(module: Any, env: str | EnvAdapter, path: str | Path, *, opset: int = 17) -> Path:
    """Writes ``module`` with the observation -> input step of ``env``'s adapter as an ONNX policy at ``path``.

    ``env`` is an env id (``gymwire/NavsimEnv-v1``, ``gymwire/Bench2Drive-v0``) or its adapter.
    The batch axis is dynamic. Uses torch's TorchScript-based exporter (``dynamo=False``), which
    needs no ``onnxscript``. Raises ``ValueError`` when the module's waypoints do not have the env's
    shape or it returns nothing the contract can act on.
    """
    import torch

    adapter = adapter_for(env) if isinstance(env, str) else env
    spec = next((v for k, v in GRAPH_INPUTS.items() if isinstance(adapter, k)), None)
    if spec is None:
        raise ValueError(f"no ONNX export for {type(adapter).__name__}; exports exist for: {', '.join(k.__name__ for k in GRAPH_INPUTS)}")
    inputs, to_batch = spec
    # A CPU copy in eval mode: the caller's module keeps its device and mode.
    module = copy.deepcopy(module).to("cpu").eval()
    examples = tuple(torch.zeros((2, *i.shape), dtype=getattr(torch, i.dtype)) for i in inputs)
    with torch.no_grad():
        out = module(to_batch(torch, {i.key: x for i, x in zip(inputs, examples, strict=True)}))
    named = out if isinstance(out, dict) else {"waypoints" if out.dim() == 3 else "actions": out}
    output_names = _contract_names(named, adapter)

    class ObservationGraph(torch.nn.Module):
        """The module behind the adapter's observation -> input step, outputs in contract order."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *tensors: Any) -> tuple[Any, ...]:
            result = self.inner(to_batch(torch, {i.key: x for i, x in zip(inputs, tensors, strict=True)}))
            result = result if isinstance(result, dict) else {next(iter(named)): result}
            return tuple(result[source] for source in output_names)

    path = Path(path)
    names = [i.key for i in inputs]
    contract = list(output_names.values())
    torch.onnx.export(
        ObservationGraph(),
        examples,
        str(path),
        input_names=names,
        output_names=contract,
        dynamic_axes={name: {0: "batch"} for name in names + contract},
        opset_version=opset,
        dynamo=False,
    )
    return path


def _contract_names(outputs: dict[str, Any], adapter: EnvAdapter) -> dict[str, str]:
    """Module output name -> ONNX output name, checking the action's shape against the env's trajectory.

    The action is what the adapter acts on: Bench2Drive's waypoints before its actions, NAVSIM's
    actions before its waypoints; the other one, when both are given, stays an extra.
    """
    order = ("waypoints", "actions", "action") if isinstance(adapter, Bench2DriveAdapter) else ("actions", "action", "waypoints")
    action = next((name for name in order if name in outputs), None)
    if action is None:
        raise ValueError(f"the module returned {', '.join(outputs) or 'nothing'}; an ONNX policy needs 'waypoints' or 'actions'")
    shape = tuple(outputs[action].shape[1:])
    if action == "waypoints" and shape != (adapter.num_waypoints, adapter.waypoint_dims):
        raise ValueError(
            f"the module predicts waypoints {list(shape)} but {type(adapter).__name__}'s env takes [{adapter.num_waypoints}, {adapter.waypoint_dims}]; "
            "the exported graph does not resample, so predict the env's trajectory"
        )
    mapped = {action: "action"}
    for name in outputs:
        if name not in mapped and name not in order:
            mapped[name] = CONTRACT_NAMES.get(name, name)
    for name in order:
        if name in outputs and name not in mapped:
            mapped[name] = name
    return mapped
