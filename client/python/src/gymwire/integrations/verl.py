"""verl: the VLA env class for ``EnvManager``, an ``AgentLoopBase`` for tool-calling agents, and a ``BaseTool``.

- :class:`RemoteGymEnv` is what ``verl.experimental.vla``'s ``EnvManager(cfg, rank, world_size,
  env_cls)`` runs in its simulator process: ``chunk_step``, ``reset_envs_to_state_ids``,
  ``get_all_state_ids``, ``get_state``/``load_state``, ``flush_video``, ``close``; everything it
  returns is numpy or torch and plain containers, so it crosses ``mp.Queue``. :func:`register`
  adds ``simulator_type: gymwire`` to ``EnvWorker.init_worker``'s closed switch.
- :class:`GymWSAgentLoop` (registered as ``gym_ws`` when verl is installed) runs one episode per
  sample: the model acts through the env's tools until the episode ends, ``reward_score`` is the return.
- :class:`GymWSTool` exposes one env tool to verl's ``ToolAgentLoop``; since that loop calls
  create/execute/release for every call, env sessions are keyed by ``agent_data.request_id``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tools import ToolEnvironment, env_control_tools, to_jsonable
from ._common import ChunkedSessions, ObsMapper, as_tensor, cfg_get, optional_attr
from ._lifecycle import EpisodeTable, episode_session, owner_key, start_episode

SIMULATOR_TYPE = "gymwire"
_LOG = logging.getLogger(__name__)


class RemoteGymEnv:
    """``env.train.num_envs`` gymwire sessions as verl's VLA simulator (LIBERO-shaped obs)."""

    def __init__(self, cfg: Any, rank: int, world_size: int) -> None:
        self.cfg = cfg
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.num_envs = int(cfg_get(cfg, "num_envs", cfg_get(cfg, "train.num_envs", 1)))
        g = lambda key, default=None: cfg_get(cfg, f"gymwire.{key}", cfg_get(cfg, f"train.gymwire.{key}", default))  # noqa: E731
        self.use_torch = g("use_torch")
        self.num_state_ids = int(g("num_state_ids", 1024))
        self.task_option_key = g("task_option_key")
        self.sessions = ChunkedSessions(str(g("url")), str(g("env_id")), self.num_envs, dict(g("kwargs", {}) or {}), dict(g("client_options", {}) or {}))
        self.mapper = ObsMapper(self.sessions.observation_space, image_key=g("image_key"), state_key=g("state_key"), task_key=g("task_key"))

    def _obs(self, per_env: list[Any]) -> dict[str, Any]:
        images = [self.mapper.image(o) for o in per_env]
        states = [self.mapper.state(o) for o in per_env]
        return {
            "images_and_states": {
                "full_image": None if images[0] is None else as_tensor(np.stack(images).astype(np.uint8, copy=False), self.use_torch),
                "state": None if states[0] is None else as_tensor(np.stack(states), self.use_torch),
            },
            "task_descriptions": [self.mapper.task(o) for o in per_env],
        }

    def chunk_step(self, chunk_actions: Any) -> tuple[dict[str, Any], Any, Any, Any, dict[str, Any]]:
        """``[N, C, A]`` (already gripper-normalised) -> (obs after the chunk, rews, terms, truncs ``[N, C]``, infos)."""
        actions = np.asarray(chunk_actions.detach().cpu().numpy() if hasattr(chunk_actions, "detach") else chunk_actions)
        obs_list, rewards, terms, truncs, info_list = self.sessions.chunk_step(actions)
        infos = {"episode_return": self.sessions.returns.astype(np.float32), "elapsed_steps": self.sessions.elapsed.copy(), "sub_step_infos": info_list}
        return self._obs(obs_list[-1]), as_tensor(rewards, self.use_torch), as_tensor(terms, self.use_torch), as_tensor(truncs, self.use_torch), infos

    def reset_envs_to_state_ids(self, state_ids_list: Any, task_ids_list: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Resets every env: state id i seeds env i; a task id goes in reset options under ``gymwire.task_option_key`` when set."""
        state_ids = [int(s) for s in np.asarray(state_ids_list).reshape(-1)]
        task_ids = [int(t) for t in np.asarray(task_ids_list).reshape(-1)]
        if len(state_ids) != self.num_envs:
            raise ValueError(f"got {len(state_ids)} state ids for {self.num_envs} envs")
        if self.task_option_key:
            for i, (s, t) in enumerate(zip(state_ids, task_ids, strict=True)):
                self.sessions.reset([i], [s], {self.task_option_key: t})
        else:
            self.sessions.reset(None, state_ids)
        return self._obs(self.sessions.last_obs), {"state_ids": np.asarray(state_ids), "task_ids": np.asarray(task_ids)}

    def get_all_state_ids(self) -> np.ndarray:
        return np.arange(self.num_state_ids, dtype=np.int64)

    def get_state(self) -> bytes:
        return self.sessions.get_state()

    def load_state(self, buf: bytes) -> None:
        self.sessions.load_state(buf)

    def flush_video(self, video_sub_dir: str | None = None) -> None:
        return None

    def close(self) -> None:
        self.sessions.close()


def register(simulator_type: str = SIMULATOR_TYPE, env_cls: type = RemoteGymEnv) -> bool:
    """Makes ``EnvWorker.init_worker`` accept ``simulator_type: gymwire``; returns False without verl.

    ``init_worker`` picks the env class from a hard-coded ``{"libero", "isaac"}`` switch; the patch
    runs it with ``libero`` selected and then swaps in ``env_cls`` for every ``EnvManager`` it built,
    so the rest of its set-up (stage count, queues) is verl's own.
    """
    EnvWorker = optional_attr("verl.experimental.vla.workers.env.env_worker", "EnvWorker")
    if EnvWorker is None:
        return False
    original = EnvWorker.init_worker
    if getattr(original, "__gymwire__", False):
        return True

    def init_worker(self: Any, *args: Any, **kwargs: Any) -> Any:
        train = cfg_get(self.cfg, "train") if hasattr(self, "cfg") else None
        if cfg_get(train, "simulator_type") != simulator_type:
            return original(self, *args, **kwargs)
        train.simulator_type = "libero"
        try:
            result = original(self, *args, **kwargs)
        finally:
            train.simulator_type = simulator_type
        for manager in getattr(self, "simulator_list", []) or []:
            manager.env_cls = env_cls
        return result

    init_worker.__gymwire__ = True  # type: ignore[attr-defined]
    EnvWorker.init_worker = init_worker
    return True


# ---------------------------------------------------------------------------------------------
# Agent loop

_AgentLoopBase = optional_attr("verl.experimental.agent_loop.agent_loop", "AgentLoopBase") or object
_AgentLoopOutput = optional_attr("verl.experimental.agent_loop.agent_loop", "AgentLoopOutput")


@dataclass
class AgentLoopOutputStandIn:
    """The fields of verl's ``AgentLoopOutput`` (used when verl is not installed)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None = None
    multi_modal_data: dict[str, Any] | None = None
    reward_score: float | None = None
    num_turns: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    extra_fields: dict[str, Any] = field(default_factory=dict)


TOOL_CALL_RE = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def parse_tool_calls(text: str) -> list[dict[str, Any]]:
    """Hermes/Qwen-style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks."""
    calls = []
    for m in TOOL_CALL_RE.finditer(text):
        try:
            obj = json.loads(m.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "name" in obj:
            args = obj.get("arguments") or {}
            calls.append({"name": obj["name"], "arguments": json.loads(args) if isinstance(args, str) else args})
    return calls


def token_ids(encoded: Any) -> list[int]:
    """Token ids from ``apply_chat_template``/``encode`` on transformers 4 (a list) or 5 (a ``BatchEncoding``)."""
    if hasattr(encoded, "keys") and "input_ids" in encoded.keys():
        encoded = encoded["input_ids"]
    if hasattr(encoded, "tolist"):
        encoded = encoded.tolist()
    encoded = list(encoded)
    if encoded and isinstance(encoded[0], (list, tuple)):
        if len(encoded) != 1:
            raise ValueError(f"expected the token ids of one conversation, got a batch of {len(encoded)}")
        encoded = list(encoded[0])
    return [int(t) for t in encoded]


def verl_tool_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool schema in the shape verl's loaders accept, with nothing the model needs lost.

    Zero-argument tools get ``properties: {}`` and ``required: []`` (older verl rejects them without);
    verl's property model keeps only ``type``/``description``/``enum``, so array ``items`` and numeric
    bounds are also written into the description the model reads.
    """
    out = json.loads(json.dumps(schema))
    params = out["function"].setdefault("parameters", {})
    params.setdefault("type", "object")
    props = params.setdefault("properties", {})
    params.setdefault("required", [])
    for prop in props.values():
        notes = []
        if "items" in prop:
            notes.append(f"items: {json.dumps(prop['items'], separators=(',', ':'))}")
        for key in ("minimum", "maximum", "minItems", "maxItems"):
            if key in prop:
                notes.append(f"{key} {prop[key]}")
        # Only what the description lacks: a schema that already went through here comes out the same.
        notes = [note for note in notes if note not in (prop.get("description") or "")]
        if notes:
            prop["description"] = "; ".join(filter(None, [prop.get("description"), *notes]))
        prop.setdefault("type", "object")
    return out


class GymWSAgentLoop(_AgentLoopBase):  # type: ignore[misc,valid-type]
    """An episode of a gymwire env per sample, the model acting through the env's tools.

    verl builds it from the ``agent_loop_config_path`` YAML entry (``_target_`` plus extra keys as
    keyword arguments: ``gymwire_url``, ``env_id``, ``max_turns``) with its own keyword arguments.
    Per sample (dataset columns, or the same under ``extra_info``): ``gymwire_url``, ``env_id``,
    ``env_kwargs``, ``seed``. The prompt is the dataset's ``raw_prompt`` plus the first observation;
    tool results go back as ``tool`` messages (response_mask 0). A failed tool call (a wrong action,
    say) goes back to the model as an error message, is logged as a warning and is listed in the
    output's ``extra_fields["tool_errors"]``. The session is always closed.
    """

    def __init__(
        self,
        trainer_config: Any,
        server_manager: Any,
        tokenizer: Any,
        processor: Any = None,
        dataset_cls: Any = None,
        data_config: Any = None,
        hf_model_type: str | None = None,
        *,
        max_turns: int | None = None,
        gymwire_url: str | None = None,
        env_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        data_config = data_config if data_config is not None else kwargs.pop("dataset_config", None)
        if _AgentLoopBase is not object:
            super().__init__(
                trainer_config=trainer_config,
                server_manager=server_manager,
                tokenizer=tokenizer,
                processor=processor,
                dataset_cls=dataset_cls,
                data_config=data_config,
                hf_model_type=hf_model_type,
                **kwargs,
            )
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.processor = processor
        root = getattr(trainer_config, "config", trainer_config)
        self.max_turns = int(max_turns or cfg_get(root, "gymwire.max_turns", 16))
        self.default_url = gymwire_url or cfg_get(root, "gymwire.url") or os.environ.get("GYMWIRE_URL")
        self.default_env_id = env_id or cfg_get(root, "gymwire.env_id") or os.environ.get("GYMWIRE_ENV_ID")

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        extra = kwargs.get("extra_info") or {}
        url = kwargs.get("gymwire_url") or extra.get("gymwire_url") or self.default_url
        env_id = kwargs.get("env_id") or extra.get("env_id") or self.default_env_id
        if not url or not env_id:
            raise ValueError("gymwire agent loop: no server url or env id (set gymwire_url/env_id in the agent loop config or the sample)")
        seed = kwargs.get("seed", extra.get("seed"))
        # The whole trajectory runs in this call: the session lives exactly as long as it (closed on errors too).
        async with episode_session(url, env_id, kwargs.get("env_kwargs") or extra.get("env_kwargs") or {}, seed=seed) as episode:
            return await self._episode(episode, sampling_params, kwargs)

    async def _episode(self, episode: Any, sampling_params: dict[str, Any], kwargs: dict[str, Any]) -> Any:
        tools = [verl_tool_schema(t) for t in episode.env.list_tools() if t["function"]["name"] not in ("reset", "env_reset")]
        obs, info = episode.first
        first = json.dumps({"observation": to_jsonable(obs), "info": to_jsonable(info)})
        messages = list(kwargs.get("raw_prompt") or []) + [{"role": "user", "content": first}]
        prompt_ids = token_ids(self.tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True))
        response_ids: list[int] = []
        response_mask: list[int] = []
        logprobs: list[float] = []
        turns = 0
        tool_errors: list[str] = []
        request_id = uuid.uuid4().hex
        while turns < self.max_turns and not episode.done:
            out = await self.server_manager.generate(request_id, prompt_ids=prompt_ids + response_ids, sampling_params=sampling_params)
            response_ids += list(out.token_ids)
            response_mask += [1] * len(out.token_ids)
            logprobs += list(out.log_probs or [0.0] * len(out.token_ids))
            turns += 1
            calls = parse_tool_calls(self.tokenizer.decode(out.token_ids, skip_special_tokens=False))
            if not calls:
                break
            tool_msgs = []
            for call in calls:
                try:
                    result = await episode.execute(call["name"], call["arguments"])
                except Exception as err:  # noqa: BLE001 - the model sees the server's message and may correct itself
                    result = {"error": str(err)}
                    # The trainer's log and the batch say so too: a policy that only sends bad calls must not look like a plain zero return.
                    tool_errors.append(f"{call['name']}: {err}")
                    _LOG.warning("gymwire agent loop: tool call %s(%s) failed: %s", call["name"], json.dumps(call["arguments"])[:200], err)
                tool_msgs.append({"role": "tool", "content": json.dumps(result)})
            tool_ids = self._tool_tokens(tool_msgs)
            response_ids += tool_ids
            response_mask += [0] * len(tool_ids)
            logprobs += [0.0] * len(tool_ids)
        cls = _AgentLoopOutput or AgentLoopOutputStandIn
        fields = dict(
            prompt_ids=prompt_ids,
            response_ids=response_ids,
            response_mask=response_mask,
            response_logprobs=logprobs,
            reward_score=episode.episode_return,
            num_turns=turns * 2,
            extra_fields={"episode_return": episode.episode_return, "done": episode.done, "tool_errors": tool_errors},
        )
        if _AgentLoopOutput is not None:
            fields["metrics"] = {}
        return cls(**fields)

    def _tool_tokens(self, tool_msgs: list[dict[str, Any]]) -> list[int]:
        # Render the tool turn the way the chat template would, minus the shared prefix.
        base = token_ids(self.tokenizer.apply_chat_template([{"role": "user", "content": ""}], add_generation_prompt=False, tokenize=True))
        full = token_ids(self.tokenizer.apply_chat_template([{"role": "user", "content": ""}, *tool_msgs], add_generation_prompt=True, tokenize=True))
        return full[len(base) :]


_agent_loop_registry = optional_attr("verl.experimental.agent_loop.agent_loop", "_agent_loop_registry")
if isinstance(_agent_loop_registry, dict):
    # What verl's @register("gym_ws") does, without replacing an entry that verl already loaded from
    # agent_loop_config_path (importing this module happens while verl instantiates that very entry).
    _agent_loop_registry.setdefault("gym_ws", {"_target_": f"{__name__}.GymWSAgentLoop"})


# ---------------------------------------------------------------------------------------------
# BaseTool

_BaseTool = optional_attr("verl.tools.base_tool", "BaseTool") or object
_ToolResponse = optional_attr("verl.tools.schemas", "ToolResponse")


@dataclass
class ToolResponseStandIn:
    text: str | None = None
    image: Any = None
    video: Any = None


class GymWSTool(_BaseTool):  # type: ignore[misc,valid-type]
    """One gymwire env tool (or ``reset``/``step``) as a verl ``BaseTool``: one session per trajectory.

    ``config``: ``{url, env_id, env_kwargs, seed}``; ``tool_schema``: the OpenAI schema of the
    tool, as ``list_tools`` gives it (``tool_schema.function.name`` picks the env tool).

    verl's ``ToolAgentLoop`` calls ``create``/``execute``/``release`` for every call and never says
    when a trajectory ends, but it hands every call the trajectory's ``AgentData``, which lives exactly
    as long as the trajectory. So that object owns the session (:mod:`._lifecycle`): the first call
    of a trajectory makes the session and resets it (seed from the sample's
    ``tools_kwargs.<tool>.create_kwargs.seed``, else ``config.seed``); every tool of the worker shares
    it; it closes when the episode ends or when verl drops the trajectory. verl's request ids are not
    used as keys: with ``full_determinism`` they are ``det-<index>`` and repeat every batch. Called
    without ``agent_data`` (the bare ``BaseTool`` API), the instance id owns the session and
    ``release`` closes it.
    """

    episodes = EpisodeTable("verl tool")

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        if _BaseTool is not object:
            super().__init__(config, tool_schema)
        self.config = config
        self.tool_schema = tool_schema
        fn = tool_schema["function"] if isinstance(tool_schema, dict) else tool_schema.function
        self.name = fn["name"] if isinstance(fn, dict) else fn.name

    def _owner(self, instance_id: str | None, kwargs: dict[str, Any]) -> tuple[str, Any]:
        agent_data = kwargs.get("agent_data")
        if agent_data is not None:
            return owner_key(agent_data), agent_data
        return str(instance_id), None

    def _seed(self, agent_data: Any) -> Any:
        tools_kwargs = getattr(agent_data, "tools_kwargs", None) or {}
        for name in (self.name, *tools_kwargs):
            create = (tools_kwargs.get(name) or {}).get("create_kwargs") or {}
            if create.get("seed") is not None:
                return create["seed"]
        return self.config.get("seed")

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        instance_id = instance_id or uuid.uuid4().hex
        return instance_id, (_ToolResponse or ToolResponseStandIn)()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[Any, float, dict[str, Any]]:
        key, owner = self._owner(instance_id, kwargs)
        seed = self._seed(owner)
        try:
            episode = await self.episodes.open(
                key, lambda: start_episode(self.config["url"], self.config["env_id"], self.config.get("env_kwargs"), seed=seed), owner=owner
            )
            result = await episode.execute(self.name, parameters)
        except Exception as err:  # noqa: BLE001 - errors go back to the model as text
            # The client keeps the error object a while; without its traceback it no longer holds this frame,
            # whose kwargs hold the trajectory that owns the session (it must be free to be collected).
            err.__traceback__ = None
            _LOG.warning("gymwire tool %s(%s) failed: %s", self.name, json.dumps(parameters, default=str)[:200], str(err))
            return (_ToolResponse or ToolResponseStandIn)(text=json.dumps({"error": str(err)})), 0.0, {"error": True}
        reward = float(result.get("reward", 0.0)) if isinstance(result, dict) else 0.0
        metrics: dict[str, Any] = {"episode_return": episode.episode_return}
        if episode.done:
            await self.episodes.close(key)
            metrics["episode_done"] = True
        return (_ToolResponse or ToolResponseStandIn)(text=json.dumps(result)), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The trajectory's return, to the first tool that asks: summed over tools, it counts once."""
        return self.episodes.claim_return(self._owner(instance_id, kwargs)[0])

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        # verl releases after every call (without agent_data): that ends only a session the instance id owns.
        if kwargs.get("agent_data") is None:
            await self.episodes.close(str(instance_id))

    @staticmethod
    def tool_config(url: str, env_id: str, schemas: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
        """The ``tools:`` YAML entries (as data) for every schema, for ``multi_turn.tool_config_path``."""
        return {
            "tools": [
                {
                    "class_name": f"{__name__}.GymWSTool",
                    "config": {"type": "native", "url": url, "env_id": env_id, **config},
                    "tool_schema": verl_tool_schema(s),
                }
                for s in schemas
            ]
        }


def env_tool_schemas(remote: Any) -> list[dict[str, Any]]:
    """The env's tools plus ``reset``/``step`` as OpenAI schemas in verl's accepted shape (for :meth:`GymWSTool.tool_config`)."""
    return [verl_tool_schema(s) for s in env_control_tools(remote)]


async def fetch_env_tool_schemas(url: str, env_id: str, kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """:func:`env_tool_schemas` of ``env_id`` (made with ``kwargs``) on the server at ``url``: opens a session to read its tools, then closes it."""
    env = ToolEnvironment(url, env_id, kwargs)
    await env.ainitialize()
    try:
        return env_tool_schemas(env.remote)
    finally:
        await env.aclose()


def dataset_to_verl(ds: Any) -> dict[str, Any]:
    """A recorded dataset as verl VLA rollout arrays ``[bs, steps, ...]`` (bs = episodes).

    Keys: ``full_image`` / ``state`` (when the observation has them), ``action``, ``rews``,
    ``terminations``, ``truncations``, ``complete`` (the episode terminated), ``response_mask``
    (real steps), ``old_log_probs``, ``values``, ``env_state_id`` (the episode's seed, -1 if none).
    """
    from ..dataset import episodes_to_arrays

    a = episodes_to_arrays(ds)
    mapper = ObsMapper(ds.observation_space)
    out: dict[str, Any] = {}
    for target, key in (("full_image", mapper.image_key), ("state", mapper.state_key)):
        if key is not None:
            col = a.get("obs" if key == "" else f"obs.{key}")
            if col is not None:
                out[target] = col
    seeds = {int(e): s for e, s in zip(ds.episodes.column("episode_id").to_pylist(), ds.episodes.column("seed").to_pylist(), strict=True)}
    out.update(
        action=a.get("actions"),
        rews=a["rewards"],
        terminations=a["terminated"],
        truncations=a["truncated"],
        complete=a["terminated"].any(axis=1),
        response_mask=a["mask"],
        old_log_probs=a["log_probs"],
        values=a["values"],
        env_state_id=np.array([-1 if seeds.get(int(e)) is None else seeds[int(e)] for e in a["episode_ids"]], dtype=np.int64),
    )
    return out
