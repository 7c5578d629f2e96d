"""How big a round's context is: the backend's reported prompt tokens, estimates for the rest.

After each model call the context is known exactly when the backend reports its
prompt tokens (``tokens_in``); only what was appended since (the assistant message
and the harness's replies) is estimated, at characters per token. The estimate starts
at the configured ratio and follows the backend's reports down when its tokenizer
packs fewer characters into a token (Cyrillic, ids, JSON): an estimate may come out
high, never knowingly low.
"""

from __future__ import annotations

import math

from factory.llm.types import LLMRequest, Message

ROLE_TOKENS = 4  # a few tokens of role markup per message


def message_chars(message: Message) -> int:
    return len(message.content or "") + sum(len(c.name) + len(c.arguments) for c in message.tool_calls)


class TokenMeter:
    def __init__(self, chars_per_token: float, fixed_chars: int = 0) -> None:
        self.configured = chars_per_token
        self.chars_per_token = chars_per_token
        self.fixed_chars = fixed_chars  # sent with every request (the tools protocol's schemas)

    def text(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def message(self, message: Message | None) -> int:
        return 0 if message is None else self.text(message_chars(message)) + ROLE_TOKENS

    def messages(self, messages: list[Message]) -> int:
        return sum(self.message(m) for m in messages)

    def request(self, messages: list[Message]) -> int:
        """The estimate of a whole request."""
        return self.text(self.fixed_chars) + self.messages(messages)

    def observe(self, request: LLMRequest, prompt_tokens: int) -> int:
        """The request's size: as reported when the backend reports it (and the ratio
        learned from it), else estimated."""
        if prompt_tokens <= 0:
            return self.request(request.messages)
        chars = self.fixed_chars + sum(message_chars(m) for m in request.messages)
        if chars:
            self.chars_per_token = min(self.configured, max(1.0, chars / prompt_tokens))
        return prompt_tokens
