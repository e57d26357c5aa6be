"""A tiny local language model's files, built here: no downloads (the framework examples and suites share it).

``build_tokenizer`` trains a byte-level BPE tokenizer with the ``tokenizers`` library on a fixed
corpus (deterministic) and saves it with a Qwen-style chat template; ``build_vision_processor``
adds a Qwen2-VL image processor and its image tokens. ``ScriptedGenerateServer`` stands in for the
inference server (SGLang's ``/generate`` HTTP API): a real LLM engine needs a GPU.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"]


def build_tokenizer(path: Path, corpus: list[str]) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus``, saved to ``path`` (eos ``<|im_end|>``, pad ``<|endoftext|>``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    return fast


def build_vision_processor(path: Path, corpus: list[str]) -> Any:
    """A Qwen2-VL processor (its image processor with small image limits plus the tokenizer above), saved to ``path``."""
    from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

    tokenizer = build_tokenizer(path, corpus)
    images = Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 4)
    videos = Qwen2VLVideoProcessor()
    processor = Qwen2VLProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos, chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(path)
    return processor


class ScriptedGenerateServer:
    """SGLang's ``/health`` and ``/generate`` over loopback HTTP; every completion is ``reply`` then ``tail``.

    ``reply(payload) -> list[int]`` gives the tokens the "model" means to say; ``tail`` follows them
    (an EOS and chatter), as a model that was not told where to stop would go on. Generation stops
    after the first token in ``sampling_params.stop_token_ids`` or at ``max_new_tokens``, as SGLang
    does. Every request payload is kept in ``requests``.
    """

    def __init__(self, reply: Callable[[dict[str, Any]], list[int]], tail: list[int]) -> None:
        self.reply = reply
        self.tail = tail
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._send(200 if self.path == "/health" else 404, {})

            def do_POST(self) -> None:  # noqa: N802
                if self.path != "/generate":
                    self._send(404, {"error": self.path})
                    return
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(payload)
                self._send(200, server.generate(payload))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def generate(self, payload: dict[str, Any]) -> dict[str, Any]:
        params = payload.get("sampling_params") or {}
        stops = set(params.get("stop_token_ids") or [])
        out: list[int] = []
        finish = {"type": "length", "length": params.get("max_new_tokens")}
        for token in self.reply(payload) + self.tail:
            if len(out) >= int(params.get("max_new_tokens") or 1 << 30):
                break
            out.append(token)
            if token in stops:
                finish = {"type": "stop", "matched": token}
                break
        return {
            "text": "",
            "meta_info": {
                "finish_reason": finish,
                "prompt_tokens": len(payload.get("input_ids") or []),
                "completion_tokens": len(out),
                "output_token_logprobs": [[-0.25, t, None] for t in out],
            },
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ScriptedChatServer:
    """An OpenAI-compatible ``/chat/completions`` endpoint over loopback HTTP that answers each call with the next scripted tool call.

    It stands where AReaL's proxy (in front of a GPU inference server) stands for an agent;
    ``api_keys`` holds every ``Authorization`` header it saw.
    """

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = list(calls)
        self.api_keys: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.api_keys.add(self.headers.get("Authorization", ""))
                body = json.dumps(server.completion()).encode()
                self.send_response(200 if self.path.endswith("/chat/completions") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        if self.calls:
            call = self.calls.pop(0)
            message["tool_calls"] = [
                {"id": f"call-{len(self.calls)}", "type": "function", "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
            ]
        return {
            "id": "chatcmpl-tiny",
            "object": "chat.completion",
            "created": 0,
            "model": "tiny",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
