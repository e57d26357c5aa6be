"""AReaL: the RolloutWorkflow, the agent run() form and the Environment tool shape, pinned to AReaL's contracts.

AReaL cannot be imported here (``areal/__init__`` pulls in torch and its GPU stack), so the
signatures and the six-key tensor format are pinned from framework-contracts.md and
areal/api/workflow_api.py (v1.0.4).
"""

from __future__ import annotations

import asyncio
import inspect

import numpy as np
from fakes import CharTokenizer, ScriptedEngine, ScriptedOpenAI

from gymwire.integrations.areal import GymWSAgent, GymWSWorkflow, dataset_to_areal
from gymwire.tools import ToolEnvironment

CARTPOLE = "gymwire/CartPole-v1"


class GConfig:
    def __init__(self, n_samples: int = 4) -> None:
        self.n_samples = n_samples

    def new(self, **kw: int) -> GConfig:
        return GConfig(**kw)


def test_signatures_match_areal() -> None:
    assert list(inspect.signature(GymWSWorkflow.arun_episode).parameters) == ["self", "engine", "data"]
    assert inspect.iscoroutinefunction(GymWSWorkflow.arun_episode)
    assert list(inspect.signature(GymWSWorkflow.__init__).parameters)[:4] == ["self", "server_url", "gconfig", "tokenizer"]
    run = inspect.signature(GymWSAgent.run)
    assert list(run.parameters)[:2] == ["self", "data"] and run.parameters["extra_kwargs"].kind is inspect.Parameter.VAR_KEYWORD
    assert all(inspect.iscoroutinefunction(getattr(ToolEnvironment, m)) for m in ("ainitialize", "aexecute", "aclose"))
    assert not inspect.iscoroutinefunction(ToolEnvironment.list_tools)


def test_workflow_returns_the_six_keys_with_batch_dimension_one(url: str) -> None:
    engine = ScriptedEngine(["<action>1</action>", "<action>0</action>"])
    wf = GymWSWorkflow(url, GConfig(), CharTokenizer(), env_id=CARTPOLE, max_turns=5, use_torch=False)
    out = asyncio.run(wf.arun_episode(engine, {"seed": 0}))
    assert set(out) == {"input_ids", "loss_mask", "logprobs", "versions", "attention_mask", "rewards"}
    L = out["input_ids"].shape[1]
    for key, dtype in (("input_ids", np.int32), ("loss_mask", np.int32), ("logprobs", np.float32), ("versions", np.int32), ("attention_mask", np.bool_)):
        assert out[key].shape == (1, L) and out[key].dtype == dtype, key
    assert out["rewards"].shape == (1,) and out["rewards"].dtype == np.float32 and out["rewards"][0] == 5.0
    gen = out["loss_mask"][0] == 1
    assert gen.sum() == 5 * len("<action>1</action>")
    assert np.all(out["versions"][0][~gen] == -1) and np.all(out["versions"][0][gen] == 3)
    assert np.all(out["logprobs"][0][~gen] == 0.0) and np.all(out["logprobs"][0][gen] == -0.5)
    # Each request carries the whole sequence so far and one sample.
    assert all(r.gconfig.n_samples == 1 for r in engine.requests)
    assert len(engine.requests[1].input_ids) > len(engine.requests[0].input_ids)


def test_refused_actions_are_fed_back_and_the_episode_goes_on(url: str) -> None:
    engine = ScriptedEngine(["<action>7</action>", "no json here", "<action>1</action>"])
    wf = GymWSWorkflow(url, GConfig(), CharTokenizer(), env_id=CARTPOLE, max_turns=3, use_torch=False)
    out = asyncio.run(wf.arun_episode(engine, {"seed": 0}))
    text = "".join(chr(i) for i in out["input_ids"][0])
    assert "That action was refused" in text and "outside [0, 1]" in text
    assert out["rewards"][0] == 1.0


def test_agent_run_form_returns_the_episode_return(url: str) -> None:
    fake = {}

    def factory(**kw):
        fake["client"] = ScriptedOpenAI([1, 0, 1], **kw)
        return fake["client"]

    agent = GymWSAgent(url, env_id=CARTPOLE, client_factory=factory)
    reward = asyncio.run(agent.run({"seed": 3}, base_url="http://proxy/v1", api_key="k", http_client=None))
    assert reward == 3.0
    assert fake["client"].kwargs["base_url"] == "http://proxy/v1"
    names = [t["function"]["name"] for t in fake["client"].seen_tools[0]]
    assert "step" in names and "reset" not in names


def test_environment_shape_with_reset_and_step_as_tools(url: str) -> None:
    async def main() -> None:
        env = ToolEnvironment(url, "gymwire/Conformance-v0")
        await env.ainitialize()
        names = [t["function"]["name"] for t in env.list_tools()]
        assert names[-2:] == ["reset", "step"] and {"echo", "add"} <= set(names)
        step_schema = env.list_tools()[-1]["function"]["parameters"]["properties"]["action"]
        assert step_schema["type"] == "array" and step_schema["minItems"] == 2
        first = await env.aexecute("reset", {"seed": 1})
        assert isinstance(first["obs"]["position"], list)
        out = await env.aexecute("step", '{"action": [0.5, 0.5]}')
        assert set(out) == {"obs", "reward", "terminated", "truncated", "info"}
        assert await env.aexecute("add", {"a": 1, "b": 2}) == {"sum": 3}
        await env.aclose()
        await env.aclose()

    asyncio.run(main())


def test_dataset_to_areal(cartpole_dataset) -> None:
    rows = dataset_to_areal(cartpole_dataset, policy_version=7, use_torch=False)
    assert len(rows) == 2
    for r in rows:
        n = r["input_ids"].shape[1]
        assert r["loss_mask"].shape == r["versions"].shape == r["attention_mask"].shape == (1, n)
        assert r["rewards"][0] == n and (r["versions"] == 7).all()
