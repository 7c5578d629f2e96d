"""Reasoning models: their thinking kept apart from the answer, and answers the budget cut off.

Qwen3-family models think before they answer unless the chat template is told not to
(``chat_template_kwargs={"enable_thinking": false}``, sent by the openai backend as
``llm.disable_thinking`` says). vLLM with a reasoning parser returns the thinking in
``message.reasoning_content`` (``reasoning`` in newer releases); without one, the text
itself starts with ``<think>...</think>``, or only ends such a block when the chat
template opened it in the prompt. Either way the thinking moves to
``LLMResponse.reasoning`` before the answer is parsed, and its tokens are counted in
``thinking_tokens`` (the server's figure when it reports one, else characters / 4).

Thinking tokens count against ``max_tokens``. A structured answer that does not parse
and stopped at the limit is ``truncated``, with the figures (tokens written, of them
thinking, the budget), never a parse error: asking again with the same budget (the
repair request) would be cut off the same way, and a validator can report it as such.
"""

from __future__ import annotations

from factory.llm.types import LLMRequest, LLMResponse

OPEN, CLOSE = "<think>", "</think>"


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def split_thinking(text: str) -> tuple[str, str]:
    """(thinking, answer) of a text that may hold an inline think block."""
    stripped = text.lstrip()
    if stripped.startswith(OPEN):
        body = stripped[len(OPEN):]
        end = body.find(CLOSE)
        if end < 0:  # never closed: the budget ran out while thinking
            return body.strip(), ""
        return body[:end].strip(), body[end + len(CLOSE):].strip()
    end = text.find(CLOSE)
    if end >= 0 and OPEN not in text[:end]:  # the chat template opened the block in the prompt
        return text[:end].strip(), text[end + len(CLOSE):].strip()
    return "", text


def separate_thinking(response: LLMResponse) -> LLMResponse:
    """Move an inline think block from the text to ``reasoning``; count thinking tokens (in place)."""
    thinking, answer = split_thinking(response.text)
    if thinking or answer != response.text:
        response.reasoning = "\n".join(part for part in (response.reasoning, thinking) if part)
        response.text = answer
    if response.reasoning and not response.thinking_tokens:
        estimate = estimate_tokens(response.reasoning)
        response.thinking_tokens = min(estimate, response.tokens_out) if response.tokens_out else estimate
    return response


def truncation(request: LLMRequest, response: LLMResponse, reason: str) -> str:
    """The figures of an answer cut off at max_tokens."""
    budget = request.sampling.max_tokens
    used = response.tokens_out or budget
    parts = [f"cut off at max_tokens={budget}: {used} tokens written"]
    if response.thinking_tokens:
        parts.append(f"{response.thinking_tokens} of them thinking")
    if not response.text.strip():
        parts.append("nothing left for the answer")
    return ", ".join(parts) + f" ({reason})"
