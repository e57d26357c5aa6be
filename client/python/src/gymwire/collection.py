"""The collection engine behind :func:`gymwire.collect`: sessions in groups, policy compute overlapped with stepping.

The sessions of the env are split into ``groups`` (default 2) that take turns, round robin: while
the policy computes one group's actions, the other groups' ``step_batch`` requests are on the wire
and their envs are stepping on the server, so neither waits on the other. ``groups=1`` is plain
lock-step. The policy is called in a fixed order (group 0, 1, ..., 0, ...), so a seeded policy
draws its random numbers in the same order on every run.

Episodes are unbiased: at most ``episodes`` episodes are started (the first ones on sessions
``0..episodes-1``, the next ones wherever an episode ends, in a fixed order) and every started
episode runs to its end; a session whose episode ends once enough have started goes idle. Which
episodes start never depends on how long they turn out to be, so means over the dataset are
unbiased. Only a ``max_steps`` cut ends episodes early: they are kept and marked ``incomplete``.

Sessions are stepped with ``step_batch`` in same-step autoreset mode whatever the env's own mode:
the row that ends an episode carries that episode's own terminal info (``final_info``) and final
observation, and the next episode starts on the reset observation of the same reply. This mirrors
the TypeScript rollout engine (client/ts/rollout/engine.ts).
"""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from . import errors as E
from .client import Client
from .dataset import EpisodeRecord, StepRecord
from .env import GymwireEnv, RemoteSession
from .formats import open_writer
from .policies import ActContext, Policy, PolicyOutput, context_caller, notify_episode_start
from .spaces import value_from_wire
from .vector import GymwireVectorEnv, RemoteVector, vector_seeds


@dataclass
class _Slot:
    """One session: its latest observation and info, and the episode it runs (None when idle)."""

    index: int
    session_id: str
    obs: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    episode: EpisodeRecord | None = None
    starts_episode: bool = False
    session_step: int = 0


class CollectionEngine:
    """Runs one collection; made and run by :func:`gymwire.collect`."""

    def __init__(
        self,
        *,
        client: Client,
        remote_envs: list[RemoteSession],
        server: str,
        policy: Any,
        episodes: int,
        seed: int | None,
        max_steps: int,
        groups: int,
        record: Callable[[EpisodeRecord], None],
        progress: Any,
    ) -> None:
        if episodes <= 0:
            raise ValueError("episodes must be positive")
        self.client = client
        self.server = server
        self.policy = policy
        self.act = context_caller(policy)
        self.episodes = episodes
        self.seed = seed
        self.max_steps = max_steps
        self.record = record
        self.progress = progress
        self.remote_envs = remote_envs
        self.single_observation_space = remote_envs[0].observation_space
        self.single_action_space = remote_envs[0].action_space
        self.slots = [_Slot(i, e.session_id) for i, e in enumerate(remote_envs)]
        n_groups = max(1, min(groups, len(self.slots)))
        self.groups = [[s for s in self.slots if s.index % n_groups == g] for g in range(n_groups)]
        self._helpers: dict[tuple[int, ...], RemoteVector] = {}
        self.started = 0
        self.steps = 0

    # -------------------------------------------------------------------------------------------

    def _helper(self, slots: list[_Slot]) -> RemoteVector:
        """These sessions as a vector, for its wire conversions of batched actions and observations."""
        key = tuple(s.index for s in slots)
        helper = self._helpers.get(key)
        if helper is None:
            helper = RemoteVector([self.remote_envs[i] for i in key], autoreset_mode="same_step")
            self._helpers[key] = helper
        return helper

    def _submit(self, type: str, fields: dict[str, Any]) -> concurrent.futures.Future[Any]:
        """Sends a request without waiting for its answer.

        The socket transport's blocking requests run in the engine's own threads (one per group; the
        client is safe from any thread and pipelines them); the asyncio transport's hand theirs to its loop and wait.
        """
        return self._senders.submit(self.client.request, type, fields)

    def _begin(self, slot: _Slot, obs: Any, info: dict[str, Any], seed: int | None) -> None:
        slot.obs, slot.info = obs, info
        slot.episode = EpisodeRecord(slot.session_id, self.server, seed, episode_id=self.started)
        slot.starts_episode = True
        self.started += 1
        notify_episode_start(self.policy, slot.index, slot.session_id, info)

    def _end(self, slot: _Slot, status: str, reason: str | None = None) -> None:
        ep = slot.episode
        slot.episode = None
        ep.status, ep.reason = status, reason
        if ep.steps:
            self.record(ep)
            if self.progress is not None:
                self.progress(1)

    # -------------------------------------------------------------------------------------------

    def run(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(self.groups), thread_name_prefix="gymwire-collect") as senders:
            self._senders = senders
            self._run()

    def _run(self) -> None:
        wanted = self.slots[: min(len(self.slots), self.episodes)]
        every_seed = vector_seeds(self.seed, len(self.slots))
        seeds = [None if every_seed is None else every_seed[s.index] for s in wanted]
        r = self._submit("reset_batch", {"session_ids": [s.session_id for s in wanted], "seeds": seeds, "options": None}).result()
        helper = self._helper(wanted)
        obs_items = list(iterate(helper.observation_space, helper.batch_obs(r["obs"], len(wanted))))
        for slot, obs, info, s in zip(wanted, obs_items, r["infos"], seeds, strict=True):
            self._begin(slot, obs, dict(info or {}), s)
        try:
            self._drive()
        finally:
            # A max_steps cut, a policy error or an action the env refuses: running episodes are kept, marked.
            for slot in self.slots:
                if slot.episode is not None:
                    self._end(slot, "incomplete", "max_steps reached" if self.steps >= self.max_steps else "collection stopped by an error")

    def _drive(self) -> None:
        in_flight: list[tuple[list[_Slot], PolicyOutput, list[Any], concurrent.futures.Future[Any]] | None] = [None] * len(self.groups)

        def launch(g: int, stepped: list[_Slot] | None = None, stepped_obs: Any = None) -> None:
            live = [s for s in self.groups[g] if s.episode is not None]
            if not live or self.steps >= self.max_steps:
                in_flight[g] = None
                return
            helper = self._helper(live)
            # The reply's batch already holds every live session's next observation (a restarted
            # one's reset observation) unless a session went idle.
            obs_b = stepped_obs if stepped == live else self._stack_obs(live)
            ctx = ActContext(
                session_ids=[s.session_id for s in live],
                infos=[s.info for s in live],
                episode_starts=np.array([s.starts_episode for s in live], dtype=np.bool_),
            )
            out = self.act(obs_b, ctx)
            actions = list(iterate(helper.action_space, out.actions))
            fut = self._submit(
                "step_batch",
                {"session_ids": ctx.session_ids, "actions": helper.actions_to_wire(out.actions), "autoreset_mode": "same_step"},
            )
            self.steps += len(live)
            in_flight[g] = (live, out, actions, fut)

        for g in range(len(self.groups)):
            launch(g)
        while any(f is not None for f in in_flight):
            for g in range(len(self.groups)):
                pending = in_flight[g]
                if pending is None:
                    continue
                live, out, actions, fut = pending
                launch(g, live, self._absorb(live, out, actions, fut.result()))

    def _stack_obs(self, live: list[_Slot]) -> Any:
        space = self.single_observation_space
        return concatenate(space, [s.obs for s in live], create_empty_array(space, len(live)))

    def _absorb(self, live: list[_Slot], out: PolicyOutput, actions: list[Any], r: dict[str, Any]) -> Any:
        """Records one step of these sessions; returns the reply's batched observations."""
        for i, err in enumerate(r.get("errors") or []):
            if err:
                s = live[i]
                raise E.server_error({"code": err["code"], "message": f"session {s.session_id}: {err['message']}", "details": {"index": s.index}})
        helper = self._helper(live)
        obs_b = helper.batch_obs(r["obs"], len(live))
        obs_items = list(iterate(helper.observation_space, obs_b))
        rewards = np.asarray(r["rewards"], dtype=np.float64)
        terms = np.asarray(r["terminated"], dtype=np.bool_)
        truncs = np.asarray(r["truncated"], dtype=np.bool_)
        log_probs = None if out.log_probs is None else np.asarray(out.log_probs, dtype=np.float64).reshape(-1)
        values = None if out.values is None else np.asarray(out.values, dtype=np.float64).reshape(-1)
        extras = {name: np.asarray(rows) for name, rows in (out.extras or {}).items()}
        for j, slot in enumerate(live):
            info = r["infos"][j] or {}
            ended = bool(terms[j] or truncs[j])
            row_info = (info.get("final_info") or {}) if ended else info
            slot.episode.steps.append(
                StepRecord(
                    obs=slot.obs,
                    action=actions[j],
                    reward=float(rewards[j]),
                    terminated=bool(terms[j]),
                    truncated=bool(truncs[j]),
                    info=row_info,
                    session_step=slot.session_step,
                    log_prob=None if log_probs is None else float(log_probs[j]),
                    value=None if values is None else float(values[j]),
                    final_obs=value_from_wire(self.single_observation_space, info["final_obs"]) if ended and "final_obs" in info else None,
                    extras={name: rows[j] for name, rows in extras.items()},
                )
            )
            slot.session_step += 1
            slot.starts_episode = False
            if ended:
                self._end(slot, "terminated" if terms[j] else "truncated")
                if self.started < self.episodes:
                    reset_info = {k: v for k, v in info.items() if k not in ("final_obs", "final_info")}
                    self._begin(slot, obs_items[j], reset_info, None)
            else:
                slot.obs, slot.info = obs_items[j], info
        return obs_b


def _policy_name(policy: Any) -> str:
    return getattr(policy, "name", None) or type(policy).__name__


def collect(
    env: Any,
    policy: Policy,
    episodes: int,
    out_dir: str | Path | None = None,
    *,
    seed: int | None = None,
    max_steps: int = 1_000_000,
    groups: int = 2,
    progress: Any = "auto",
    overwrite: bool = False,
    format: str = "arrow",
    fps: int | None = None,
    dataset_id: str | None = None,
) -> dict[str, Any] | list[EpisodeRecord]:
    """Runs ``policy`` on ``env``'s sessions for ``episodes`` whole episodes and records them.

    ``env`` is a :class:`GymwireEnv` (one session) or a :class:`GymwireVectorEnv` in any autoreset
    mode. Exactly ``episodes`` episodes are started (session ``i``'s first one reset with
    ``seed + i``) and each runs to its end, so returns and lengths over the dataset are unbiased;
    sessions idle once enough episodes have started. Only ``max_steps`` (env steps in all) cuts
    episodes short: they are kept with status ``incomplete`` and reason ``"max_steps reached"``.
    Every row keeps its own step's info; an episode's last row has its terminal info (metrics such
    as NAVSIM's ``pdms`` or Bench2Drive's ``driving_score``) and ``final_obs``.

    The policy gets an :class:`~gymwire.policies.ActContext` when its ``act`` takes one, and its
    ``episode_start`` hook is called as each episode starts; ``PolicyOutput.extras`` are stored as
    ``extras/<name>`` columns. The sessions are stepped in ``groups`` that take turns, so the
    policy computes one group's actions while the server steps another's (``groups=1``: lock-step).
    Collection leaves the env's sessions mid-episode: reset the env before stepping it yourself.

    With ``out_dir`` the episodes are written there and the manifest is returned; without, the
    :class:`EpisodeRecord` list is. ``progress`` is called with 1 after each finished episode (a
    ``tqdm.update``-like callable); the default, ``"auto"``, shows a tqdm bar of episodes when
    stderr is a terminal and tqdm is installed; ``None`` shows nothing. ``overwrite`` replaces a
    dataset already in ``out_dir``.

    ``format`` chooses what ``out_dir`` holds: ``"arrow"`` (this module's format), ``"lerobot"`` (a
    LeRobot dataset; ``fps`` and the repo id ``dataset_id`` are optional) or ``"minari"`` (a Minari
    dataset; ``out_dir`` ends with its ``dataset_id``). See :mod:`gymwire.formats` and docs/datasets.md.
    """
    if isinstance(env, GymwireEnv):
        client, remote_envs = env.client, [env.remote]
    elif isinstance(env, GymwireVectorEnv):
        client, remote_envs = env.client, env.remote.envs
    else:
        raise TypeError(f"collect takes a GymwireEnv or GymwireVectorEnv, got {type(env).__name__}")
    server = client.url
    first = remote_envs[0]
    writer = (
        open_writer(format, out_dir, first.env_id, first.observation_space, first.action_space, overwrite=overwrite, fps=fps, dataset_id=dataset_id)
        if out_dir is not None
        else None
    )
    done: list[EpisodeRecord] = []
    bar = _auto_progress(episodes, out_dir) if progress == "auto" else None
    if bar is not None:
        progress = bar.update
    elif progress == "auto":
        progress = None
    engine = CollectionEngine(
        client=client,
        remote_envs=remote_envs,
        server=server,
        policy=policy,
        episodes=episodes,
        seed=seed,
        max_steps=max_steps,
        groups=groups,
        record=writer.add if writer is not None else done.append,
        progress=progress,
    )
    try:
        engine.run()
    finally:
        if bar is not None:
            bar.close()
        # Also after an error: the episodes recorded so far (the cut ones marked incomplete) stay readable.
        manifest = writer.close(_policy_name(policy)) if writer is not None else None
    return manifest if manifest is not None else done


def _auto_progress(episodes: int, out_dir: str | Path | None) -> Any:
    """A tqdm bar of episodes for a person watching a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=episodes, desc=f"collecting into {out_dir}" if out_dir is not None else "collecting", unit="episode")
