"""siiRL's ``MultiAgentLoop`` (``generate_colocate``, which runs ``colocate_task`` for every sample and agent) driving
``GymwireTextEnv``, with what needs a GPU or siiRL's whole DAG worker stood in for:

- the SGLang rollout of each agent (``rollout.generate``/``wake_up``/``sleep``): a scripted reply per agent;
- the modules ``multiagent_generate`` imports only for type names (``AsyncSglangServer``, ``ActorRolloutRefWorker``),
  whose real modules import SGLang: empty stand-ins while the loop's module is imported;
- ``MultiAgentLoop.__init__`` (it builds siiRL's DAG worker): the loop is made with ``__new__`` and given the
  attributes ``__init__`` sets, the node queue from siiRL's own ``Node``/``AgentProcess`` (which load the
  process file and the ``env_path`` class the way siiRL does);
- the DAG worker's data buffers (Ray actors in siiRL; 0.2.0 ships none with the ``pop``/``get_queue`` this loop
  calls): a dict behind that interface.

torch.distributed runs for real, as a one-process gloo group with a CPU device mesh.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import types
from pathlib import Path
from typing import Any
from uuid import uuid4

import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

HERE = Path(__file__).parent
# A process file in the shape of siiRL's marft example (examples/experimental/marft/config/process.py): the prompt
# wrapped in a template, the reply appended after a per-agent marker, without the chat template (see below).
PROCESS_FILE = HERE / "marft_process.py"


def siirl_example_process_file() -> Path:
    """siiRL's own marft process file, as the siirl wheel installs it (``examples/experimental/marft/config/process.py``).

    Under transformers 5 (the siiRL venv's) its ``pre_process`` returns ``apply_chat_template(..., tokenize=True)``,
    a ``BatchEncoding``, not token ids; ``colocate_task`` slices it and hands the rollout a list of
    ``tokenizers.Encoding`` (a real SGLang engine would refuse it; the stand-in records it). What reaches the env is
    ``post_process``'s decoded prompt plus reply, which the file builds from token ids either way."""
    from importlib.metadata import distribution

    return Path(str(distribution("siirl").locate_file("examples/experimental/marft/config/process.py")))


def import_multi_agent_loop() -> tuple[type, type]:
    """``MultiAgentLoop`` and ``AgentOutput``, imported with the SGLang-only modules stood in for (removed again after)."""
    stand_ins = {
        "siirl.engine.rollout.sglang_rollout.async_sglang_server": "AsyncSglangServer",
        "siirl.engine.fsdp_workers": "ActorRolloutRefWorker",
    }
    added = []
    for name, attr in stand_ins.items():
        if name not in sys.modules:
            module = types.ModuleType(name, "a stand-in: the real module imports SGLang (GPU-only)")
            setattr(module, attr, object)
            sys.modules[name] = module
            added.append(name)
    try:
        from siirl.execution.rollout_flow.multi_agent.multiagent_generate import MultiAgentLoop
        from siirl.execution.rollout_flow.multi_agent.utils import AgentOutput
    finally:
        for name in added:
            sys.modules.pop(name, None)
    return MultiAgentLoop, AgentOutput


class _Remote:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    async def remote(self, *args: Any) -> Any:
        return self.fn(*args)


class DataBuffer:
    """The put/pop/get_queue interface the loop calls on siiRL's data buffer actors."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.put = _Remote(self.data.__setitem__)
        self.pop = _Remote(lambda key: self.data.pop(key, None))
        self.get_queue = _Remote(lambda key: self.data.pop(key, None))


class ScriptedRollout:
    """Stands in for an agent's SGLang rollout: every turn it replies ``reply`` and records the prompts it saw."""

    def __init__(self, reply: str, mesh: Any) -> None:
        self.reply = reply
        self.mesh = mesh
        self.prompts: list[list[int]] = []

    async def generate(self, request_id: str, prompt_ids: list[int], sampling_params: dict) -> str:
        self.prompts.append(list(prompt_ids))
        return self.reply

    async def wake_up(self) -> None:
        return None

    async def sleep(self) -> None:
        return None

    def get_device_mesh(self) -> Any:
        return self.mesh


class OneRankDag:
    def _get_node_dp_info(self, node: Any) -> tuple[int, int, int, int]:
        return 1, 0, 0, 1  # dp size, dp rank, tp rank, tp size


def one_process_group() -> Any:
    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    return init_device_mesh("cpu", (1,), mesh_dim_names=("tp",))


def build_loop(model_dir: Path, env_path: str, replies: list[str], max_turns: int, process_file: Path = PROCESS_FILE) -> Any:
    """A MultiAgentLoop over ``len(replies)`` agents; the last one acts on the env (as siiRL's marft workflow)."""
    from siirl.dag_worker.constants import DAGConstants
    from siirl.execution.dag.node import Node, NodeRole, NodeType
    from siirl.params.model_args import ModelArguments

    MultiAgentLoop, _ = import_multi_agent_loop()
    mesh = one_process_group()
    nodes = []
    for i, _reply in enumerate(replies):
        options = {
            "obs_with_env": True,
            "process_path": str(process_file),
            "pre_process_kwargs": {"pre_chat_template": f"<|im_start|>agent {i}: ${{prompt}} <|im_end|>"}
            if process_file == PROCESS_FILE
            else {"pre_chat_template": f"agent {i}: ${{prompt}}"},  # siiRL's file applies the chat template itself
            "post_process_kwargs": {"post_chat_template": f" agent {i}: "},
            "env_path": [env_path] if i == len(replies) - 1 else [],
        }
        config = {DAGConstants.INTERN_CONFIG: types.SimpleNamespace(model=ModelArguments(path=str(model_dir)))}
        nodes.append(Node(f"rollout_agent_{i}", NodeType.MODEL_INFERENCE, NodeRole.ROLLOUT, agent_group=i, config=config, agent_options=options))
    loop = MultiAgentLoop.__new__(MultiAgentLoop)
    loop.dag = OneRankDag()
    loop.placement_mode = "colocate"
    loop.rollout_config = types.SimpleNamespace(
        prompt_length=8192,
        response_length=8192,
        max_model_len=None,
        n=1,
        multi_turn=types.SimpleNamespace(max_assistant_turns=max_turns, use_all_traj=True),
        agent=types.SimpleNamespace(rewards_with_env=True),
    )
    loop.internal_data_cache = {}
    loop.data_buffers = [DataBuffer()]
    loop.rollouts = [ScriptedRollout(reply, mesh) for reply in replies]
    loop.workers = {loop._generate_node_worker_key(node): types.SimpleNamespace(rollout=r) for node, r in zip(nodes, loop.rollouts, strict=True)}
    loop.max_model_len = 16384
    loop.finish_generate = False
    loop.node_queue = nodes
    loop.tail_device_mesh = mesh
    return loop


def run_batch(loop: Any, prompts: list[str], seeds: list[int]) -> dict[str, dict[str, list[Any]]]:
    """One batch as ``MultiAgentLoop.generate_sequence`` runs it: the prompts go to the first agent, then ``generate_colocate``."""
    _, AgentOutput = import_multi_agent_loop()
    entry = loop.node_queue[0]
    tokenizer = entry.agent_process.tokenizer

    async def batch() -> Any:
        for i, (prompt, seed) in enumerate(zip(prompts, seeds, strict=True)):
            ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True)
            ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
            output = AgentOutput(
                batch_id=i,
                original_prompt=ids,
                templated_prompt="",
                should_stop=False,
                response_mask=[0] * len(ids),
                response_id=[],
                request_id=uuid4().hex,
                ground_truth={"seed": seed},
            )
            await loop.async_put_data(loop._generate_key(entry, entry, i), output, 1, 1, {})
        return await loop.generate_colocate(len(prompts), {"temperature": 1.0}, {})

    result = asyncio.run(batch())
    loop.internal_data_cache.clear()
    return result
