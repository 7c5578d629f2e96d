"""A small OpenAI-compatible HTTP server on 127.0.0.1 that can misbehave on purpose.

A fake shipped in the package (not a mock): tests and benchmarks drive the real
``openai`` backend, the client's retries and the gateway's recording against it.
Each request can, with a seeded probability, hang past the client's timeout, answer
HTTP 500 or 429, send a body that is not JSON, or send a well-formed completion whose
content is broken JSON. Every request is logged (``log``) with its outcome, so a test
can count what reached the server. ``llm_answer(llm)`` puts any in-process LLM (such as
``fake:factory``) behind the server; ``stop()`` also cuts open keep-alive connections,
so a stopped server is down for its clients, and ``start()`` again reuses the port.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from factory.llm.fake import example_from_schema
from factory.llm.types import LLM, LLMRequest, Message, Sampling, ToolCall, ToolSpec


@dataclass
class Faults:
    timeout: float = 0.0  # share of requests that hang for hang_s
    http_500: float = 0.0
    http_429: float = 0.0
    broken_body: float = 0.0  # HTTP 200 with a body that is not JSON
    broken_answer: float = 0.0  # a valid completion whose content is cut-off JSON
    hang_s: float = 3.0


def default_answer(body: dict[str, Any]) -> str:
    schema = (body.get("response_format") or {}).get("schema") or (
        (body.get("response_format") or {}).get("json_schema") or {}
    ).get("schema")
    if schema:
        return json.dumps(example_from_schema(schema))
    last = next((m.get("content") or "" for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    return f"echo: {last[:200]}"


def llm_answer(llm: LLM) -> Callable[[dict[str, Any]], str | dict[str, Any]]:
    """An ``answer`` for the server that asks ``llm`` (a request body back into an LLMRequest)."""

    def answer(body: dict[str, Any]) -> str | dict[str, Any]:
        fmt = body.get("response_format") or {}
        named = fmt.get("json_schema") or {}
        choice = body.get("tool_choice")
        request = LLMRequest(
            messages=[_message(m) for m in body.get("messages", [])],
            tools=[ToolSpec(name=t["function"]["name"], description=t["function"].get("description") or "",
                            parameters=t["function"].get("parameters") or {}) for t in body.get("tools") or []],
            tool_choice=choice["function"]["name"] if isinstance(choice, dict) else choice,
            output_schema=fmt.get("schema") or named.get("schema"),
            schema_name=named.get("name"),
            sampling=Sampling(temperature=body.get("temperature") or 0.0, top_p=body.get("top_p") or 1.0,
                              max_tokens=body.get("max_tokens") or 512, stop=body.get("stop") or []),
            seed=int(body.get("seed") or 0),
        )
        response = llm.complete(request)
        if response.tool_calls:
            return {"content": response.text or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in response.tool_calls]}
        return response.text

    return answer


def _message(raw: dict[str, Any]) -> Message:
    calls = [ToolCall(id=c.get("id") or f"call_{i}", name=c["function"]["name"],
                      arguments=c["function"].get("arguments") or "{}")
             for i, c in enumerate(raw.get("tool_calls") or [])]
    return Message(role=raw["role"], content=raw.get("content") or "", tool_calls=calls,
                   tool_call_id=raw.get("tool_call_id"), name=raw.get("name"))


class FakeOpenAIServer:
    def __init__(
        self,
        answer: Callable[[dict[str, Any]], str | dict[str, Any]] = default_answer,
        *,
        faults: Faults | None = None,
        delay_s: float = 0.0,
        seed: int = 0,
        model: str = "fake-http",
        port: int = 0,
    ) -> None:
        self.answer = answer
        self.port = port
        self.faults = faults or Faults()
        self.delay_s = delay_s
        self.model = model
        self.log: list[dict[str, Any]] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "FakeOpenAIServer":
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        server.daemon_threads = True
        self.port = int(server.server_address[1])  # a restart comes back on the same port
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:  # keep-alive connections would go on being served: cut them
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @property
    def running(self) -> bool:
        return self._server is not None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def outcomes(self) -> dict[str, int]:
        with self._lock:
            counts: dict[str, int] = {}
            for entry in self.log:
                counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
            return counts

    def _decide(self) -> str:
        f = self.faults
        with self._lock:
            roll = self._rng.random()
        for outcome, share in (
            ("timeout", f.timeout),
            ("http_500", f.http_500),
            ("http_429", f.http_429),
            ("broken_body", f.broken_body),
            ("broken_answer", f.broken_answer),
        ):
            if roll < share:
                return outcome
            roll -= share
        return "ok"

    def _record(self, body: dict[str, Any], outcome: str) -> None:
        last = next((m.get("content") or "" for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        first = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")
        with self._lock:
            # seed and roles tell apart samples of one prompt and a repair request from its original
            self.log.append({"n": len(self.log), "first_user": first, "last_user": last, "outcome": outcome,
                             "t": time.monotonic(), "seed": body.get("seed"),
                             "roles": [m.get("role") for m in body.get("messages", [])]})


def _handler(owner: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def setup(self) -> None:
            super().setup()
            with owner._lock:
                owner._connections.add(self.connection)

        def finish(self) -> None:
            with owner._lock:
                owner._connections.discard(self.connection)
            try:
                super().finish()
            except OSError:
                pass

        def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                data = {"object": "list", "data": [{"id": owner.model, "object": "model", "max_model_len": 4096}]}
                self._send(200, json.dumps(data).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client died while sending: no request was received
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict) or "messages" not in body:  # not a chat request: not logged
                return self._send(400, b'{"error": {"message": "expected a chat completion request"}}')
            outcome = owner._decide()
            owner._record(body, outcome)
            if owner.delay_s:
                time.sleep(owner.delay_s)
            if outcome == "timeout":
                time.sleep(owner.faults.hang_s)
            if outcome == "http_500":
                return self._send(500, b'{"error": {"message": "injected server error"}}')
            if outcome == "http_429":
                return self._send(429, b'{"error": {"message": "injected rate limit"}}')
            if outcome == "broken_body":
                return self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "mess')
            reply = owner.answer(body)
            # an answer is text, or a message dict (e.g. with OpenAI-layout tool_calls)
            message = dict(reply) if isinstance(reply, dict) else {"content": reply}
            message["role"] = "assistant"
            text = message.get("content") or ""
            if outcome == "broken_answer":
                text = message["content"] = text[: max(1, len(text) // 2)]
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
            data = {
                "id": f"chatcmpl-{len(owner.log)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", owner.model),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": max(1, prompt // 4), "completion_tokens": max(1, len(text) // 4),
                          "total_tokens": max(1, prompt // 4) + max(1, len(text) // 4)},
            }
            self._send(200, json.dumps(data).encode())

    return Handler
