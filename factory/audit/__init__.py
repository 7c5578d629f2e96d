"""Audit mode: the validator gauntlet and retrieval checks on benchmarks the factory did not write."""

from factory.audit.inputs import AuditInput, AuditInputError, AuditQuestion, load_audit_input
from factory.audit.question import QuestionAudit
from factory.audit.run import AuditError, AuditResult, run_audit

__all__ = [
    "AuditError", "AuditInput", "AuditInputError", "AuditQuestion", "AuditResult", "QuestionAudit",
    "load_audit_input", "run_audit",
]
