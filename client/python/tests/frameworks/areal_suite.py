"""AReaL (the released package, see requirements-frameworks-areal.txt) driving gymwire sessions.

AReaL's own inference engine client (``RemoteSGLangEngine``) and ``WorkflowExecutor`` run
``GymWSWorkflow`` as the single-controller mode does on a rollout worker: from its class path with
``workflow_kwargs`` that went through AReaL's RPC serialization (tokenizer and processor as path
strings), with ``check_trajectory_format`` on. The LLM server is a scripted stand-in speaking
SGLang's ``/generate`` HTTP API (examples/python/_tiny_lm.py): SGLang and vLLM need a GPU. The tokenizer and the
Qwen2-VL processor are tiny, built here. The agent form runs through AReaL's ``OpenAIProxyWorkflow``
in ``subproc`` mode, in AReaL's own process pool.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from areal.api.cli_args import GenerationHyperparameters, InferenceEngineConfig
from areal.engine.sglang_remote import RemoteSGLangEngine
from areal.infra.rpc.serialization import deserialize_value, serialize_value
from areal.infra.workflow_executor import check_trajectory_format

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "python"
sys.path.insert(0, str(EXAMPLES))
from _tiny_lm import ScriptedChatServer, ScriptedGenerateServer, build_tokenizer, build_vision_processor  # noqa: E402
from conftest import sessions_left  # noqa: E402

CARTPOLE = "gymwire/CartPole-v1"
EVAC = "gymwire/EvacWorldModel-v0"
WORKFLOW = "gymwire.integrations.areal.GymWSWorkflow"
CORPUS = [
    'Observation: [0.01, -0.02, 0.03, 0.04]\nReply with the action as JSON matching {"type": "integer"} inside <action></action>.',
    "<action>1</action>",
    "<action>[0.5, 0.5]</action>",
]
ACTION = "<action>1</action>"
WRONG_SHAPE_ACTION = "<action>[0.5, 0.5]</action>"  # CartPole's action is one integer
EVAC_ACTION = "<action>" + json.dumps(np.zeros((8, 7)).tolist()) + "</action>"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-lm")
    build_tokenizer(path, CORPUS)
    return path


@pytest.fixture(scope="module")
def vision_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-vl")
    build_vision_processor(path, CORPUS + [EVAC_ACTION])
    return path


def scripted_server(model_path: Path, text: str) -> ScriptedGenerateServer:
    """The stand-in LLM: says ``text``, then EOS, then chatter that only a stop token cuts off."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    said = tok.encode(text, add_special_tokens=False)
    return ScriptedGenerateServer(lambda payload: said, [tok.eos_token_id] + tok.encode(" and more text", add_special_tokens=False) * 8)


def engine_for(server: ScriptedGenerateServer, model_path: Path) -> RemoteSGLangEngine:
    config = InferenceEngineConfig(
        experiment_name=None, trial_name=None, consumer_batch_size=4, max_concurrent_rollouts=4, check_trajectory_format=True,
        tokenizer_path=str(model_path), setup_timeout=60, request_timeout=60, backend="sglang:d1",
    )  # fmt: skip
    engine = RemoteSGLangEngine(config)
    engine.initialize(addr=server.address)
    return engine


def single_controller_kwargs(**kwargs) -> dict:
    """What a rollout worker receives: the controller's workflow_kwargs after AReaL's RPC serialization."""
    return deserialize_value(json.loads(json.dumps(serialize_value(kwargs))))


def test_single_controller_rebuilds_the_workflow_from_its_class_path(url: str, model_dir: Path) -> None:
    server = scripted_server(model_dir, ACTION)
    engine = engine_for(server, model_dir)
    try:
        kwargs = single_controller_kwargs(
            server_url=url, gconfig=GenerationHyperparameters(max_new_tokens=64, n_samples=1), tokenizer=str(model_dir), env_id=CARTPOLE, max_turns=6
        )
        assert isinstance(kwargs["tokenizer"], str)
        trajs = engine.rollout_batch([{"seed": 3}, {"seed": 4}], workflow=WORKFLOW, workflow_kwargs=kwargs, group_size=2)
    finally:
        engine.destroy()
        server.close()
    assert len(trajs) == 2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    for traj in trajs:
        assert check_trajectory_format(traj) is True  # AReaL's own check (the executor ran it too)
        assert traj["input_ids"].shape[0] == 2  # group_size 2: AReaL padded and concatenated two episodes
        assert set(traj) >= {"input_ids", "loss_mask", "logprobs", "versions", "attention_mask", "rewards"}
        assert torch.equal(traj["rewards"], torch.tensor([6.0, 6.0]))  # CartPole pushed right survives 6 turns
        ids, mask = traj["input_ids"][0], traj["loss_mask"][0].bool()
        generated = tok.decode(ids[mask & traj["attention_mask"][0].bool()].tolist())
        assert generated == (ACTION + "<|im_end|>") * 6  # each turn stops at EOS: no chatter is trained
        assert (traj["versions"][0][~mask & traj["attention_mask"][0].bool()] == -1).all()
    stops = {tuple(r["sampling_params"]["stop_token_ids"]) for r in server.requests}
    assert stops == {(tok.pad_token_id, tok.eos_token_id)}  # gconfig.new_with_stop_and_pad_token_ids
    assert sessions_left(url) == 0


class RPCWorker:
    """AReaL's own RPC server (``python -m areal.infra.rpc.rpc_server``) as a rollout worker process, called the way
    AReaL's LocalScheduler calls it: ``/create_engine`` and ``/call`` with AReaL's serialization, results fetched
    back from the worker's data store (``RTensor.localize``)."""

    def __init__(self, tmp: Path) -> None:
        root = tmp / "name_resolve"
        args = ["--host", "127.0.0.1", "--port", "0", "--experiment-name", "gymwire", "--trial-name", "rpc", "--role", "rollout", "--worker-index", "0"]
        args += ["--name-resolve-type", "nfs", "--nfs-record-root", str(root)]
        self.log = open(tmp / "rpc_server.log", "w")  # noqa: SIM115 - open for the worker's lifetime
        self.proc = subprocess.Popen([sys.executable, "-m", "areal.infra.rpc.rpc_server", *args], stdout=self.log, stderr=subprocess.STDOUT)
        self.root = root
        self._addr: str | None = None

    @property
    def addr(self) -> str:
        """The worker's address, once it has registered with AReaL's name_resolve (waits for it)."""
        from areal.api.cli_args import NameResolveConfig
        from areal.utils import name_resolve, names

        if self._addr is None:
            name_resolve.reconfigure(NameResolveConfig(type="nfs", nfs_record_root=str(self.root)))
            # A fresh process importing torch and AReaL: minutes on a loaded 2-core machine.
            self._addr = name_resolve.wait(names.worker_discovery("gymwire", "rpc", "rollout", 0), timeout=540)
        return self._addr

    def post(self, route: str, payload: dict):
        import requests

        r = requests.post(f"http://{self.addr}/{route}", json=payload, timeout=120)  # a call that hangs fails the test
        assert r.status_code == 200, r.text
        return r.json()

    def create_engine(self, engine: str, **kwargs) -> None:
        self.post("create_engine", {"engine": engine, "engine_name": "rollout/0", "init_args": serialize_value([]), "init_kwargs": serialize_value(kwargs)})

    def call(self, method: str, **kwargs):
        from areal.infra.rpc.rtensor import RTensor

        out = self.post("call", {"method": method, "engine_name": "rollout/0", "args": serialize_value([]), "kwargs": serialize_value(kwargs)})
        return RTensor.localize(deserialize_value(out["result"]))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:  # a worker still importing, or stuck: never left behind
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


@pytest.fixture(scope="module", autouse=True)
def rpc_worker(tmp_path_factory: pytest.TempPathFactory):
    """One AReaL RPC server for the module, started with the module's first test so that its start-up (imports of torch
    and AReaL) overlaps the tests before the one that calls it."""
    worker = RPCWorker(tmp_path_factory.mktemp("areal-rpc"))
    yield worker
    worker.close()


def test_vlm_turns_come_from_the_processor_with_multi_modal_input(url: str, vision_dir: Path) -> None:
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(vision_dir)
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    server = scripted_server(vision_dir, EVAC_ACTION)
    engine = engine_for(server, vision_dir)
    try:
        kwargs = single_controller_kwargs(
            server_url=url, gconfig={"max_new_tokens": 512}, tokenizer=str(vision_dir), processor=str(vision_dir), env_id=EVAC, max_turns=2
        )
        (traj,) = engine.rollout_batch([{"seed": 5}], workflow=WORKFLOW, workflow_kwargs=kwargs)
    finally:
        engine.destroy()
        server.close()
    assert check_trajectory_format(traj) is True
    (mm,) = traj["multi_modal_input"]
    assert mm["image_grid_thw"].tolist() == [[1, 4, 4], [1, 4, 4]]  # one 64x64 frame per turn, resized by Qwen2-VL's processor
    assert mm["pixel_values"].shape[0] == 2 * 16
    ids = traj["input_ids"][0]
    assert int((ids == image_pad).sum()) == 2 * 4  # 16 patches merged 2x2 per image: the processor's expansion
    first, second = server.requests
    assert len(first["image_data"]) == 1 and len(second["image_data"]) == 2  # every image whose tokens are in the prompt
    assert first["input_ids"].count(image_pad) == 4
    assert sessions_left(url) == 0


def test_agent_run_in_the_proxys_subproc_mode(url: str) -> None:
    """AReaL's subproc mode runs ``agent.run(data)`` in its process pool with OPENAI_BASE_URL set and no kwargs."""
    from areal.experimental.openai.proxy.workflow import _get_executor, _wrap_run

    from gymwire.integrations.areal import GymWSAgent

    chat = ScriptedChatServer([{"name": "step", "arguments": {"action": 1}}] * 40)
    try:
        agent = GymWSAgent(url, env_id=CARTPOLE, model="tiny", max_turns=40)
        env = {"OPENAI_BASE_URL": chat.base_url, "OPENAI_API_KEY": "session-key"}
        reward = _get_executor(max_workers=1).submit(_wrap_run, agent, {"seed": 3}, env).result(timeout=120)
    finally:
        chat.close()
    assert isinstance(reward, float) and reward >= 5.0
    assert chat.api_keys == {"Bearer session-key"}
    assert sessions_left(url) == 0  # the agent closed its session in AReaL's worker process


def test_unknown_env_and_a_down_server_are_clear_errors_in_areals_log(url: str, model_dir: Path, capfd: pytest.CaptureFixture) -> None:
    server = scripted_server(model_dir, ACTION)
    engine = engine_for(server, model_dir)
    try:
        kwargs = single_controller_kwargs(server_url=url, gconfig={"max_new_tokens": 16}, tokenizer=str(model_dir), env_id="gymwire/NoSuchEnv-v0")
        assert engine.rollout_batch([{"seed": 1}], workflow=WORKFLOW, workflow_kwargs=kwargs) == []  # rejected, not a zero reward
        kwargs = single_controller_kwargs(
            server_url="ws://127.0.0.1:9", gconfig={"max_new_tokens": 16}, tokenizer=str(model_dir), env_id=CARTPOLE, client_options={"connect_timeout": 2}
        )
        assert engine.rollout_batch([{"seed": 1}], workflow=WORKFLOW, workflow_kwargs=kwargs) == []
    finally:
        engine.destroy()
        server.close()
    log = "".join(capfd.readouterr())
    assert 'Workflow execution failed: ENV_ERR_UNKNOWN_ENV: no env is registered as "gymwire/NoSuchEnv-v0"' in log
    assert re.search(r"Workflow execution failed: .*ws://127\.0\.0\.1:9", log)
    assert sessions_left(url) == 0


def test_a_wrong_action_shape_is_refused_with_the_servers_message_in_areals_log(
    url: str, model_dir: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture
) -> None:
    server = scripted_server(model_dir, WRONG_SHAPE_ACTION)
    engine = engine_for(server, model_dir)
    try:
        kwargs = single_controller_kwargs(server_url=url, gconfig={"max_new_tokens": 64}, tokenizer=str(model_dir), env_id=CARTPOLE, max_turns=3)
        (traj,) = engine.rollout_batch([{"seed": 1}], workflow=WORKFLOW, workflow_kwargs=kwargs)
    finally:
        engine.destroy()
        server.close()
    assert check_trajectory_format(traj) is True
    assert traj["rewards"].tolist() == [0.0]
    # Every turn's refusal is in the log with the server's reason (the model also reads it in its next prompt).
    log = caplog.text + "".join(capfd.readouterr())
    reason = "ENV_ERR_INVALID_ACTION: action is not in the action space: expected an integer in [0, 1], got an array of 2"
    assert log.count("gymwire workflow: turn") == 3 and reason in log, log[-3000:]
    assert sessions_left(url) == 0


@pytest.mark.timeout(600)  # a fresh process importing torch and AReaL: minutes on a loaded 2-core machine
def test_example_runs_areal_code(url: str) -> None:
    example = EXAMPLES / "areal_workflow.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=540, env={**os.environ, "GYMWIRE_URL": url})
    assert out.returncode == 0, f"{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    assert re.search(r"AReaL \d", out.stdout)
    assert sessions_left(url) == 0


@pytest.mark.timeout(900)  # includes waiting for the worker to finish starting (rpc_worker)
def test_single_controller_through_areals_rpc_server(url: str, model_dir: Path, rpc_worker: RPCWorker) -> None:
    """The controller side of AReaL's single-controller mode against AReaL's RPC server in its own process: the
    engine is built there from its class path, the workflow from its class path and serialized workflow_kwargs;
    one batch through ``rollout_batch``, one through the controller's per-task ``submit`` and ``wait_for_task``.
    The LLM server is the scripted SGLang stand-in (SGLang needs a GPU).

    Between batches the controller moves the policy version on, as AReaL's trainer does after each weight update
    (``RLTrainer`` calls ``rollout.set_version(global_step + 1)``, which the controller forwards to every worker):
    AReaL's staleness control admits ``(max_head_offpolicyness + version + 1) * consumer_batch_size`` rollouts, so
    a second batch at version 0 would wait for capacity forever."""
    server = scripted_server(model_dir, ACTION)
    worker = rpc_worker
    try:
        config = InferenceEngineConfig(
            experiment_name="gymwire", trial_name="rpc", consumer_batch_size=2, max_concurrent_rollouts=2, check_trajectory_format=True,
            tokenizer_path=str(model_dir), setup_timeout=60, request_timeout=60, backend="sglang:d1",
        )  # fmt: skip
        worker.create_engine("areal.engine.sglang_remote.RemoteSGLangEngine", config=config)
        worker.call("initialize", addr=server.address)
        kwargs = {"server_url": url, "gconfig": {"max_new_tokens": 64}, "tokenizer": str(model_dir), "env_id": CARTPOLE, "max_turns": 4}
        data = [{"seed": 3}, {"seed": 4}]
        for version in range(2):  # two batches, one policy version each
            worker.call("set_version", version=version)
            if version == 0:
                trajs = worker.call("rollout_batch", data=data, workflow=WORKFLOW, workflow_kwargs=kwargs)
            else:  # as AReaL's RolloutController sends each task (which learns of its end by a callback instead)
                task_ids = [worker.call("submit", data=d, workflow=WORKFLOW, workflow_kwargs=kwargs) for d in data]
                trajs = [worker.call("wait_for_task", task_id=task_id, timeout=60) for task_id in task_ids]
            assert len(trajs) == 2
            for traj in trajs:
                assert check_trajectory_format(traj) is True
                assert traj["rewards"].tolist() == [4.0]  # four turns of CartPole pushed right, the return counted once
                generated = traj["versions"][0][traj["loss_mask"][0].bool()]
                assert (generated == version).all()  # the engine stamped this batch's version on every generated token
            assert sessions_left(url) == 0
        worker.call("destroy")
    finally:
        server.close()
    assert sessions_left(url) == 0
