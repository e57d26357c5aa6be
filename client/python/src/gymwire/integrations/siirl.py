"""siiRL: a stand-in for ``LIBEROAdapter`` backed by gymwire sessions, and a multi-agent ``env_path`` class.

siiRL's ``EmbodiedHFRollout`` constructs ``LIBEROAdapter(env_name, num_envs, max_steps,
num_steps_wait, model_family, gpu_ids)`` by name and calls its private ``_blocking_reset`` and
``_blocking_step``; :func:`register` replaces that module attribute with :class:`GymwireLIBEROAdapter`,
which returns the same record dicts with raw-LIBERO observation keys. The server URL and env id come
from ``GYMWIRE_URL`` / ``GYMWIRE_ENV_ID`` (siiRL passes no extra arguments), or from ``configure``.

:class:`GymwireTextEnv` is the multi-agent hook (``AgentArguments.env_path: ["gymwire/integrations/siirl.py:GymwireTextEnv"]``):
built with no arguments, ``await step(actions, ground_truth) -> (next_obs, reward, should_stop)``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..tools import to_jsonable
from ._common import ChunkedSessions, ObsMapper, env_setting

_SETTINGS: dict[str, Any] = {}


def configure(url: str, env_id: str, env_kwargs: dict[str, Any] | None = None, **mapping: Any) -> None:
    """Sets the server and env for adapters siiRL constructs (instead of the environment variables)."""
    _SETTINGS.update(url=url, env_id=env_id, env_kwargs=env_kwargs or {}, mapping=mapping)


def _libero_obs(mapper: ObsMapper, obs: Any) -> dict[str, Any]:
    """Raw LIBERO keys: images and the 3+4+2 eef/gripper split of the state (zeros where the state is shorter)."""
    image = mapper.image(obs)
    state = mapper.state(obs)
    state = np.zeros(9, dtype=np.float32) if state is None else np.pad(state, (0, max(0, 9 - state.size)))
    wrist = mapper.wrist(obs)
    return {
        "agentview_image": image,
        "robot0_eye_in_hand_image": wrist if wrist is not None else (None if image is None else np.zeros_like(image)),
        "robot0_eef_pos": state[0:3].astype(np.float32),
        "robot0_eef_quat": state[3:7].astype(np.float32),
        "robot0_gripper_qpos": state[7:9].astype(np.float32),
    }


class GymwireLIBEROAdapter:
    """The ``LIBEROAdapter`` surface over ``num_envs`` gymwire sessions (task id and trial id seed each reset)."""

    def __init__(
        self,
        env_name: str,
        num_envs: int,
        max_steps: int,
        num_steps_wait: int = 0,
        model_family: str = "openvla",
        gpu_ids: Any = None,
        *,
        url: str | None = None,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.env_name = env_name
        self.num_envs = int(num_envs)
        self.max_steps = int(max_steps)
        self.num_steps_wait = int(num_steps_wait)
        self.model_family = model_family
        self.gpu_ids = gpu_ids
        url = env_setting(url or _SETTINGS.get("url"), "GYMWIRE_URL", "gymwire server URL")
        env_id = env_setting(env_id or _SETTINGS.get("env_id"), "GYMWIRE_ENV_ID", "gymwire env id")
        kwargs = env_kwargs if env_kwargs is not None else _SETTINGS.get("env_kwargs") or json.loads(os.environ.get("GYMWIRE_ENV_KWARGS", "{}"))
        self.sessions = ChunkedSessions(url, env_id, self.num_envs, kwargs)
        self.mapper = ObsMapper(self.sessions.observation_space, **(_SETTINGS.get("mapping") or {}))
        self.task_ids = [0] * self.num_envs
        self.steps = np.zeros(self.num_envs, dtype=np.int64)
        self.active = np.zeros(self.num_envs, dtype=np.bool_)
        self.complete = np.zeros(self.num_envs, dtype=np.bool_)
        self.finish_step = np.zeros(self.num_envs, dtype=np.int64)

    def _blocking_reset(self, task_ids: list[int], trial_ids: list[int]) -> list[dict[str, Any]]:
        n = len(task_ids)
        if n > self.num_envs:
            raise ValueError(f"{n} tasks for {self.num_envs} envs")
        # A (task, trial) pair is one seed, so the same pair replays the same initial state.
        seeds = [int(t) * 100_003 + int(r) for t, r in zip(task_ids, trial_ids)]
        self.sessions.reset(list(range(n)), seeds)
        records = []
        for i in range(n):
            obs = self.sessions.last_obs[i]
            self.task_ids[i] = int(task_ids[i])
            self.steps[i] = 0
            self.active[i] = True
            self.complete[i] = False
            self.finish_step[i] = 0
            libero = _libero_obs(self.mapper, obs)
            records.append(
                {
                    "type": "init",
                    "obs": libero,
                    "task_description": self.mapper.task(obs, default=self.env_name),
                    "valid_images": [] if libero["agentview_image"] is None else [libero["agentview_image"]],
                    "task_file_name": f"{self.env_name}_task_{task_ids[i]}_trial_{trial_ids[i]}",
                    "active": True,
                    "complete": False,
                    "finish_step": 0,
                }
            )
        return records

    def _blocking_step(self, data: dict[str, Any]) -> list[dict[str, Any] | None]:
        """Steps the listed envs; like siiRL's ``LIBEROAdapter``, ``actions`` rows and the returned list are indexed by env id.

        ``EmbodiedHFRollout`` passes the model's actions for every env (``[B, C, A]``) with the ids
        of the still-active envs in ``indices``, and reads ``results[env_id]``; envs not listed get
        ``None`` and are not stepped.
        """
        indices = sorted({int(i) for i in data["indices"]})
        actions = np.asarray(data["actions"])
        if actions.ndim == 2:
            actions = actions[:, None, :]
        if indices and (indices[-1] >= self.num_envs or indices[-1] >= actions.shape[0]):
            raise ValueError(f"env index {indices[-1]} is out of range: {self.num_envs} envs, actions for {actions.shape[0]}")
        chunk = np.zeros((self.num_envs, *actions.shape[1:]), dtype=actions.dtype)
        chunk[indices] = actions[indices]
        # Envs not listed are treated as done for this call so they are not stepped.
        saved_done = self.sessions.done.copy()
        listed = np.zeros(self.num_envs, dtype=np.bool_)
        listed[indices] = True
        self.sessions.done |= ~listed
        obs_list, rewards, terms, truncs, _ = self.sessions.chunk_step(chunk)
        self.sessions.done = np.where(listed, self.sessions.done, saved_done)
        results: list[dict[str, Any] | None] = [None] * actions.shape[0]
        for i in indices:
            taken = actions.shape[1]
            ended_at = np.flatnonzero(terms[i] | truncs[i])
            self.steps[i] += taken if not len(ended_at) else int(ended_at[0]) + 1
            if terms[i].any():
                self.complete[i] = True
            if terms[i].any() or truncs[i].any() or self.steps[i] >= self.max_steps:
                self.active[i] = False
                self.finish_step[i] = self.steps[i]
            frames = [_libero_obs(self.mapper, step_obs[i])["agentview_image"] for step_obs in obs_list]
            libero = _libero_obs(self.mapper, self.sessions.last_obs[i])
            results[i] = {
                "type": "step",
                "obs": libero,
                "active": bool(self.active[i]),
                "complete": bool(self.complete[i]),
                "finish_step": int(self.finish_step[i]),
                "valid_images": [f for f in frames if f is not None],
            }
        return results

    def close(self) -> None:
        self.sessions.close()


def register(adapter_cls: type = GymwireLIBEROAdapter) -> bool:
    """Replaces ``LIBEROAdapter`` where siiRL's embodied rollout looks it up; False when siiRL is absent."""
    import importlib

    patched = False
    for mod_name in ("siirl.engine.rollout.embodied_rollout", "siirl.environment.embodied"):
        try:
            mod = importlib.import_module(mod_name)
        except SystemExit as e:
            # siiRL's LIBERO adapter calls exit() at import when LIBERO is missing; that must not end the caller.
            raise ImportError(f"{mod_name} exited while importing (siiRL's LIBERO adapter exits when LIBERO is not installed): exit code {e.code}") from None
        except Exception:  # noqa: BLE001 - siiRL needs its GPU stack to import
            continue
        if hasattr(mod, "LIBEROAdapter"):
            mod.LIBEROAdapter = adapter_cls
            patched = True
    return patched


class GymwireTextEnv:
    """A gymwire env as siiRL's multi-agent env: text actions in, text observations out.

    Built as ``Class()`` per request; settings from :func:`configure` or ``GYMWIRE_URL`` /
    ``GYMWIRE_ENV_ID``. The last agent's action is parsed as JSON and sent to ``step``; each agent
    gets the new observation as JSON text. ``ground_truth`` may carry ``{"seed": ...}`` for the reset.
    """

    def __init__(self) -> None:
        from ..tools import ToolEnvironment

        url = env_setting(_SETTINGS.get("url"), "GYMWIRE_URL", "gymwire server URL")
        env_id = env_setting(_SETTINGS.get("env_id"), "GYMWIRE_ENV_ID", "gymwire env id")
        self.env = ToolEnvironment(url, env_id, _SETTINGS.get("env_kwargs") or {})
        self.started = False
        self.total = 0.0

    async def step(self, actions: list[str], ground_truth: Any = None) -> tuple[list[str], float, bool]:
        if not self.started:
            await self.env.ainitialize()
            seed = ground_truth.get("seed") if isinstance(ground_truth, dict) else None
            await self.env.aexecute("reset", {"seed": seed})
            self.started = True
        text = (actions[-1] if actions else "").strip()
        try:
            action = json.loads(text)
            result = await self.env.aexecute("step", {"action": action})
        except Exception as err:  # noqa: BLE001 - the agents see why the action failed and the episode goes on
            return [json.dumps({"error": str(err)})] * max(1, len(actions)), 0.0, False
        reward = float(result["reward"])
        self.total += reward
        stop = bool(result["terminated"] or result["truncated"])
        if stop:
            await self.env.aclose()
        obs_text = json.dumps(to_jsonable({"obs": result["obs"], "info": result["info"]}))
        return [obs_text] * max(1, len(actions)), reward, stop
