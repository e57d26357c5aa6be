"""Small stand-ins for the frameworks' runtime objects (tokenizers, inference engines, model servers)."""

from __future__ import annotations

import json
import types
from dataclasses import dataclass, field
from typing import Any


class CharTokenizer:
    """One token per character (its code point): enough to check masks and lengths exactly."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in ids)

    def apply_chat_template(self, messages: list[dict[str, Any]], tools: Any = None, add_generation_prompt: bool = False, tokenize: bool = True) -> list[int]:
        text = "".join(f"<{m['role']}>{m.get('content', '')}</{m['role']}>" for m in messages)
        if add_generation_prompt:
            text += "<assistant>"
        return self.encode(text)


@dataclass
class FakeResponse:
    output_tokens: list[int]
    output_logprobs: list[float]
    output_versions: list[int]
    stop_reason: str = "stop"


@dataclass
class ScriptedEngine:
    """An AReaL InferenceEngine whose completions come from a list (the last one repeats)."""

    replies: list[str]
    version: int = 3
    requests: list[Any] = field(default_factory=list)

    async def agenerate(self, req: Any) -> FakeResponse:
        self.requests.append(req)
        text = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        ids = [ord(c) for c in text]
        return FakeResponse(ids, [-0.5] * len(ids), [self.version] * len(ids))


@dataclass
class TokenOutput:
    token_ids: list[int]
    log_probs: list[float] | None = None
    stop_reason: str = "stop"


@dataclass
class ScriptedServerManager:
    """verl's server_manager.generate with scripted text."""

    replies: list[str]
    calls: int = 0

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], image_data: Any = None, video_data: Any = None
    ) -> TokenOutput:
        text = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return TokenOutput([ord(c) for c in text], [-0.25] * len(text))


class ScriptedOpenAI:
    """An AsyncOpenAI-like client whose assistant messages are scripted tool calls."""

    def __init__(self, actions: list[Any], **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.actions = list(actions)
        self.seen_tools: list[Any] = []
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._create))

    async def _create(self, model: str, messages: list[dict[str, Any]], tools: Any = None, **kw: Any) -> Any:
        self.seen_tools.append(tools)
        if not self.actions:
            msg = types.SimpleNamespace(content="done", tool_calls=None)
        else:
            action = self.actions.pop(0)
            call = types.SimpleNamespace(id=f"call_{len(self.actions)}", function=types.SimpleNamespace(name="step", arguments=json.dumps({"action": action})))
            msg = types.SimpleNamespace(content="", tool_calls=[call])
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=msg)])
