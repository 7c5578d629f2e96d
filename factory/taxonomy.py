"""The taxonomy (mechanic x question form x answer type) as data, and the cell sampler.

The spec lives in ``taxonomy/*.yaml`` (each file may hold any of the sections
``mechanics``, ``forms``, ``answer_types``); a user adds a mechanic or changes a
weight there, not here. Errors name the file, the key path and the line.

Target shares are hierarchical, so a mechanic's weight is its share whatever the
number of forms and types it allows: P(mechanic) ~ mechanic weight, P(form | mechanic)
~ form weight among the forms it allows, P(type | mechanic, form) ~ type weight among
the compatible types.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from factory.errors import FactoryError
from factory.records import Cell

LANGS = ("en", "ru")


class TaxonomyError(FactoryError):
    pass


def default_taxonomy_dir() -> Path:
    """The repository's ``taxonomy/`` folder (override with settings ``compose.taxonomy_dir``)."""
    import factory

    return Path(factory.__file__).resolve().parent.parent / "taxonomy"


# ------------------------------------------------------------------ the spec models
class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weight: float = Field(gt=0, description="relative target share")
    description: str = Field(min_length=1)
    guidance: dict[str, str] = Field(description="language -> what the composer is told")
    langs: list[str] | None = Field(None, description="languages offered in; default: those with guidance")

    @model_validator(mode="after")
    def _languages(self) -> "_Item":
        for lang in list(self.guidance) + list(self.langs or []):
            if lang not in LANGS:
                raise ValueError(f"unknown language {lang!r}; known: {', '.join(LANGS)}")
        missing = [lang for lang in (self.langs or []) if not self.guidance.get(lang, "").strip()]
        if missing:
            raise ValueError(f"no guidance for language(s) {missing} listed in langs")
        return self

    def offered(self, lang: str) -> bool:
        return lang in (self.langs or [k for k, v in self.guidance.items() if v.strip()])


class MechanicSpec(_Item):
    selector: str = Field(description="which subgraph selector finds its evidence")
    params: dict[str, Any] = Field(default_factory=dict)
    answer_types: list[str] | None = None
    forms: list[str] | None = None


class FormSpec(_Item):
    answer_types: list[str] | None = None


class AnswerTypeSpec(_Item):
    labels: list[str] = Field(min_length=1, description="entity labels that realise this type")


class _TaxonomyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mechanics: dict[str, MechanicSpec] = Field(default_factory=dict)
    forms: dict[str, FormSpec] = Field(default_factory=dict)
    answer_types: dict[str, AnswerTypeSpec] = Field(default_factory=dict)


ENTITY_LABELS = {"person", "organization", "location", "date", "number", "work", "event", "other"}


class CellSpec(BaseModel):
    """Everything the selector and the composer need to know about one cell."""

    model_config = ConfigDict(extra="forbid")

    cell: Cell
    mechanic: MechanicSpec
    form: FormSpec
    answer_type: AnswerTypeSpec
    share: float = Field(0.0, description="target share of accepted tasks in its language")

    def guidance(self, lang: str) -> str:
        parts = [self.mechanic.guidance.get(lang, ""), self.form.guidance.get(lang, ""),
                 self.answer_type.guidance.get(lang, "")]
        return "\n".join(p.strip() for p in parts if p.strip())


# -------------------------------------------------------------------- loading
def _line_index(text: str) -> dict[tuple[str, ...], int]:
    """Key path -> 1-based line, from YAML's node tree (pydantic errors carry only paths)."""
    lines: dict[tuple[str, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = path + (str(key.value),)
                lines[sub] = key.start_mark.line + 1
                walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                walk(value, path + (str(i),))

    root = yaml.compose(text)
    if root is not None:
        walk(root, ())
    return lines


def _where(file: Path, lines: dict[tuple[str, ...], int], path: tuple[Any, ...]) -> str:
    keys = tuple(str(p) for p in path)
    for cut in range(len(keys), -1, -1):
        if keys[:cut] in lines:
            return f"{file}:{lines[keys[:cut]]}: {'.'.join(keys) or '(top)'}"
    return f"{file}: {'.'.join(keys)}"


class Taxonomy:
    def __init__(
        self,
        mechanics: dict[str, MechanicSpec],
        forms: dict[str, FormSpec],
        answer_types: dict[str, AnswerTypeSpec],
        sources: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self.mechanics = mechanics
        self.forms = forms
        self.answer_types = answer_types
        self._sources = sources or {}
        self._check_references()

    def _check_references(self) -> None:
        def where(section: str, name: str, key: str) -> str:
            return f"{self._sources.get((section, name), '(taxonomy)')}.{key}"

        for section, items in (("mechanics", self.mechanics), ("forms", self.forms)):
            for name, item in items.items():
                for type_name in item.answer_types or []:
                    if type_name not in self.answer_types:
                        raise TaxonomyError(
                            f"{where(section, name, 'answer_types')}: unknown answer type {type_name!r}; "
                            f"known: {', '.join(sorted(self.answer_types))}"
                        )
        for name, mechanic in self.mechanics.items():
            for form in mechanic.forms or []:
                if form not in self.forms:
                    raise TaxonomyError(
                        f"{where('mechanics', name, 'forms')}: unknown form {form!r}; known: {', '.join(sorted(self.forms))}"
                    )
        for name, answer_type in self.answer_types.items():
            bad = [label for label in answer_type.labels if label not in ENTITY_LABELS]
            if bad:
                raise TaxonomyError(
                    f"{where('answer_types', name, 'labels')}: unknown entity label(s) {bad}; "
                    f"known: {', '.join(sorted(ENTITY_LABELS))}"
                )
        if not self.mechanics or not self.forms or not self.answer_types:
            raise TaxonomyError("the taxonomy needs at least one mechanic, one form and one answer type")

    # ------------------------------------------------------------ cells
    def compatible(self, mechanic: str, form: str, answer_type: str) -> bool:
        m, f = self.mechanics[mechanic], self.forms[form]
        return (
            (m.forms is None or form in m.forms)
            and (m.answer_types is None or answer_type in m.answer_types)
            and (f.answer_types is None or answer_type in f.answer_types)
        )

    def target_shares(self, lang: str) -> dict[str, float]:
        """Cell key -> target share of accepted tasks in ``lang`` (sums to 1)."""
        shares: dict[str, float] = {}
        mechanics = {n: m for n, m in self.mechanics.items() if m.offered(lang)}
        m_total = sum(m.weight for m in mechanics.values())
        for m_name, m in mechanics.items():
            forms = {
                f_name: f for f_name, f in self.forms.items()
                if f.offered(lang) and any(
                    self.compatible(m_name, f_name, t) for t, a in self.answer_types.items() if a.offered(lang)
                )
            }
            f_total = sum(f.weight for f in forms.values())
            for f_name, f in forms.items():
                types = {
                    t: a for t, a in self.answer_types.items() if a.offered(lang) and self.compatible(m_name, f_name, t)
                }
                t_total = sum(a.weight for a in types.values())
                for t_name, a in types.items():
                    key = f"{m_name}/{f_name}/{t_name}"
                    shares[key] = (m.weight / m_total) * (f.weight / f_total) * (a.weight / t_total)
        return dict(sorted(shares.items()))

    def cells(self, lang: str | None = None) -> list[Cell]:
        """All compatible cells, sorted by key; ``lang`` keeps those offered in it."""
        keys: set[str] = set()
        for one in [lang] if lang else LANGS:
            keys.update(self.target_shares(one))
        return [Cell.parse(key) for key in sorted(keys)]

    def spec(self, cell: Cell, lang: str | None = None) -> CellSpec:
        for kind, name, table in (
            ("mechanic", cell.mechanic, self.mechanics),
            ("form", cell.form, self.forms),
            ("answer type", cell.answer_type, self.answer_types),
        ):
            if name not in table:
                raise TaxonomyError(f"unknown {kind} {name!r} in cell {cell.key}; known: {', '.join(sorted(table))}")
        if not self.compatible(cell.mechanic, cell.form, cell.answer_type):
            raise TaxonomyError(f"cell {cell.key} is not allowed by the taxonomy's compatibility rules")
        share = self.target_shares(lang).get(cell.key, 0.0) if lang else 0.0
        return CellSpec(
            cell=cell,
            mechanic=self.mechanics[cell.mechanic],
            form=self.forms[cell.form],
            answer_type=self.answer_types[cell.answer_type],
            share=share,
        )


def load_taxonomy(path: Path | None = None) -> Taxonomy:
    """Read a taxonomy folder (all ``*.yaml``/``*.yml`` in it) or a single file."""
    path = Path(path) if path is not None else default_taxonomy_dir()
    if path.is_dir():
        files = sorted(list(path.glob("*.yaml")) + list(path.glob("*.yml")))
    elif path.is_file():
        files = [path]
    else:
        raise TaxonomyError(f"{path}: no taxonomy here (expected a folder of *.yaml or a .yaml file)")
    if not files:
        raise TaxonomyError(f"{path}: no *.yaml files in the taxonomy folder")
    merged: dict[str, dict[str, Any]] = {"mechanics": {}, "forms": {}, "answer_types": {}}
    sources: dict[tuple[str, str], str] = {}
    for file in files:
        text = file.read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(text)
            lines = _line_index(text)
        except yaml.YAMLError as exc:
            raise TaxonomyError(f"{file}: not valid YAML: {exc}") from exc
        if data is None:
            continue
        if not isinstance(data, dict):
            raise TaxonomyError(f"{file}:1: the top level must be a mapping with mechanics/forms/answer_types")
        try:
            parsed = _TaxonomyFile.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise TaxonomyError(f"{_where(file, lines, first['loc'])}: {first['msg']}{more}") from exc
        for section in merged:
            for name, item in getattr(parsed, section).items():
                where = _where(file, lines, (section, name))
                if name in merged[section]:
                    raise TaxonomyError(f"{where}: {section[:-1]} {name!r} is defined twice (also {sources[(section, name)]})")
                if "/" in name or not name.strip():
                    raise TaxonomyError(f"{where}: names must be non-empty and must not contain '/'")
                merged[section][name] = item
                sources[(section, name)] = where
    taxonomy = Taxonomy(merged["mechanics"], merged["forms"], merged["answer_types"], sources)
    _check_selectors(taxonomy, sources)
    return taxonomy


def _check_selectors(taxonomy: Taxonomy, sources: dict[tuple[str, str], str]) -> None:
    from factory.graph.selectors.registry import SELECTORS  # lazy: only loading a taxonomy checks the names

    for name, mechanic in taxonomy.mechanics.items():
        if mechanic.selector not in SELECTORS:
            raise TaxonomyError(
                f"{sources.get(('mechanics', name), name)}.selector: unknown selector {mechanic.selector!r}; "
                f"known: {', '.join(sorted(SELECTORS))}"
            )


# -------------------------------------------------------------------- sampling
def candidate_rng(seed: int, index: int, stream: str = "cell") -> random.Random:
    """An RNG of its own for candidate ``index``: concurrent candidates never share state."""
    digest = hashlib.sha256(f"{seed}:{index}:{stream}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class NoCellsLeft(TaxonomyError):
    pass


class CellSampler:
    """Draws cells so that ACCEPTED tasks approach the taxonomy's target shares.

    A cell's weight is its target share divided by its estimated acceptance rate (so a
    cell whose drafts are rejected often is drawn more often), times a bounded boost
    for cells whose accepted count lags its target (this closes the gap the estimate
    leaves while it is still noisy). The rate estimate shrinks towards the overall rate.

    Reproducibility: candidate ``i`` draws with its own RNG derived from (seed, i), so a
    rerun with the same accepted/drawn history draws the same cell for the same index
    regardless of which candidates ran concurrently.
    """

    PRIOR = 5.0  # pseudo-draws pulling a cell's acceptance estimate to the global one
    MAX_RATE_BOOST = 10.0  # a cell is never drawn more than this times its plain share for low yield
    LAG_GAIN = 3.0

    def __init__(
        self,
        taxonomy: Taxonomy,
        seed: int,
        lang: str,
        accepted: dict[str, int] | None = None,
        *,
        drawn: dict[str, int] | None = None,
    ) -> None:
        self.taxonomy = taxonomy
        self.seed = seed
        self.lang = lang
        self.targets = taxonomy.target_shares(lang)
        if not self.targets:
            raise NoCellsLeft(f"the taxonomy offers no cell in language {lang!r}")
        self.accepted: dict[str, int] = {k: int((accepted or {}).get(k, 0)) for k in self.targets}
        # a resumed run may know accepted counts only; never let accepted exceed drawn
        self.drawn: dict[str, int] = {
            k: max(int((drawn or {}).get(k, 0)), self.accepted[k]) for k in self.targets
        }
        self._unsupported: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def unsupported(self) -> dict[str, str]:
        return dict(self._unsupported)

    def mark_unsupported(self, cell: Cell, reason: str) -> None:
        with self._lock:
            self._unsupported[cell.key] = reason

    def record_accepted(self, cell: Cell) -> None:
        with self._lock:
            self.accepted[cell.key] = self.accepted.get(cell.key, 0) + 1
            self.drawn[cell.key] = max(self.drawn.get(cell.key, 0), self.accepted[cell.key])

    def weights(self) -> dict[str, float]:
        """Current draw probabilities over the supported cells."""
        live = {k: t for k, t in self.targets.items() if k not in self._unsupported}
        if not live:
            raise NoCellsLeft(
                "every cell is unsupported by this corpus: "
                + "; ".join(f"{k}: {r}" for k, r in sorted(self._unsupported.items()))
            )
        total_share = sum(live.values())
        n_acc = sum(self.accepted[k] for k in live)
        n_drawn = sum(self.drawn[k] for k in live)
        overall = (n_acc + 1.0) / (n_drawn + 2.0)
        raw: dict[str, float] = {}
        for key, share in live.items():
            target = share / total_share
            rate = (self.accepted[key] + self.PRIOR * overall) / (self.drawn[key] + self.PRIOR)
            # trusted as far as acceptances back it: with none yet every cell reads 0/d, and a
            # full boost would keep redrawing whichever cells happened to be drawn first
            confidence = n_acc / (n_acc + self.PRIOR)
            rate_boost = min(overall / max(rate, 1e-9), self.MAX_RATE_BOOST) ** confidence
            expected = target * (n_acc + 1)
            lag = (expected - self.accepted[key]) / expected  # 1 = nothing yet, < 0 = ahead
            lag_boost = math.exp(self.LAG_GAIN * max(-1.0, min(1.0, lag)))
            raw[key] = target * rate_boost * lag_boost
        norm = sum(raw.values())
        return {k: v / norm for k, v in raw.items()}

    def draw(self, candidate_index: int) -> Cell:
        with self._lock:
            weights = self.weights()
            point = candidate_rng(self.seed, candidate_index).random()
            acc = 0.0
            chosen = next(reversed(weights))
            for key, weight in weights.items():  # sorted keys: a stable order
                acc += weight
                if point < acc:
                    chosen = key
                    break
            self.drawn[chosen] += 1
        return Cell.parse(chosen)
