"""The package's shape, checked: no import cycles (function-level imports included), nothing below the
CLI imports it, functions stay short."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "synthformer"
MAX_FUNCTION_LINES = 80


def modules() -> dict[str, Path]:
    out = {}
    for file in PACKAGE.rglob("*.py"):
        parts = list(file.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = file
    return out


def imports(name: str, file: Path, known: dict[str, Path]) -> set[str]:
    """Modules of the package that `name` imports anywhere in its file (top level or inside functions).
    ``from . import x`` counts as importing the submodule x; a module's own parent packages are left
    out (Python imports them first whatever the module does)."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            found |= set(subs) if subs else ({target} if target in known else set())
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return found - ancestors - {name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, file, known) for name, file in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_nothing_below_the_cli_imports_it():
    offenders = [name for name, deps in graph().items()
                 if not name.startswith("synthformer.cli") and name not in ("synthformer.__main__",)
                 and any(d == "synthformer.cli" or d.startswith("synthformer.cli.") for d in deps)]
    assert offenders == []


def test_functions_are_short():
    long = []
    for file in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{file.relative_to(PACKAGE)}:{node.name} ({lines} lines)")
    assert long == []
