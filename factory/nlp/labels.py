"""One label set for both languages, and the maps from each model's labels onto it."""

from __future__ import annotations

LABELS = ("person", "organization", "location", "date", "number", "work", "event", "other")

# spaCy's OntoNotes labels. ORDINAL ("first", "third") and TIME ("the night", "hours")
# are dropped: they are almost never an answer or a bridge and would only add hubs.
SPACY_LABELS: dict[str, str] = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "location",
    "LOC": "location",
    "FAC": "location",
    "DATE": "date",
    "CARDINAL": "number",
    "QUANTITY": "number",
    "MONEY": "number",
    "PERCENT": "number",
    "WORK_OF_ART": "work",
    "LAW": "work",
    "EVENT": "event",
    "NORP": "other",
    "PRODUCT": "other",
    "LANGUAGE": "other",
}

# natasha's news NER (PER/LOC/ORG) plus the labels of our Russian date/number rules
NATASHA_LABELS: dict[str, str] = {
    "PER": "person",
    "ORG": "organization",
    "LOC": "location",
    "DATE": "date",
    "NUMBER": "number",
}

NAMED = frozenset({"person", "organization", "location", "work", "event", "other"})


def unify(label: str, lang: str) -> str | None:
    """The unified label for a model label, or None when the label is dropped."""
    table = SPACY_LABELS if lang == "en" else NATASHA_LABELS
    return table.get(label)
