"""verl (0.9.1): gymwire env tools loaded by verl's own tool loader and played through its BaseTool API.

`GymWSTool.tool_config` writes the `tools:` YAML that `actor_rollout_ref.rollout.multi_turn.tool_config_path`
names; verl's `initialize_tools_from_config` builds the tools from it (its schema model included), and
one CartPole episode runs the way verl's `ToolAgentLoop` calls a tool: create, execute, release on every
call, one env session per request id, closed when the episode ends. The agent loop recipe
(`GymWSAgentLoop` from `agent_loop_config_path`) is in docs/integrations.md. Needs verl (verl==0.9.1,
see docs/integrations.md); exits 1 without it.
Run: python examples/python/verl_tools.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from _server import check, server_url

try:
    import verl
    import yaml
    from verl.tools.tool_registry import initialize_tools_from_config
except ImportError as e:
    print(f"FAILED: verl is not installed ({e}); install verl==0.9.1 as docs/integrations.md says", file=sys.stderr)
    sys.exit(1)

from gymwire.integrations.verl import GymWSTool, fetch_env_tool_schemas

ENV_ID = "gymwire/CartPole-v1"


class AgentData:
    """What verl's ToolAgentLoop passes to tools: one object per trajectory, which owns its env session."""

    request_id = "episode-1"
    tools_kwargs: dict = {}


async def episode(step_tool: GymWSTool) -> list[float]:
    rewards: list[float] = []
    obs = [0.0, 0.0, 0.0, 0.0]
    trajectory = AgentData()
    for _ in range(500):
        instance, _ = await step_tool.create()
        action = 1 if obs[2] + 0.5 * obs[3] > 0 else 0  # push the cart towards the pole's lean
        response, reward, metrics = await step_tool.execute(instance, {"action": action}, agent_data=trajectory)
        await step_tool.release(instance)
        rewards.append(reward)
        obs = json.loads(response.text)["obs"]
        if metrics.get("episode_done"):
            break
    return rewards


with server_url() as url, tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "tools.yaml"
    path.write_text(yaml.safe_dump(GymWSTool.tool_config(url, ENV_ID, asyncio.run(fetch_env_tool_schemas(url, ENV_ID)), seed=7)))
    tools = {t.name: t for t in initialize_tools_from_config(str(path))}
    print(f"verl {verl.__version__} loaded tools: {sorted(tools)}")
    rewards = asyncio.run(episode(tools["step"]))
    print(f"episode: {len(rewards)} steps, return {sum(rewards):.1f}")
    check({"reset", "step"} <= set(tools), "verl's loader built the reset and step tools")
    check(len(rewards) >= 20 and not len(GymWSTool.episodes), "a balanced episode ran and its session was closed")
