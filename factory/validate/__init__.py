"""The validator gauntlet: one file per validator, each ``check(draft, ctx) -> Verdict``."""

from factory.validate.base import ValidationContext, Validator
from factory.validate.gauntlet import VALIDATORS, GauntletResult, build_validators, run_gauntlet

__all__ = ["VALIDATORS", "GauntletResult", "ValidationContext", "Validator", "build_validators", "run_gauntlet"]
