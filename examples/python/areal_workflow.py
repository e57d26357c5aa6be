"""AReaL: its inference engine client and workflow executor run GymWSWorkflow on remote CartPole.

AReaL's ``RemoteSGLangEngine`` rebuilds the workflow from its class path and ``workflow_kwargs``
(as a single-controller rollout worker does), and its ``WorkflowExecutor`` runs the episodes with
``check_trajectory_format`` on. The LLM server is the one at $AREAL_LLM_SERVER_ADDRS (host:port of
an SGLang server, with its tokenizer at $AREAL_TOKENIZER) when set; otherwise a rule-based stand-in
speaking SGLang's ``/generate`` API (it reads the last observation in the prompt and answers
``<action>k</action>``) with a tiny tokenizer built here. Needs AReaL (areal==1.0.4, see
docs/integrations.md); exits 1 without it.
Run: python examples/python/areal_workflow.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

from _server import check, server_url

try:
    import areal
    from areal.api.cli_args import GenerationHyperparameters, InferenceEngineConfig
    from areal.engine.sglang_remote import RemoteSGLangEngine
    from transformers import AutoTokenizer
except ImportError as e:
    print(f"FAILED: AReaL is not installed ({e}); install areal==1.0.4 as docs/integrations.md says", file=sys.stderr)
    sys.exit(1)

from _tiny_lm import ScriptedGenerateServer, build_tokenizer

TURNS = 40


def rule_based_server(tokenizer) -> ScriptedGenerateServer:
    """Pushes the cart toward where the pole leans, read from the prompt's last observation."""

    def reply(payload: dict) -> list[int]:
        prompt = tokenizer.decode(payload["input_ids"])
        obs = json.loads(re.findall(r"Observation: (\[.*?\])", prompt)[-1])
        return tokenizer.encode(f"<action>{int(obs[2] + 0.5 * obs[3] > 0)}</action>", add_special_tokens=False)

    return ScriptedGenerateServer(reply, [tokenizer.eos_token_id])


with server_url() as url, tempfile.TemporaryDirectory() as tmp:
    print(f"AReaL {areal.__version__ if hasattr(areal, '__version__') else 'installed'}")
    tokenizer_path = os.environ.get("AREAL_TOKENIZER") or tmp
    stand_in = None
    if not os.environ.get("AREAL_LLM_SERVER_ADDRS"):
        corpus = ['Observation: [0.01, -0.02, 0.03, 0.04]\nReply with the action as JSON matching {"type": "integer"} inside <action></action>.']
        build_tokenizer(tmp, corpus + ["<action>0</action>", "<action>1</action>"])
        stand_in = rule_based_server(AutoTokenizer.from_pretrained(tmp))
    engine = RemoteSGLangEngine(
        InferenceEngineConfig(
            backend="sglang:d1", consumer_batch_size=2, max_concurrent_rollouts=2, check_trajectory_format=True, tokenizer_path=tokenizer_path
        )
    )
    engine.initialize(addr=stand_in.address if stand_in else os.environ["AREAL_LLM_SERVER_ADDRS"].split(","))
    try:
        trajectories = engine.rollout_batch(
            [{"seed": 7}, {"seed": 8}],
            workflow="gymwire.integrations.areal.GymWSWorkflow",
            workflow_kwargs={
                "server_url": url,
                "gconfig": GenerationHyperparameters(max_new_tokens=16, n_samples=1),
                "tokenizer": tokenizer_path,
                "env_id": "gymwire/CartPole-v1",
                "max_turns": TURNS,
            },
        )
    finally:
        engine.destroy()
        if stand_in:
            stand_in.close()
    for traj in trajectories:
        print({key: tuple(value.shape) for key, value in traj.items()}, "return", float(traj["rewards"][0]))
    check(len(trajectories) == 2, "AReaL returned both trajectories")
    if stand_in:
        check(all(float(t["rewards"][0]) == TURNS for t in trajectories), f"the rule-based model should survive {TURNS} turns")
