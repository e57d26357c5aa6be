"""verl (the released package, see requirements-frameworks-verl.txt) driving gymwire sessions.

verl's own AgentLoopWorker runs in a Ray actor (as verl's AgentLoopManager runs it), built from
verl's own trainer config with ``agent_loop_config_path`` naming GymWSAgentLoop; it loads the
tools through verl's tool loader from ``tool_config_path``. The model is a tiny local Qwen2-shaped
config with a tokenizer trained here (transformers 5), and the LLM engine is a scripted stand-in
that answers with a fixed tool call: vLLM/SGLang need a GPU.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import ray
import torch
import verl
import yaml
from conftest import sessions_left
from hydra import compose, initialize_config_dir
from ray_start import init_ray
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.protocol import DataProto
from verl.tools.tool_registry import initialize_tools_from_config
from verl.workers.rollout.replica import TokenOutput

from gymwire.integrations.verl import GymWSAgentLoop, GymWSTool, fetch_env_tool_schemas, token_ids, verl_tool_schema

CARTPOLE = "gymwire/CartPole-v1"
EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "python"
TOOL_CALL = '<tool_call>{"name": "step", "arguments": {"action": 1}}</tool_call>'
# What a policy with the wrong action shape says: CartPole's action is one integer, not a vector.
BAD_TOOL_CALL = '<tool_call>{"name": "step", "arguments": {"action": [0.5, 0.5, 0.5]}}</tool_call>'
BAD_PROMPT = "Send a vector."
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny local model directory: a byte-level BPE tokenizer trained here and a Qwen2 config."""
    path = tmp_path_factory.mktemp("tiny-qwen2")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [
        TOOL_CALL,
        BAD_TOOL_CALL,
        '{"observation": [0.1, -0.2], "reward": 1.0, "terminated": false}',
        f"Balance the pole. {BAD_PROMPT} system user assistant tool",
    ] * 20
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    Qwen2Config(
        architectures=["Qwen2ForCausalLM"],
        vocab_size=len(fast),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    ).save_pretrained(path)
    return path


class ScriptedLLM:
    """Stands in for verl's LLM server client: every turn answers with one ``step`` tool call
    (a malformed one when the prompt asks for a vector)."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.calls = 0

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, image_data=None, video_data=None, **kwargs) -> TokenOutput:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.model_path)
        text = BAD_TOOL_CALL if BAD_PROMPT in tok.decode(prompt_ids) else TOOL_CALL
        ids = tok.encode(text, add_special_tokens=False)
        self.calls += 1
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


def verl_config(model_dir: Path, tmp: Path, url: str, *extra: str):
    agent_loops = tmp / "agent_loops.yaml"
    agent_loops.write_text(
        yaml.safe_dump([{"name": "gym_ws", "_target_": "gymwire.integrations.verl.GymWSAgentLoop", "gymwire_url": url, "env_id": CARTPOLE, "max_turns": 64}])
    )
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_dir}",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loops}",
                "actor_rollout_ref.rollout.prompt_length=2048",
                "actor_rollout_ref.rollout.response_length=8192",
                "actor_rollout_ref.rollout.name=vllm",
                "actor_rollout_ref.rollout.mode=async",
                *extra,
            ],
        )


@pytest.fixture(scope="module")
def ray_session():
    init_ray(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}})
    # The LLM stand-in is defined here, a module Ray's workers cannot import by name.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def agent_worker(url: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory, ray_session):
    """verl's AgentLoopWorker in a Ray actor, as AgentLoopManager starts it."""
    config = verl_config(model_dir, tmp_path_factory.mktemp("verl-config"), url)
    return ray.remote(AgentLoopWorker).remote(config, ScriptedLLM(str(model_dir)))


def samples(prompts: list[str], agent_name: str = "gym_ws", **columns: list) -> DataProto:
    """A batch as verl's dataset hands it to the agent loop workers; extra columns are per-sample overrides."""
    raw_prompt = np.empty(len(prompts), dtype=object)
    for i, text in enumerate(prompts):
        raw_prompt[i] = [{"role": "user", "content": text}]
    data = {"raw_prompt": raw_prompt, "agent_name": np.array([agent_name] * len(prompts), dtype=object), "index": np.arange(len(prompts))}
    data.update({k: np.array(v, dtype=object) for k, v in columns.items()})
    return DataProto.from_single_dict(data, meta_info={"global_steps": 1, "validate": False})


@pytest.mark.timeout(900)
def test_agent_loop_worker_runs_gym_ws_episodes_in_a_ray_actor(agent_worker, url: str) -> None:
    out = ray.get(agent_worker.generate_sequences.remote(samples(["Balance the pole."] * 2, seed=[3, 4])))
    responses, mask = out.batch["responses"], out.batch["response_mask"]
    assert responses.shape[0] == 2
    assert (mask.sum(dim=1) > 0).all()  # generated tokens are marked 1, env answers 0
    scores = out.batch["rm_scores"].sum(dim=1).tolist()
    assert all(s >= 5 for s in scores), scores  # CartPole pushed right lasts several steps, reward 1 each
    assert [list(e) for e in out.non_tensor_batch["tool_errors"]] == [[], []]
    assert sessions_left(url) == 0


@pytest.mark.timeout(900)
def test_wrong_actions_unknown_env_and_a_down_server_are_clear_errors_in_the_worker(agent_worker) -> None:
    # The policy's tool calls carry a vector where CartPole takes one integer: each call's error goes
    # back to the model (it may correct itself), into the worker's log and into the batch.
    out = ray.get(agent_worker.generate_sequences.remote(samples([BAD_PROMPT], seed=[3])))
    (errors,) = out.non_tensor_batch["tool_errors"]
    assert len(errors) == 64 and out.batch["rm_scores"].sum().item() == 0.0  # max_turns turns, every one refused
    assert errors[0].startswith("step: ENV_ERR_INVALID_ACTION"), errors[0]
    # Bad config fails the batch with the server's message, not a hang or a zero reward.
    with pytest.raises(ray.exceptions.RayTaskError, match='ENV_ERR_UNKNOWN_ENV: no env is registered as "gymwire/NoSuchEnv-v0"'):
        ray.get(agent_worker.generate_sequences.remote(samples(["Balance the pole."], env_id=["gymwire/NoSuchEnv-v0"])))
    with pytest.raises(ray.exceptions.RayTaskError, match=r"ws://127\.0\.0\.1:9"):
        ray.get(agent_worker.generate_sequences.remote(samples(["Balance the pole."], gymwire_url=["ws://127.0.0.1:9"])))


class LoopThread:
    """An event loop running in a thread of its own, as a Ray async actor runs its methods (here without Ray)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro, timeout: float = 600):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module", params=[False, True], ids=["uuid-request-ids", "full-determinism"])
def tool_worker(request, url: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """verl's AgentLoopWorker running its own ToolAgentLoop with gymwire's tools (loaded by verl from tool_config_path).

    The worker runs on an event loop in a thread of its own, as in the Ray actor verl's AgentLoopManager starts (Ray
    itself is left out here: the other tests start it, and a Ray start costs minutes on a loaded machine)."""
    tmp = tmp_path_factory.mktemp("verl-tools")
    tools = tmp / "tools.yaml"
    tools.write_text(yaml.safe_dump(GymWSTool.tool_config(url, CARTPOLE, asyncio.run(fetch_env_tool_schemas(url, CARTPOLE)))))
    config = verl_config(
        model_dir,
        tmp,
        url,
        "actor_rollout_ref.rollout.multi_turn.enable=true",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
        f"actor_rollout_ref.rollout.full_determinism={str(request.param).lower()}",
    )
    host = LoopThread()
    worker = AgentLoopWorker(config, ScriptedLLM(str(model_dir)))
    yield request.param, host, worker
    host.stop()


@pytest.mark.timeout(900)
def test_tool_agent_loop_keeps_one_session_per_trajectory_and_leaves_none_open(tool_worker, url: str) -> None:
    """verl's ToolAgentLoop with ``max_assistant_turns=3``: two tool calls per trajectory (the third turn ends it),
    each a ``step`` of CartPole pushed right, which lasts longer: every trajectory ends before its episode does.
    The LLM engine is a stand-in (a GPU is needed for vLLM/SGLang); the loop, worker and tool loader are verl's."""
    full_determinism, host, worker = tool_worker
    seeds = [3, 4]
    batch = lambda: samples(  # noqa: E731
        ["Balance the pole."] * 2, agent_name="tool_agent", tools_kwargs=[{"step": {"create_kwargs": {"seed": s}}} for s in seeds], priority=[0, 1]
    )
    first = host.call(worker.generate_sequences(batch()))
    assert sessions_left(url) == 0  # every trajectory's session closed when verl dropped the trajectory
    second = host.call(worker.generate_sequences(batch()))
    assert sessions_left(url) == 0
    for out in (first, second):
        assert [list(r) for r in out.non_tensor_batch["tool_rewards"]] == [[1.0, 1.0], [1.0, 1.0]]  # two steps each, counted once
    # The second batch replays the first (same seeds, same actions): a fresh, reset episode per trajectory, even when
    # verl names both batches' requests det-0 and det-1 (full determinism).
    assert torch.equal(first.batch["responses"], second.batch["responses"]), full_determinism
    assert not torch.equal(first.batch["responses"][0], first.batch["responses"][1])  # two seeds, two episodes


def test_tool_descriptions_say_each_bound_once(url: str) -> None:
    schemas = asyncio.run(fetch_env_tool_schemas(url, CARTPOLE))
    (step,) = [e["tool_schema"] for e in GymWSTool.tool_config(url, CARTPOLE, schemas)["tools"] if e["tool_schema"]["function"]["name"] == "step"]
    description = step["function"]["parameters"]["properties"]["action"]["description"]
    assert description.count("minimum 0") == 1 and description.count("maximum 1") == 1, description


def test_token_ids_from_transformers_5_chat_templates(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    encoded = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=True, add_generation_prompt=True)
    ids = token_ids(encoded)
    assert ids and all(isinstance(i, int) for i in ids)
    assert tok.decode(ids).endswith("<|im_start|>assistant\n")


def test_tool_loader_builds_gym_ws_tools_and_sessions_are_released(url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    specs = asyncio.run(fetch_env_tool_schemas(url, CARTPOLE))
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump(GymWSTool.tool_config(url, CARTPOLE, specs, seed=5)))
    tools = {t.name: t for t in initialize_tools_from_config(str(path))}  # verl's own loader and schema model
    assert {"step", "reset"} <= set(tools)
    assert tools["reset"].tool_schema.function.parameters.required == []

    class AgentData:
        """One trajectory, as verl's ToolAgentLoop hands it to every tool call."""

        request_id = "det-0"
        tools_kwargs: dict = {}

    async def episode() -> list[float]:
        rewards = []
        trajectory = AgentData()
        instance, _ = await tools["step"].create()
        # A wrong action shape: the model reads the server's error, the log says it, no reward.
        response, reward, metrics = await tools["step"].execute(instance, {"action": [0.5, 0.5]}, agent_data=trajectory)
        assert "ENV_ERR_INVALID_ACTION" in json.loads(response.text)["error"] and reward == 0.0 and metrics == {"error": True}
        for _ in range(100):
            instance, _ = await tools["step"].create()
            response, reward, metrics = await tools["step"].execute(instance, {"action": 1}, agent_data=trajectory)
            await tools["step"].release(instance)
            rewards.append(reward)
            if metrics.get("episode_done"):
                return rewards
        raise AssertionError("the episode never ended")

    rewards = asyncio.run(episode())
    assert len(rewards) >= 5 and all(r == 1.0 for r in rewards)
    assert len(GymWSTool.episodes) == 0 and sessions_left(url) == 0  # closed when the episode ended
    assert any(r.levelname == "WARNING" and "gymwire tool step" in r.getMessage() and "ENV_ERR_INVALID_ACTION" in r.getMessage() for r in caplog.records)


def test_zero_argument_schema_gets_required_and_bounds_stay_visible() -> None:
    s = verl_tool_schema({"type": "function", "function": {"name": "look", "description": "Look around."}})
    assert s["function"]["parameters"] == {"type": "object", "properties": {}, "required": []}
    s = verl_tool_schema(
        {
            "type": "function",
            "function": {
                "name": "step",
                "parameters": {"type": "object", "properties": {"action": {"type": "integer", "minimum": 0, "maximum": 1}}, "required": ["action"]},
            },
        }
    )
    assert "minimum 0" in s["function"]["parameters"]["properties"]["action"]["description"]


def test_agent_loop_needs_a_server_and_env(model_dir: Path) -> None:
    loop = GymWSAgentLoop.__new__(GymWSAgentLoop)
    loop.default_url, loop.default_env_id, loop.max_turns = None, None, 4
    with pytest.raises(ValueError, match="no server url or env id"):
        asyncio.run(loop.run({}, raw_prompt=[]))


def test_json_of_tool_calls_is_what_the_stand_in_sends() -> None:
    assert json.loads(TOOL_CALL[len("<tool_call>") : -len("</tool_call>")])["name"] == "step"


def run_example(url: str, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300, env={**os.environ, "GYMWIRE_URL": url})


@pytest.mark.timeout(400)
def test_tools_example_runs_verls_loader_and_tool_api(url: str) -> None:
    out = run_example(url, "verl_tools.py")
    assert out.returncode == 0, f"{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    assert f"verl {verl.__version__} loaded tools" in out.stdout


@pytest.mark.timeout(400)
def test_vla_example_says_plainly_that_this_verl_has_no_vla_env_manager(url: str) -> None:
    out = run_example(url, "verl_vla.py")
    assert out.returncode == 1
    assert f"FAILED: verl {verl.__version__} has no VLA env manager" in out.stderr
    assert "VLA rollouts through verl cannot run on it" in out.stderr and "examples/python/verl_tools.py" in out.stderr
