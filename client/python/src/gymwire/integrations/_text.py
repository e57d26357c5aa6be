"""Observations as text for language models, and actions read back out of their replies."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ..tools import space_json_schema, to_jsonable

ACTION_RE = re.compile(r"<action>(.*?)</action>", re.S)
# LaTeX answers (siiRL's math envs read the last \boxed{...}); one level of nested braces is enough for JSON arrays.
BOXED_RE = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


def default_render(obs: Any, info: dict[str, Any], turn: int, action_space: gs.Space[Any]) -> str:
    """Observation -> prompt text: the JSON observation (images left out) and the action's JSON Schema."""
    visible = {k: v for k, v in obs.items() if not (isinstance(v, np.ndarray) and v.ndim == 3)} if isinstance(obs, dict) else obs
    schema = json.dumps(space_json_schema(action_space))
    lead = "" if turn == 0 else "\n"
    return f"{lead}Observation: {json.dumps(to_jsonable(visible))}\nReply with the action as JSON matching {schema} inside <action></action>.\n"


def default_parse_action(text: str, action_space: gs.Space[Any]) -> Any:
    """The JSON inside the last ``<action>...</action>`` (else the last ``\\boxed{...}``, else the whole text); ValueError when there is none."""
    found = ACTION_RE.findall(text) or BOXED_RE.findall(text)
    body = (found[-1] if found else text).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as err:
        raise ValueError(f"no JSON action in {text[-200:]!r}") from err
    if isinstance(action_space, gs.Box):
        return np.asarray(value, dtype=action_space.dtype)
    return value


def reply_after(text: str, shown: str | None) -> str:
    """The part of ``text`` after the last copy of ``shown``: the model's reply when a framework hands back prompt plus reply."""
    if shown and shown in text:
        return text.rsplit(shown, 1)[1]
    return text
