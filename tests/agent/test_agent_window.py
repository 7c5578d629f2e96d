"""The window the agent budgets for: a llama.cpp server's runtime context from /props, not
the training context its /v1/models lists; a server that says nothing gets the settings' value."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from factory.agent import SearchAgent
from factory.llm.openai_backend import OpenAIBackend
from factory.settings import Settings


def stub_server(routes: dict[str, dict]) -> ThreadingHTTPServer:
    """GET routes answering JSON on 127.0.0.1; anything else is a 404."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            return

        def do_GET(self) -> None:
            body = routes.get(self.path.rstrip("/"))
            payload = json.dumps(body if body is not None else {"error": "not found"}).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture()
def serve():
    servers = []

    def start(routes):
        server = stub_server(routes)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# what llama.cpp's server answers for `llama-server -m qwen.gguf -c 8192`: the training context in
# /v1/models, the runtime one (per slot) in /props
LLAMACPP = {
    "/v1/models": {"object": "list", "data": [{"id": "qwen", "object": "model", "meta": {"n_ctx_train": 32768}}]},
    "/props": {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1},
}


def test_llamacpp_server_window_is_its_runtime_context(serve, searcher):
    backend = OpenAIBackend([serve(LLAMACPP)], "qwen", structured="json_object")
    assert backend.context_tokens == 8192
    agent = SearchAgent(searcher, backend, Settings())
    assert (agent.profile, agent.window, agent.window_source) == ("small", 8192, "backend")
    assert agent.limits.round_token_budget + agent.limits.max_output_tokens <= 8192 * 0.9


def test_vllm_max_model_len_is_read_first(serve):
    url = serve({"/v1/models": {"data": [{"id": "m", "object": "model", "max_model_len": 65536}]}})
    assert OpenAIBackend([url], "m").context_tokens == 65536


def test_a_server_that_reports_no_window_leaves_it_to_the_settings(serve, searcher):
    url = serve({"/v1/models": {"data": [{"id": "m", "object": "model"}]}})  # no /props either
    backend = OpenAIBackend([url], "m", structured="json_object")
    assert backend.context_tokens == 0
    agent = SearchAgent(searcher, backend, Settings(agent={"fallback_context_tokens": 32_768}))
    assert (agent.profile, agent.window, agent.window_source) == ("standard", 32_768, "settings")
    assert "reported no context window; assumed 32,768 tokens" in agent.window_warning
    # a window given in the spec is the backend's word
    assert OpenAIBackend([url], "m", context_tokens=4096).context_tokens == 4096
