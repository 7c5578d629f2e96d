"""Backends registered by name; ``make_llm(spec)`` builds one from a spec string.

A backend module is imported only when its spec is used, so ``fake`` works without
``openai`` or ``llama-cpp-python`` installed. Register another backend with
``@register_backend("name")`` on a function ``(spec, settings) -> LLM``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from factory.llm.spec import LLMSpec, LLMSpecError, float_option, parse_spec
from factory.llm.types import LLM
from factory.settings import LLMSettings

if TYPE_CHECKING:
    from factory.llm.gateway import Gateway
    from factory.settings import Settings
    from factory.store import Store

Factory = Callable[[LLMSpec, LLMSettings], LLM]
_BACKENDS: dict[str, Factory] = {}


def register_backend(name: str) -> Callable[[Factory], Factory]:
    def decorate(factory: Factory) -> Factory:
        _BACKENDS[name] = factory
        return factory

    return decorate


def available_backends() -> list[str]:
    return sorted(_BACKENDS)


def make_llm(spec: str | None = None, settings: LLMSettings | None = None) -> LLM:
    """The backend a spec names (``settings.spec`` when spec is None); raises ``LLMSpecError``."""
    settings = settings or LLMSettings()
    parsed = parse_spec(spec if spec is not None else settings.spec)
    factory = _BACKENDS.get(parsed.backend)
    if factory is None:
        raise LLMSpecError(
            f"LLM spec {parsed.text!r}: unknown backend {parsed.backend!r}; known: {', '.join(available_backends())}"
        )
    return factory(parsed, settings)


@register_backend("fake")
def _fake(spec: LLMSpec, settings: LLMSettings) -> LLM:
    from factory.llm.fake import rule_fake

    if spec.target == "factory":  # fake:factory answers the factory's own prompts (factory/llm/fake_factory.py)
        from factory.llm.fake_factory import factory_fake

        return factory_fake(delay_s=float_option(spec, "delay", 0.0), model=spec.model or "fake-factory")

    return rule_fake(delay_s=float_option(spec, "delay", 0.0), model=spec.model or spec.target or "fake-rules")


@register_backend("openai")
def _openai(spec: LLMSpec, settings: LLMSettings) -> LLM:
    from factory.llm.openai_backend import OpenAIBackend

    return OpenAIBackend.from_spec(spec, settings)


@register_backend("llamacpp")
def _llamacpp(spec: LLMSpec, settings: LLMSettings) -> LLM:
    from factory.llm.llamacpp_backend import LlamaCppBackend

    return LlamaCppBackend.from_spec(spec, settings)


def require_language(spec: str, lang: str) -> None:
    """Refuse, before any work starts, a run whose backend declares it cannot read ``lang``.

    Only the embedded models declare their languages (SmolLM2-135M reads English only);
    servers and GGUF files are taken at their word.
    """
    parsed = parse_spec(spec)
    if parsed.backend != "llamacpp":
        return
    from factory.llm.llamacpp_backend import EMBEDDED

    model = EMBEDDED.get((parsed.target or "smollm2-135m").lower())
    if model is not None and lang not in model.languages:
        raise LLMSpecError(
            f"--llm {spec}: the embedded {model.name} reads {', '.join(model.languages)} only, so it cannot write or "
            f"judge {lang} tasks. Pass a model that reads {lang}: --llm openai:http://127.0.0.1:8000/v1#MODEL "
            f"(a vLLM or other OpenAI-compatible server with a multilingual model), or --llm fake:factory to run "
            f"the pipeline end to end without a model."
        )


def make_gateway(spec: str | None = None, settings: "LLMSettings | Settings | None" = None, store: "Store | None" = None,
                 **kwargs: Any) -> "Gateway":
    """A gateway over ``make_llm(spec, settings)`` with the settings' concurrency and repair.

    ``settings`` is the whole ``Settings`` (or its ``llm`` section, then the generation
    settings are the defaults): ``llm.concurrency = auto`` follows the candidates in flight
    (``factory.capacity.resolve_concurrency``)."""
    from factory.capacity import resolve_concurrency
    from factory.llm.gateway import Gateway
    from factory.settings import GenerateSettings

    generate = getattr(settings, "generate", None) or GenerateSettings()
    settings = getattr(settings, "llm", settings) or LLMSettings()
    kwargs.setdefault("concurrency", resolve_concurrency(settings, generate, spec=spec).llm_calls)
    kwargs.setdefault("repair", settings.repair)
    kwargs.setdefault("recheck_store_on_miss", settings.recheck_store_on_miss)
    return Gateway(make_llm(spec, settings), store, **kwargs)


__all__ = ["LLMSpecError", "available_backends", "make_gateway", "make_llm", "register_backend", "require_language"]
