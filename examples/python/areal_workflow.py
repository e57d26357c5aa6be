"""AReaL: GymWSWorkflow plays remote CartPole turn by turn through `engine.agenerate`.

With AReaL installed you hand the workflow to `engine.submit/wait/prepare_batch(..., workflow=wf,
group_size=G)`. Here a stand-in engine (a tiny rule-based "model" that reads the observation from
the prompt and answers `<action>k</action>`) shows the loop and checks the six-key tensor dict.
Run: python examples/python/areal_workflow.py
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

import numpy as np
from _server import check, server_url

from gymwire.integrations.areal import GymWSWorkflow


class CharTokenizer:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)


@dataclass
class Response:
    output_tokens: list[int]
    output_logprobs: list[float]
    output_versions: list[int]
    stop_reason: str = "stop"


class RuleEngine:
    """Stands in for AReaL's InferenceEngine: the last observation in the prompt -> an action."""

    async def agenerate(self, req) -> Response:
        prompt = "".join(chr(i) for i in req.input_ids)
        obs = json.loads(re.findall(r"Observation: (\[.*?\])", prompt)[-1])
        text = f"<action>{int(obs[2] + 0.5 * obs[3] > 0)}</action>"
        ids = [ord(c) for c in text]
        return Response(ids, [-0.1] * len(ids), [0] * len(ids))


class GConfig:
    n_samples = 8

    def new(self, **kw):
        g = GConfig()
        g.__dict__.update(kw)
        return g


with server_url() as url:
    workflow = GymWSWorkflow(url, GConfig(), CharTokenizer(), env_id="gymwire/CartPole-v1", max_turns=60, use_torch=False)
    batch = asyncio.run(workflow.arun_episode(RuleEngine(), {"seed": 7}))
    for key, value in batch.items():
        print(f"{key:15s} {str(value.dtype):8s} {tuple(value.shape)}")
    check(batch["rewards"].shape == (1,) and batch["rewards"][0] == 60.0, f"the rule model should survive 60 turns, got {batch['rewards']}")
    check(int(np.asarray(batch["loss_mask"]).sum()) == 60 * len("<action>0</action>"), "only generated tokens are trained")
