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
    """`python -m synthformer[.X]` modules are entry points, like the console script: above the CLI."""
    offenders = [name for name, deps in graph().items()
                 if not name.startswith("synthformer.cli") and not name.endswith("__main__")
                 and any(d == "synthformer.cli" or d.startswith("synthformer.cli.") for d in deps)]
    assert offenders == []


def _loads_by_name(node: ast.AST, in_cli: bool) -> bool:
    """An importlib.import_module / __import__ call of a package module (or any such call in the CLI);
    synthformer._optional loads third-party packages by name, which is what it is for."""
    if not (isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id == "__import__"))):
        return False
    arg = node.args[0]
    named = isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith(("synthformer", "."))
    return in_cli or named


def test_no_subcommand_or_module_is_loaded_by_name():
    """Every import of the package is visible to the checks above (the CLI imports its sub-commands)."""
    found = [f"{file.relative_to(PACKAGE)}:{node.lineno}" for file in PACKAGE.rglob("*.py")
             for node in ast.walk(ast.parse(file.read_text()))
             if _loads_by_name(node, file.parent.name == "cli")]
    assert found == []
    assert _loads_by_name(ast.parse("importlib.import_module('synthformer.bench')").body[0].value, False)


def test_functions_are_short():
    long = []
    for file in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{file.relative_to(PACKAGE)}:{node.name} ({lines} lines)")
    assert long == []


# Who may call what: plan.py is the only place that builds a ModelConfig from a preset and overrides and
# the only place that opens a trained run. The others listed read their own files: the checkpoint format
# (model/io.py) and the Hugging Face view (hf/configuration.py) convert a stored config; the training loop
# reads its own run folder back (resume, the other ranks); bench builds fixed benchmark shapes.
CALL_SITES = {
    "ModelConfig.preset": {"plan.py", "model/config.py", "bench/cases.py"},
    "ModelConfig.from_dict": {"plan.py", "model/config.py", "model/io.py", "hf/configuration.py", "hf/modeling.py"},
    "ModelConfig": {"model/config.py"},
    "read_run_config": {"plan.py", "runs.py", "train.py", "cli/train.py"},
    "load_run_tokenizer": {"plan.py", "train.py"},
    "run_model_folder": {"plan.py"},
    "latest_checkpoint": {"runs.py", "train.py", "checkpoint.py"},
}


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f"{f.value.id}.{f.attr}"
    return None


def call_sites() -> dict[str, set[str]]:
    """{call name of CALL_SITES: the files (relative to the package) that call it}."""
    found: dict[str, set[str]] = {name: set() for name in CALL_SITES}
    for file in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call) and _call_name(node) in found:
                found[_call_name(node)].add(file.relative_to(PACKAGE).as_posix())
    return found


def test_plan_alone_builds_model_configs_from_overrides_and_opens_trained_runs():
    found = call_sites()
    strays = {name: sorted(files - CALL_SITES[name]) for name, files in found.items() if files - CALL_SITES[name]}
    assert strays == {}
    assert "plan.py" in found["ModelConfig.preset"] and "plan.py" in found["run_model_folder"]
