"""The LLM seam: one protocol, small backend adapters, one cached and logged gateway.

    from factory.llm import Gateway, LLMRequest, make_llm
    llm = Gateway(make_llm("llamacpp:smollm2-135m"), store, stage_default="compose")
    answer = llm.complete(LLMRequest.chat(system, user, output=MyModel))
"""

from factory.llm.gateway import BoundGateway, Gateway
from factory.llm.registry import available_backends, make_gateway, make_llm, register_backend
from factory.llm.spec import LLMSpec, LLMSpecError, parse_spec
from factory.llm.types import LLM, LLMRequest, LLMResponse, Message, Sampling, ToolCall, ToolSpec

__all__ = [
    "LLM",
    "BoundGateway",
    "Gateway",
    "LLMRequest",
    "LLMResponse",
    "LLMSpec",
    "LLMSpecError",
    "Message",
    "Sampling",
    "ToolCall",
    "ToolSpec",
    "available_backends",
    "make_gateway",
    "make_llm",
    "parse_spec",
    "register_backend",
]
