"""A small OpenAI-compatible HTTP server on 127.0.0.1 that can misbehave on purpose.

A fake shipped in the package (not a mock): tests and benchmarks drive the real
``openai`` backend, the client's retries and the gateway's recording against it.
Each request can, with a seeded probability, hang past the client's timeout, answer
HTTP 500 or 429, send a body that is not JSON, or send a well-formed completion whose
content is broken JSON. Every request is logged (``log``) with its outcome and the
shape of its body, so a test can count what reached the server. ``llm_answer(llm)``
puts any in-process LLM (such as ``fake:factory``) behind the server; ``stop()`` also
cuts open keep-alive connections, so a stopped server is down for its clients, and
``start()`` again reuses the port.

It behaves like vLLM where the factory depends on it (``factory/llm/fake_vllm.py``:
request shapes, reasoning models, usage), and with ``load=LoadModel(...)`` it serves
like one: continuous batching, queueing beyond capacity, latencies from the load model
on a clock ``scale`` times faster than real time (``factory/llm/fake_load.py``); its
own figures (utilisation among them) are at ``GET /load``, ``POST /load/reset`` starts
them over. ``python -m factory.llm.fake_server --help`` runs one on its own.
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
from factory.llm.fake_load import BatchEngine, LoadModel
from factory.llm.fake_vllm import Thinking, complete_message, shape_error, shape_of
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
        load: LoadModel | None = None,
        scale: float = 1.0,
        thinking: Thinking | None = None,
        honor_max_tokens: bool = False,
        auto_tool_choice: bool = True,
        max_model_len: int = 4096,
        keep_log: bool = True,
    ) -> None:
        self.answer = answer
        self.port = port
        self.faults = faults or Faults()
        self.delay_s = delay_s
        self.model = model
        self.load = load
        self.scale = scale
        self.thinking = thinking or Thinking()
        self.honor_max_tokens = honor_max_tokens
        self.auto_tool_choice = auto_tool_choice
        self.max_model_len = max_model_len
        self.keep_log = keep_log  # a long bench keeps counts only
        self.engine: BatchEngine | None = None
        self.requests = 0
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
        if self.load is not None and self.engine is None:
            self.engine = BatchEngine(self.load, scale=self.scale)
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

    def close(self) -> None:
        """Stop serving and stop the load model's engine (``stop`` alone keeps it for a restart)."""
        self.stop()
        if self.engine is not None:
            self.engine.stop()
            self.engine = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

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
            self.requests += 1
            if not self.keep_log:
                return
            # seed and roles tell apart samples of one prompt and a repair request from its original
            self.log.append({"n": len(self.log), "first_user": first, "last_user": last, "outcome": outcome,
                             "t": time.monotonic(), "seed": body.get("seed"), "shape": shape_of(body),
                             "roles": [m.get("role") for m in body.get("messages", [])]})

    def load_stats(self) -> dict[str, Any]:
        """The server's own figures: the load model's (when it has one) and the requests seen."""
        stats = self.engine.stats() if self.engine is not None else {}
        with self._lock:
            return {**stats, "http_requests": self.requests}


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
            path = self.path.rstrip("/")
            if path.endswith("/models"):
                data = {"object": "list", "data": [{"id": owner.model, "object": "model",
                                                    "max_model_len": owner.max_model_len}]}
                self._send(200, json.dumps(data).encode())
            elif path == "/load":
                self._send(200, json.dumps(owner.load_stats()).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client died while sending: no request was received
                return
            if self.path.rstrip("/") == "/load/reset":
                if owner.engine is not None:
                    owner.engine.reset_stats()
                return self._send(200, json.dumps(owner.load_stats()).encode())
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict) or "messages" not in body:  # not a chat request: not logged
                return self._send(400, b'{"error": {"message": "expected a chat completion request"}}')
            refused = shape_error(body, auto_tool_choice=owner.auto_tool_choice)
            if refused is not None:  # as vLLM answers a request it cannot take
                owner._record(body, "bad_request")
                return self._send(400, json.dumps({"error": {"message": refused, "type": "BadRequestError",
                                                             "code": 400}}).encode())
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
            message, finish, usage = complete_message(body, message, owner.thinking,
                                                      honor_max_tokens=owner.honor_max_tokens)
            message["role"] = "assistant"
            if outcome == "broken_answer":
                text = message.get("content") or ""
                message["content"] = text[: max(1, len(text) // 2)]
            if owner.engine is not None:  # the request's turn in the batch, on the load model's clock
                owner.engine.run(usage["prompt_tokens"], usage["completion_tokens"])
            data = {
                "id": f"chatcmpl-{owner.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", owner.model),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
            self._send(200, json.dumps(data).encode())

    return Handler


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes or SIGTERM: one JSON line with the URL on stdout first."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(description="a fake vLLM-like OpenAI-compatible server on 127.0.0.1")
    parser.add_argument("--answers", choices=("factory", "schema"), default="factory",
                        help="factory: fake:factory answers the factory's prompts; schema: an instance of the schema")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="fake-vllm")
    parser.add_argument("--capacity", type=int, default=64, help="sequences in flight at most (0: no load model)")
    parser.add_argument("--prefill", type=float, default=8000.0, help="prefill tokens/s shared by the batch")
    parser.add_argument("--decode-alone", type=float, default=60.0, help="decode tokens/s of one sequence alone")
    parser.add_argument("--decode-full", type=float, default=25.0, help="decode tokens/s per sequence at capacity")
    parser.add_argument("--scale", type=float, default=1.0, help="virtual seconds per real second")
    parser.add_argument("--reasoning", default="none", help="none | reasoning_content | reasoning | inline")
    parser.add_argument("--thinking-tokens", type=int, default=0, help="tokens of thinking while thinking is on")
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument("--until-stdin-closes", action="store_true",
                        help="also stop when standard input closes (a parent process that pipes it: the server "
                             "goes when its parent does); without it, it runs until SIGTERM or Ctrl-C")
    args = parser.parse_args(argv)
    if args.answers == "factory":
        from factory.llm.fake_factory import factory_fake

        answer = llm_answer(factory_fake())
    else:
        answer = default_answer
    load = LoadModel(args.capacity, args.prefill, args.decode_alone, args.decode_full) if args.capacity else None
    server = FakeOpenAIServer(answer, model=args.model, port=args.port, load=load, scale=args.scale,
                              thinking=Thinking(args.reasoning, args.thinking_tokens), keep_log=False,
                              max_model_len=args.max_model_len).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(json.dumps({"url": server.url, "model": args.model, "load": load.as_dict() if load else None,
                      "scale": args.scale}), flush=True)
    if args.until_stdin_closes:  # started in the background with no stdin, it would stop at once otherwise
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    server.close()


if __name__ == "__main__":
    main()
