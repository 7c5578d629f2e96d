"""The gauntlet: validators cheapest first, stopping at the first failure.

Skipped validators (switched off, no searcher) are recorded and do not stop it; a
failed one does, hard (revise) or soft (necessity's decorative chunks: prune).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from factory.errors import FactoryError
from factory.records import Draft, Verdict
from factory.validate.agent_run import AgentRunValidator
from factory.validate.answerable import AnswerableValidator
from factory.validate.base import ValidationContext, Validator, timed_check
from factory.validate.closed_book import ClosedBookValidator
from factory.validate.dedup import DedupValidator
from factory.validate.leakage import LeakageValidator
from factory.validate.necessity import NecessityValidator
from factory.validate.schema import SchemaValidator
from factory.validate.shortcut import ShortcutValidator
from factory.validate.solvability import SolvabilityValidator

VALIDATORS: dict[str, Callable[[], Validator]] = {
    "schema": SchemaValidator,
    "dedup": DedupValidator,
    "answerable": AnswerableValidator,
    "leakage": LeakageValidator,
    "shortcut": ShortcutValidator,
    "closed_book": ClosedBookValidator,
    "solvability": SolvabilityValidator,
    "necessity": NecessityValidator,
    "agent_run": AgentRunValidator,
}


class UnknownValidator(FactoryError):
    pass


def build_validators(order: Sequence[str]) -> list[Validator]:
    unknown = [name for name in order if name not in VALIDATORS]
    if unknown:
        raise UnknownValidator(f"unknown validator(s) {unknown} in validation.order; known: {sorted(VALIDATORS)}")
    return [VALIDATORS[name]() for name in order]


@dataclass
class GauntletResult:
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def failure(self) -> Verdict | None:
        return next((v for v in self.verdicts if not v.ok and not v.skipped), None)

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and self.failure is None

    @property
    def passed_names(self) -> list[str]:
        return [v.validator for v in self.verdicts if v.ok]

    @property
    def skipped_names(self) -> list[str]:
        return [v.validator for v in self.verdicts if v.skipped]


def run_gauntlet(
    draft: Draft,
    ctx: ValidationContext,
    validators: Sequence[Validator],
    on_verdict: Callable[[int, Verdict], None] | None = None,
) -> GauntletResult:
    """Run validators in order; ``on_verdict(step, verdict)`` sees each one as it lands."""
    result = GauntletResult()
    for step, validator in enumerate(validators):
        outcome = timed_check(validator, draft, ctx)
        result.verdicts.append(outcome)
        if on_verdict is not None:
            on_verdict(step, outcome)
        if not outcome.ok and not outcome.skipped:
            break
    return result
