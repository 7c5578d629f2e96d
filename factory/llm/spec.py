"""The one string that names an LLM backend.

Grammar: ``BACKEND[+FLAVOR][:TARGET][#MODEL][?KEY=VALUE&...]``

* ``openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B`` (vLLM or any OpenAI-compatible
  server; structured output as ``json_schema``, which vLLM expects)
* ``openai+llamacpp:http://127.0.0.1:8080/v1#smollm2`` (a llama.cpp server:
  structured output as ``json_object`` with a ``schema``)
* ``openai:http://h1:8000/v1,http://h2:8000/v1#MODEL`` (several endpoints serving
  the same model; each request goes to the least busy one, and a failing endpoint
  rests ``cooldown`` seconds, doubling while it keeps failing: see ``balancer.py``)
* ``llamacpp:smollm2-135m`` or ``llamacpp:/path/model.gguf`` (embedded llama.cpp)
* ``fake`` (deterministic answers, no model)

Options after ``?`` override settings: ``structured=json_schema|json_object|none``,
``context=TOKENS``, ``threads=N``, ``timeout=SECONDS``, ``retries=N``,
``api_key_env=VAR``, ``delay=SECONDS`` (fake), ``cooldown=SECONDS`` (several endpoints). The query part is only read after the
``#MODEL`` part (or when there is no ``#``), so endpoint URLs keep their own ``?``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from factory.errors import FactoryError


class LLMSpecError(FactoryError):
    pass


@dataclass(frozen=True)
class LLMSpec:
    backend: str
    flavor: str = ""
    target: str = ""
    model: str = ""
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""

    @property
    def urls(self) -> list[str]:
        """Endpoint URLs for HTTP backends (comma-separated target)."""
        return [u.strip().rstrip("/") for u in self.target.split(",") if u.strip()]

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.options.get(name, default)

    def redacted(self) -> str:
        """The spec without endpoints (for logs and cache keys: URLs are not part of the answer)."""
        head = self.backend + (f"+{self.flavor}" if self.flavor else "")
        return head + (f"#{self.model}" if self.model else "")


KNOWN_OPTIONS = {"structured", "context", "threads", "timeout", "retries", "api_key_env", "delay", "cooldown"}


def parse_spec(text: str) -> LLMSpec:
    raw = (text or "").strip()
    if not raw:
        raise LLMSpecError("empty LLM spec; expected e.g. 'llamacpp:smollm2-135m', 'openai:URL#MODEL' or 'fake'")
    head, sep, rest = raw.partition(":")
    # a bare "fake" or "fake?delay=1" has no colon
    if not sep:
        head, _, query = head.partition("?")
        rest = ""
    else:
        query = ""
    model = ""
    if "#" in rest:
        rest, _, model = rest.partition("#")
        model, _, query = model.partition("?")
    elif sep and "?" in rest and not rest.startswith(("http://", "https://")):
        rest, _, query = rest.partition("?")
    backend, _, flavor = head.partition("+")
    backend = backend.strip().lower()
    if not backend.isidentifier():
        raise LLMSpecError(f"LLM spec {raw!r}: backend name {backend!r} is not a name")
    options: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key not in KNOWN_OPTIONS:
            raise LLMSpecError(f"LLM spec {raw!r}: unknown option {key!r}; known: {', '.join(sorted(KNOWN_OPTIONS))}")
        options[key] = value
    return LLMSpec(
        backend=backend,
        flavor=flavor.strip().lower(),
        target=rest.strip(),
        model=model.strip(),
        options=options,
        text=raw,
    )


def int_option(spec: LLMSpec, name: str, default: int) -> int:
    value = spec.option(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise LLMSpecError(f"LLM spec {spec.text!r}: option {name}={value!r} is not an integer") from exc


def float_option(spec: LLMSpec, name: str, default: float) -> float:
    value = spec.option(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise LLMSpecError(f"LLM spec {spec.text!r}: option {name}={value!r} is not a number") from exc
