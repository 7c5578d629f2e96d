"""The package's shape: no import cycle, a generation package of small parts, one definition per name.

Imports are read from the source (ast), not by importing. The cycle rule counts every
import statement of a module: at module level, inside a function (lazy) and under
``TYPE_CHECKING`` alike. A lazy import may defer a heavy dependency; it may not hide a
cycle, because the dependency is there all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "factory"
GENERATION = PACKAGE / "generate"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """module -> the factory modules it imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            for target in targets:
                found = _resolve(target, modules) if target.startswith("factory") else None
                if found and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_factory_modules() -> None:
    graph = import_graph()
    assert "factory.generate.candidate" in graph["factory.generate.run"]  # the reader sees imports
    assert cycles(graph) == []


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            yield node.name, node.end_lineno - first + 1


@pytest.mark.parametrize("path", sorted(GENERATION.glob("*.py")), ids=lambda p: p.name)
def test_the_generation_package_is_made_of_small_parts(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{path.name} is over {MAX_MODULE_LINES} lines"
    long = [(name, lines) for name, lines in _functions(ast.parse(source)) if lines > MAX_FUNCTION_LINES]
    assert long == [], f"{path.name}: functions over {MAX_FUNCTION_LINES} lines"


def test_no_module_defines_a_name_twice() -> None:
    """A second class or function of the same name silently replaces the first."""
    twice = []
    for name, path in _modules().items():
        seen: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name in seen:
                    twice.append(f"{name}.{node.name}")
                seen.add(node.name)
    assert twice == []


def test_the_task_record_is_the_tasks_row() -> None:
    from factory.records import Task
    from factory.store.schema import table_specs

    assert list(Task.model_fields) == list(table_specs()["tasks"].columns)


def test_every_phrase_file_says_the_same_things_in_both_languages() -> None:
    """A key missing in one language would fail only when that language's feedback needs it."""
    import yaml

    files = sorted((ROOT / "factory").rglob("prompts/en/*.yaml"))
    assert files
    for en in files:
        ru = en.parent.parent / "ru" / en.name
        keys = {lang: set(yaml.safe_load(path.read_text(encoding="utf-8"))) for lang, path in (("en", en), ("ru", ru))}
        assert keys["en"] == keys["ru"], (en, keys["en"] ^ keys["ru"])
