"""AReaL: a ``RolloutWorkflow`` that plays a gymwire env turn by turn through ``engine.agenerate``, and an agent ``run()``.

:class:`GymWSWorkflow` renders each observation to text (and an image for VLMs), asks the
inference engine for the next turn, parses the action out of the completion, steps the env over
the WebSocket and appends the tokens: observation tokens with ``loss_mask`` 0, generated tokens
with 1, as ``areal/workflow/multi_turn.py`` does. It returns AReaL's six-key dict, batch
dimension 1. :class:`GymWSAgent` is the ``run(data, **extra_kwargs)`` agent form: an
OpenAI-compatible model acts through the env's tools; its return value is the episode return.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from .. import errors as E
from ..tools import to_jsonable
from ._common import as_tensor, optional_attr
from ._lifecycle import Episode, episode_session
from ._text import ACTION_RE, default_parse_action, default_render

__all__ = ["ACTION_RE", "GymWSAgent", "GymWSWorkflow", "dataset_to_areal", "default_parse_action", "default_render"]

_LOG = logging.getLogger(__name__)
_RolloutWorkflow = optional_attr("areal.api.workflow_api", "RolloutWorkflow") or object
_ModelRequest = optional_attr("areal.api.io_struct", "ModelRequest")


@dataclass
class ModelRequestStandIn:
    """The fields of ``areal.api.io_struct.ModelRequest`` used here (when AReaL is not installed)."""

    rid: str = field(default_factory=lambda: uuid.uuid4().hex)
    input_ids: list[int] = field(default_factory=list)
    gconfig: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tokenizer: Any = None
    image_data: list[str] | None = None
    processor: Any = None
    vision_msg_vllm: Any = None


def _images(obs: Any) -> list[np.ndarray]:
    """The observation's RGB images (uint8 ``[H, W, 3]`` leaves)."""
    return [v for v in (obs.values() if isinstance(obs, dict) else [obs]) if isinstance(v, np.ndarray) and v.dtype == np.uint8 and v.ndim == 3]


def _image_b64(image: np.ndarray) -> str:
    """A PNG file in base64, as AReaL's ``image2base64`` sends images to the inference server."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _encode(tokenizer: Any, text: str) -> list[int]:
    """A turn's tokens without BOS/EOS: every turn after the first continues one sequence."""
    try:
        return list(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:  # a plain tokenizer with encode(text) only
        return list(tokenizer.encode(text))


def _load_processor(path: str) -> Any:
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(path)


def _image_placeholder(processor: Any) -> str:
    """The text that stands for one image: Qwen-VL's ``<|vision_start|><|image_pad|><|vision_end|>``, else the processor's image token."""
    token = getattr(processor, "image_token", None) or "<image>"
    vocab = processor.tokenizer.get_vocab() if hasattr(processor, "tokenizer") else {}
    if "<|vision_start|>" in vocab and "<|vision_end|>" in vocab:
        return f"<|vision_start|>{token}<|vision_end|>"
    return token


def _load_tokenizer(path: str) -> Any:
    """AReaL's own tokenizer loader when AReaL is installed, else transformers'."""
    load = optional_attr("areal.utils.hf_utils", "load_hf_tokenizer")
    if load is not None:
        return load(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _generation_config(gconfig: Any) -> Any:
    """A ``GenerationHyperparameters`` from plain data (workflow_kwargs), when AReaL is installed."""
    if isinstance(gconfig, dict):
        cls = optional_attr("areal.api.cli_args", "GenerationHyperparameters")
        if cls is not None:
            return cls(**gconfig)
    return gconfig


def _stop_at_eos(gconfig: Any, tokenizer: Any) -> Any:
    """Adds the tokenizer's stop and pad token ids (AReaL's ``new_with_stop_and_pad_token_ids``)."""
    add = getattr(gconfig, "new_with_stop_and_pad_token_ids", None)
    return add(tokenizer) if callable(add) and tokenizer is not None else gconfig


class GymWSWorkflow(_RolloutWorkflow):  # type: ignore[misc,valid-type]
    """Multi-turn episodes of a gymwire env as AReaL rollouts.

    ``data`` (one dataset row) may carry ``env_id``, ``env_kwargs`` and ``seed``; the constructor's
    values are the defaults. An action the env refuses becomes an observation telling the model why,
    so it can correct itself on the next turn.
    """

    def __init__(
        self,
        server_url: str,
        gconfig: Any,
        tokenizer: Any,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
        max_turns: int = 32,
        render: Callable[[Any, dict[str, Any], int, gs.Space[Any]], str] = default_render,
        parse_action: Callable[[str, gs.Space[Any]], Any] = default_parse_action,
        send_images: bool = True,
        use_torch: bool | None = None,
        client_options: dict[str, Any] | None = None,
        processor: Any = None,
        image_placeholder: str | None = None,
    ) -> None:
        self.server_url = server_url
        # AReaL's single-controller mode rebuilds a workflow as cls(**workflow_kwargs): the tokenizer
        # arrives as a path string and gconfig may arrive as plain data.
        self.tokenizer = _load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        self.gconfig = _stop_at_eos(_generation_config(gconfig), self.tokenizer)
        self.env_id = env_id
        self.env_kwargs = env_kwargs or {}
        self.max_turns = max_turns
        self.render = render
        self.parse_action = parse_action
        self.send_images = send_images
        self.use_torch = use_torch
        self.client_options = client_options or {}
        # The VLM path: AReaL passes the processor as a path string, like the tokenizer.
        self.processor = _load_processor(processor) if isinstance(processor, str) else processor
        self.image_placeholder = image_placeholder or (_image_placeholder(self.processor) if self.processor is not None else None)

    def _request(self, input_ids: list[int], images: list[str] | None) -> Any:
        gconfig = self.gconfig.new(n_samples=1) if hasattr(self.gconfig, "new") else self.gconfig
        cls = _ModelRequest or ModelRequestStandIn
        extra = {"processor": self.processor} if self.processor is not None else {}
        return cls(rid=uuid.uuid4().hex, input_ids=list(input_ids), gconfig=gconfig, tokenizer=self.tokenizer, image_data=images, **extra)

    def _encode_turn(self, text: str, obs: Any, vision: dict[str, list[Any]]) -> list[int]:
        """The turn's prompt tokens; with a processor and an image, the processor builds them (image tokens included)."""
        frames = _images(obs) if self.processor is not None and self.send_images else []
        if not frames:
            return _encode(self.tokenizer, text)
        from PIL import Image

        pictures = [Image.fromarray(f) for f in frames]
        processed = self.processor(images=pictures, text=[self.image_placeholder * len(pictures) + text], return_tensors="pt")
        for key in ("pixel_values", "image_grid_thw"):
            if key in processed:
                vision.setdefault(key, []).append(processed[key])
        vision.setdefault("images", []).extend(_image_b64(f) for f in frames)
        return [int(i) for i in processed["input_ids"][0].tolist()]

    async def arun_episode(self, engine: Any, data: dict[str, Any]) -> dict[str, Any] | None:
        # The whole trajectory runs in this call: the session lives exactly as long as it (closed on errors too).
        async with episode_session(
            self.server_url,
            data.get("env_id", self.env_id),
            data.get("env_kwargs", self.env_kwargs),
            seed=data.get("seed"),
            options=data.get("options"),
            client_options=self.client_options,
        ) as episode:
            return await self._episode(engine, episode)

    async def _episode(self, engine: Any, episode: Episode) -> dict[str, Any] | None:
        remote = episode.remote
        obs, info = episode.first
        seq: list[int] = []
        loss_mask: list[int] = []
        logprobs: list[float] = []
        versions: list[int] = []
        vision: dict[str, list[Any]] = {}
        text = self.render(obs, info, 0, remote.action_space)
        for turn in range(self.max_turns):
            prompt = self._encode_turn(text, obs, vision)
            seq += prompt
            loss_mask += [0] * len(prompt)
            logprobs += [0.0] * len(prompt)
            versions += [-1] * len(prompt)
            if self.processor is not None:
                images = list(vision.get("images", [])) or None  # every image whose tokens are in seq
            else:
                images = ([_image_b64(f) for f in _images(obs)] or None) if self.send_images else None
            resp = await engine.agenerate(self._request(seq, images))
            out = list(resp.output_tokens)
            seq += out
            loss_mask += [1] * len(out)
            logprobs += list(resp.output_logprobs)
            versions += list(resp.output_versions)
            completion = self.tokenizer.decode(out)
            try:
                action = self.parse_action(completion, remote.action_space)
                obs, reward, terminated, truncated, info = await remote.step(action)
            except (ValueError, E.InvalidActionError) as err:
                reason = getattr(err, "message", str(err))
                # The model reads the reason and may correct itself; the trainer's log says it too, so
                # a policy that only sends bad actions is not a silent zero reward.
                _LOG.warning("gymwire workflow: turn %d's action was refused: %s (the model said %r)", turn, err, completion[:200])
                text = f"\nThat action was refused: {reason}\n" + self.render(obs, info, turn + 1, remote.action_space)
                continue
            episode.record(float(reward), bool(terminated or truncated))
            if episode.done:
                break
            text = self.render(obs, info, turn + 1, remote.action_space)
        if not any(loss_mask):
            return None  # the model never generated: reject the trajectory
        n = len(seq)
        t = lambda a: as_tensor(a, self.use_torch)  # noqa: E731
        out = {
            "input_ids": t(np.asarray(seq, dtype=np.int32).reshape(1, n)),
            "loss_mask": t(np.asarray(loss_mask, dtype=np.int32).reshape(1, n)),
            "logprobs": t(np.asarray(logprobs, dtype=np.float32).reshape(1, n)),
            "versions": t(np.asarray(versions, dtype=np.int32).reshape(1, n)),
            "attention_mask": t(np.ones((1, n), dtype=np.bool_)),
            "rewards": t(np.asarray([episode.episode_return], dtype=np.float32)),
        }
        if vision.get("pixel_values"):
            # AReaL's VLM format (areal/workflow/vision_rlvr.py): one dict per batch row, every turn's images concatenated.
            import torch

            out["multi_modal_input"] = [{key: torch.cat(vision[key], dim=0) for key in ("pixel_values", "image_grid_thw") if vision.get(key)}]
        return out


class GymWSAgent:
    """AReaL's agent form: ``await agent.run(data, base_url=..., api_key=..., http_client=...) -> float``.

    The model (through AReaL's OpenAI-compatible proxy) sees the env's tools (its own plus ``step``)
    and acts until the episode ends or ``max_turns`` model calls; the episode return is the reward.
    """

    def __init__(
        self,
        server_url: str,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
        model: str = "default",
        max_turns: int = 32,
        system_prompt: str | None = None,
        client_factory: Callable[..., Any] | None = None,
    ) -> None:
        self.server_url = server_url
        self.env_id = env_id
        self.env_kwargs = env_kwargs or {}
        self.model = model
        self.max_turns = max_turns
        self.system_prompt = system_prompt or "You control an environment through tools. Call `step` with an action until the episode ends."
        self.client_factory = client_factory

    def _openai(self, extra_kwargs: dict[str, Any]) -> Any:
        if self.client_factory is not None:
            return self.client_factory(**extra_kwargs)
        from openai import AsyncOpenAI

        if "base_url" not in extra_kwargs:
            # AReaL's proxy in "subproc" mode passes no base_url; the OpenAI client reads OPENAI_BASE_URL/OPENAI_API_KEY.
            return AsyncOpenAI()
        return AsyncOpenAI(base_url=extra_kwargs["base_url"], api_key=extra_kwargs.get("api_key"), http_client=extra_kwargs.get("http_client"))

    async def run(self, data: dict[str, Any], **extra_kwargs: Any) -> float:
        client = self._openai(extra_kwargs)
        async with episode_session(self.server_url, data.get("env_id", self.env_id), data.get("env_kwargs", self.env_kwargs), seed=data.get("seed")) as episode:
            obs, info = episode.first
            tools = [t for t in episode.env.list_tools() if t["function"]["name"] not in ("reset", "env_reset")]
            task = {"task": data["prompt"]} if "prompt" in data else {}
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": json.dumps({"observation": to_jsonable(obs), "info": to_jsonable(info), **task})},
            ]
            for _ in range(self.max_turns):
                completion = await client.chat.completions.create(model=self.model, messages=messages, tools=tools)
                msg = completion.choices[0].message
                calls = list(getattr(msg, "tool_calls", None) or [])
                messages.append(
                    {"role": "assistant", "content": msg.content or "", "tool_calls": [_call_dict(c) for c in calls]}
                    if calls
                    else {"role": "assistant", "content": msg.content or ""}
                )
                if not calls:
                    break
                for call in calls:
                    try:
                        result = await episode.execute(call.function.name, call.function.arguments)
                    except E.GymwireError as err:
                        result = {"error": str(err)}
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
                if episode.done:
                    break
            return episode.episode_return


def _call_dict(call: Any) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}


def dataset_to_areal(ds: Any, policy_version: int = 0, use_torch: bool | None = None) -> list[dict[str, Any]]:
    """Recorded episodes as AReaL-style six-key dicts (batch dimension 1), one per episode.

    For non-language envs the "tokens" are the episode's Discrete actions (``input_ids``); every
    step is trained (``loss_mask`` 1), ``logprobs`` are the recorded log-probs, ``versions`` the
    given policy version, ``rewards`` the episode return. Continuous actions are kept under
    ``actions`` ``[1, T, ...]`` (AReaL has no VLA path, see docs/integrations.md).
    """
    from ..dataset import episodes_to_arrays

    a = episodes_to_arrays(ds)
    out = []
    for e, n in enumerate(a["lengths"]):
        n = int(n)
        acts = a["actions"][e, :n]
        ids = acts.astype(np.int32) if acts.ndim == 1 else np.zeros(n, dtype=np.int32)
        t = lambda x: as_tensor(x, use_torch)  # noqa: E731
        row = {
            "input_ids": t(ids.reshape(1, n)),
            "loss_mask": t(np.ones((1, n), dtype=np.int32)),
            "logprobs": t(a["log_probs"][e, :n].astype(np.float32).reshape(1, n)),
            "versions": t(np.full((1, n), policy_version, dtype=np.int32)),
            "attention_mask": t(np.ones((1, n), dtype=np.bool_)),
            "rewards": t(np.asarray([a["returns"][e]], dtype=np.float32)),
        }
        if acts.ndim > 1:
            row["actions"] = t(acts[None])
        out.append(row)
    return out
