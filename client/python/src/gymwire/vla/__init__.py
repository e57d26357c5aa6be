"""The VLA interface: typed inputs and predictions, env and framework adapters, a model registry with YAML config.

A model takes a :class:`VLAInput` (images, state, text instruction, navigation command, the
trajectory shape the env wants) and returns a :class:`VLAPrediction` (actions, waypoints,
log-probs, values, extras). An env adapter (:func:`adapter_for`: NAVSIM, Bench2Drive, EVAC) builds
the inputs from observations and turns predictions into actions, resampling waypoints to the
env's shape (NAVSIM ``[8, 3]``, Bench2Drive ``[6, 2]``) and running a reference waypoint controller
where the env takes controls. A framework adapter runs the model: a torch ``nn.Module``
(:class:`TorchModel`, on its device, no export), an ONNX file (:class:`OnnxModel`) or a function
(:class:`CallableModel`). :class:`VLAPolicy` joins them into a gymwire policy for ``collect`` and
the integrations; :func:`policy_from_config` builds one from YAML. :func:`export_onnx` writes a
torch module as an ONNX policy that reads the env's observations, for both SDKs' ``OnnxPolicy``.

Example::

    from gymwire.vla import TorchModel, VLAPolicy, adapter_for

    policy = VLAPolicy(TorchModel(my_module, device="cuda"), adapter_for("gymwire/Bench2Drive-v0", num_envs=4))
    out = policy.act(obs)  # out.actions: controls [4, 3]; out.extras["waypoints"]: [4, 6, 2]
"""

from .adapters import Bench2DriveAdapter, EnvAdapter, EvacAdapter, NavsimAdapter, adapter_for, register_adapter
from .export import export_onnx
from .frameworks import CallableModel, OnnxModel, TorchModel, wrap_model
from .policy import VLAPolicy
from .registry import load_config, make_model, policy_from_config, register_model, registered_models
from .types import VLAInput, VLAPrediction
from .waypoints import adapt_waypoints

__all__ = [
    "Bench2DriveAdapter",
    "CallableModel",
    "EnvAdapter",
    "EvacAdapter",
    "NavsimAdapter",
    "OnnxModel",
    "TorchModel",
    "VLAInput",
    "VLAPolicy",
    "VLAPrediction",
    "adapt_waypoints",
    "adapter_for",
    "export_onnx",
    "load_config",
    "make_model",
    "policy_from_config",
    "register_adapter",
    "register_model",
    "registered_models",
    "wrap_model",
]
