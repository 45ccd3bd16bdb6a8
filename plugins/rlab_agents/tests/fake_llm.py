"""A fake LLM server on 127.0.0.1 that speaks the real OpenAI and Anthropic wire formats.

It serves ``POST /v1/chat/completions`` and ``POST /v1/responses`` (OpenAI) and
``POST /v1/messages`` (Anthropic) over real HTTP, so the official SDKs talk to it exactly as
they talk to the real services: the same response shapes and usage fields, the same error
bodies, status codes and rate-limit headers. Each request takes the next entry of a script
(:class:`Reply` or :class:`Fail`); every request is recorded with its headers and body.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_PATHS = ("/v1/chat/completions", "/v1/responses")
ANTHROPIC_PATHS = ("/v1/messages",)


@dataclass
class Reply:
    """A successful answer carrying ``text`` and these token counts."""

    text: str
    input_tokens: int = 1200
    output_tokens: int = 300
    cached_tokens: int = 0
    cache_write_tokens: int = 0  # Anthropic only
    delay_s: float = 0.0


@dataclass
class Fail:
    """An error answer: ``kind`` is auth, permission, rate_limit, server, overloaded or bad_request."""

    kind: str
    retry_after: str | None = "0.05"  # seconds, as the retry-after header carries them
    message: str | None = None


@dataclass
class Request:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    at: float
    status: int = 0

    @property
    def key(self) -> str | None:
        """The API key the request carried (Authorization bearer or x-api-key)."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    def turns(self) -> list[tuple[str, str]]:
        """The conversation as (role, text), system prompt first when there is one."""
        body = self.body
        turns: list[tuple[str, str]] = []
        if self.path == "/v1/responses":
            if body.get("instructions"):
                turns.append(("system", body["instructions"]))
            items = body.get("input")
            items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        else:
            if isinstance(body.get("system"), str):
                turns.append(("system", body["system"]))
            items = body.get("messages", [])
        for item in items or []:
            turns.append((item["role"], _text_of(item.get("content"))))
        return turns

    def user_texts(self) -> list[str]:
        """Every user turn's text, oldest first."""
        return [text for role, text in self.turns() if role == "user"]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


ERRORS = {
    # kind: (status, OpenAI type, OpenAI code, Anthropic type, message)
    "auth": (401, "invalid_request_error", "invalid_api_key", "authentication_error", None),
    "permission": (
        403,
        "invalid_request_error",
        "model_not_found",
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    "rate_limit": (
        429,
        "requests",
        "rate_limit_exceeded",
        "rate_limit_error",
        "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1.",
    ),
    "server": (
        500,
        "server_error",
        None,
        "api_error",
        "The server had an error while processing your request. Sorry about that!",
    ),
    "overloaded": (529, "server_error", None, "overloaded_error", "Overloaded"),
    "bad_request": (
        400,
        "invalid_request_error",
        None,
        "invalid_request_error",
        "The fake server has no scripted reply left.",
    ),
}


def _masked(key: str | None) -> str:
    if not key:
        return "(none)"
    return key[:3] + "*" * max(0, len(key) - 7) + key[-4:]


class FakeLLM:
    """The server. Use as a context manager; ``script(...)`` queues answers in order."""

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[Request] = []
        self.fallback: Callable[[Request], Reply | Fail] | None = None
        self._script: deque[Reply | Fail] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def openai_url(self) -> str:
        """``base_url`` for the OpenAI SDK."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """``base_url`` for the Anthropic SDK (it adds ``/v1/messages`` itself)."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, *items: Reply | Fail | str) -> FakeLLM:
        """Queue answers; a plain string is a :class:`Reply` with that text."""
        with self._lock:
            self._script.extend(Reply(i) if isinstance(i, str) else i for i in items)
        return self

    @property
    def left(self) -> int:
        """Scripted answers not yet served."""
        return len(self._script)

    # ------------------------------------------------------------------ answering

    def _next(self, request: Request) -> Reply | Fail:
        if self.api_key is not None and request.key != self.api_key:
            return Fail("auth", retry_after=None)
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.fallback is not None:
            return self.fallback(request)
        return Fail("bad_request", retry_after=None)

    def _answer(self, request: Request) -> tuple[int, dict[str, str], dict[str, Any]]:
        item = self._next(request)
        if isinstance(item, Fail):
            return self._error(request, item)
        if item.delay_s:
            time.sleep(item.delay_s)
        model = request.body.get("model", "unknown")
        if request.path == "/v1/chat/completions":
            body = _chat_completion(model, item)
        elif request.path == "/v1/responses":
            body = _response(model, item, request.body)
        else:
            body = _message(model, item)
        headers = {"x-request-id": f"req_{uuid.uuid4().hex[:24]}"}
        return 200, headers, body

    def _error(self, request: Request, fail: Fail) -> tuple[int, dict[str, str], dict[str, Any]]:
        status, oa_type, oa_code, an_type, message = ERRORS[fail.kind]
        if fail.kind == "auth":
            message = (
                f"Incorrect API key provided: {_masked(request.key)}. You can find your API key "
                "at https://platform.openai.com/account/api-keys."
                if request.path in OPENAI_PATHS
                else "invalid x-api-key"
            )
        message = fail.message or message
        request_id = f"req_{uuid.uuid4().hex[:24]}"
        headers = {"x-request-id": request_id, "request-id": request_id}
        if fail.kind == "rate_limit":
            if fail.retry_after is not None:
                headers["retry-after"] = fail.retry_after
            if request.path in OPENAI_PATHS:
                headers.update(
                    {
                        "x-ratelimit-limit-requests": "3",
                        "x-ratelimit-remaining-requests": "0",
                        "x-ratelimit-reset-requests": "50ms",
                        "x-ratelimit-limit-tokens": "40000",
                        "x-ratelimit-remaining-tokens": "38000",
                        "x-ratelimit-reset-tokens": "3s",
                    }
                )
            else:
                reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
                headers.update(
                    {
                        "anthropic-ratelimit-requests-limit": "3",
                        "anthropic-ratelimit-requests-remaining": "0",
                        "anthropic-ratelimit-requests-reset": reset,
                        "anthropic-ratelimit-tokens-limit": "40000",
                        "anthropic-ratelimit-tokens-remaining": "38000",
                        "anthropic-ratelimit-tokens-reset": reset,
                    }
                )
        if request.path in OPENAI_PATHS:
            body: dict[str, Any] = {
                "error": {"message": message, "type": oa_type, "param": None, "code": oa_code}
            }
        else:
            body = {
                "type": "error",
                "error": {"type": an_type, "message": message},
                "request_id": request_id,
            }
        return status, headers, body

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                request = Request(
                    path=self.path.split("?")[0],
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    raw=raw,
                    at=time.monotonic(),
                )
                with fake._lock:
                    fake.requests.append(request)
                if request.path not in OPENAI_PATHS + ANTHROPIC_PATHS:
                    status, headers, payload = 404, {}, {"error": {"message": "not found"}}
                else:
                    status, headers, payload = fake._answer(request)
                request.status = status
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("date", formatdate(usegmt=True))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return Handler


def _chat_completion(model: str, reply: Reply) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:29]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": reply.text,
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_fake0001",
    }


def _response(model: str, reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": [
            {"id": f"rs_{uuid.uuid4().hex}", "type": "reasoning", "summary": []},
            {
                "id": f"msg_{uuid.uuid4().hex}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
                ],
            },
        ],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": (request.get("reasoning") or {}).get("effort"), "summary": None},
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
        "user": None,
        "metadata": {},
    }


def _message(model: str, reply: Reply) -> dict[str, Any]:
    # Anthropic counts cache reads and writes apart from input_tokens
    uncached = max(0, reply.input_tokens - reply.cached_tokens - reply.cache_write_tokens)
    return {
        "id": f"msg_01{uuid.uuid4().hex[:22]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": uncached,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cached_tokens,
            "output_tokens": reply.output_tokens,
            "service_tier": "standard",
        },
    }


@dataclass
class Plan:
    """A reply the model would give: hypothesis and edits, rendered as the contract's JSON."""

    hypothesis: str
    edits: list[dict[str, str]] = field(default_factory=list)
    rationale: str = ""

    def json(self, *, fenced: bool = False) -> str:
        text = json.dumps(
            {"hypothesis": self.hypothesis, "rationale": self.rationale, "edits": self.edits}
        )
        return f"Here is my plan.\n```json\n{text}\n```" if fenced else text
