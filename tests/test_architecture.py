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


# Who may call what: training/plan.py is the only place that builds a ModelConfig from a preset and overrides and
# the only place that opens a trained run. The others listed read their own files: the checkpoint format
# (model/io.py) and the Hugging Face view (hf/configuration.py) convert a stored config; the training loop
# reads its own run folder back (resume, the other ranks); bench builds fixed benchmark shapes.
CALL_SITES = {
    "ModelConfig.preset": {"training/plan.py", "model/config.py", "bench/cases.py"},
    "ModelConfig.from_dict": {"training/plan.py", "model/config.py", "model/io.py", "hf/configuration.py", "hf/modeling.py"},
    "ModelConfig": {"model/config.py"},
    "read_run_config": {"training/plan.py", "training/runs.py", "training/loop.py", "cli/train.py"},
    "load_run_tokenizer": {"training/plan.py", "training/loop.py"},
    "run_model_folder": {"training/plan.py"},
    "latest_checkpoint": {"training/runs.py", "training/loop.py", "training/checkpoint.py"},
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
    assert "training/plan.py" in found["ModelConfig.preset"] and "training/plan.py" in found["run_model_folder"]


# ----------------------------------------------------------------------------- docs/ARCHITECTURE.md, checked
import importlib  # noqa: E402
import re  # noqa: E402

DOC = PACKAGE.parent / "docs" / "ARCHITECTURE.md"
FILE_SUFFIXES = ("json", "jsonl", "lock", "safetensors", "pt", "md", "py", "yaml", "png")


def doc_blocks() -> tuple[str, list[str]]:
    """(the page without its ```python blocks, the ```python blocks): the worked examples name files
    that do not exist (the variant's own file), so paths and names are checked outside them."""
    text = DOC.read_text()
    python = re.findall(r"```python\n(.*?)```", text, re.S)
    return re.sub(r"```python\n.*?```", "", text, flags=re.S), python


def top_level_names() -> set[str]:
    """Top-level modules and packages of the package: {"plan", "attention", "__init__", ...}."""
    return {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def resolve(dotted: str) -> object:
    """The object a dotted name `synthformer.x.y` names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def doc_names(text: str) -> tuple[set[str], set[str], set[str]]:
    """(file paths, dotted names as `synthformer.x.y`, folders) the page mentions: every ``*.py`` path
    (under synthformer/ unless it starts with synthformer/, tests/ or docs/), every ``synthformer.x.y``,
    every ``module.name`` whose first part is a top-level module (``plan.open_trained``), every
    backticked ``folder/``."""
    files = {m for m in re.findall(r"(?<![\w./-])([\w-]+(?:/[\w-]+)*\.py)\b", text)}
    dotted = set(re.findall(r"(?<![\w./])(synthformer(?:\.[A-Za-z_]\w*)+)", text))
    tops = "|".join(sorted(top_level_names() - {"__init__", "__main__"}))
    for first, rest in re.findall(rf"(?<![\w./`-])({tops})\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", text):
        if rest.split(".")[-1] not in FILE_SUFFIXES:
            dotted.add(f"synthformer.{first}.{rest}")
    folders = set(re.findall(r"`([\w]+(?:/[\w]+)*/)`", text))
    return files, {d.rstrip(".") for d in dotted}, folders


def test_every_path_and_name_in_the_architecture_doc_exists():
    text, _ = doc_blocks()
    files, dotted, folders = doc_names(text)
    root = PACKAGE.parent
    missing = [f for f in files if not (root / f if f.split("/")[0] in ("synthformer", "tests", "docs")
                                        else PACKAGE / f).is_file()]
    missing += [f for f in folders if not (root / f if f.startswith("synthformer/") else PACKAGE / f).is_dir()]
    for name in sorted(dotted):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(name)
    assert sorted(missing) == []
    assert len(files) > 30 and len(dotted) > 30  # the extraction finds the names (a broken regex finds none)


def test_the_doc_name_checker_finds_a_wrong_name():
    files, dotted, folders = doc_names("see training.plan.open_traind, `synthformer.training.runs.nope`, attention/nope.py, `nope/`")
    assert files == {"attention/nope.py"} and folders == {"nope/"}
    assert dotted == {"synthformer.training.plan.open_traind", "synthformer.training.runs.nope"}
    for name in dotted:
        try:
            resolve(name)
        except AttributeError:
            continue
        raise AssertionError(f"{name} resolved")


def test_the_module_map_lists_every_top_level_module_once():
    text, _ = doc_blocks()
    section = text.split("## Module map")[1].split("\n## ")[0]
    listed = re.findall(r"^\| `([\w.]+/?)` \|", section, re.M)
    actual = {p.name for p in PACKAGE.glob("*.py")} | {f"{p.name}/" for p in PACKAGE.iterdir()
                                                          if p.is_dir() and p.name != "__pycache__"}
    assert len(listed) == len(set(listed))
    assert set(listed) == actual


def doc_layers() -> dict[str, int]:
    """{top-level module: its layer} from the page's ``layer N  label:  a, b, c`` lines."""
    text, _ = doc_blocks()
    layers = {}
    for n, names in re.findall(r"^layer (\d+) +[\w ]+: +(.+)$", text, re.M):
        for name in names.split(","):
            assert name.strip() not in layers, f"{name.strip()} is in two layers"
            layers[name.strip()] = int(n)
    return layers


def top_level(module: str) -> str:
    """The top-level module a module belongs to; every ``__main__`` (an entry point) counts as ``__main__``."""
    if module.endswith("__main__"):
        return "__main__"
    return module.split(".")[1] if "." in module else "__init__"


def top_level_graph() -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for name, deps in graph().items():
        g.setdefault(top_level(name), set()).update(top_level(d) for d in deps if top_level(d) != top_level(name))
    return g


def test_imports_point_down_the_layers_of_the_doc_and_top_level_modules_form_no_cycle():
    layers, g = doc_layers(), top_level_graph()
    assert set(layers) == set(g) | {"__main__"}
    upward = sorted(f"{a} (layer {layers[a]}) -> {b} (layer {layers[b]})"
                    for a, deps in g.items() for b in deps if layers[b] > layers[a])
    assert upward == []
    assert cycles(g) == []


def test_the_paths_and_choices_of_the_doc_are_the_code_s():
    from synthformer.attention.kernels.blocked import Kernel
    from synthformer.attention.kernels.paths import Path as AttentionPath, SharedProduct

    text, _ = doc_blocks()
    section = text.split("## Attention")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert sorted(rows) == sorted(p.value for p in AttentionPath)
    assert f"one of {len(AttentionPath)} paths" in section.replace("seven", "7")
    for choice in [*Kernel, *SharedProduct]:
        assert f"`{choice.value}`" in section


def test_the_worked_variant_is_the_class_tests_test_optim_runs():
    """docs/ARCHITECTURE.md's KeyPrior, statement for statement, is the class tests/test_optim.py registers
    (one registry line, nothing else) and trains."""
    _, python = doc_blocks()
    doc_class = next(ast.parse(block).body[0] for block in python if "class KeyPrior" in block)
    test_source = (PACKAGE.parent / "tests" / "test_optim.py").read_text()
    test_class = next(n for n in ast.parse(test_source).body if isinstance(n, ast.ClassDef) and n.name == "KeyPrior")
    if isinstance(test_class.body[0], ast.Expr) and isinstance(test_class.body[0].value, ast.Constant):
        test_class.body = test_class.body[1:]  # its docstring
    assert ast.unparse(doc_class) == ast.unparse(test_class).replace("torch.nn.Parameter", "nn.Parameter")
    assert 'setitem(SYNTHESIZERS, "key_prior", KeyPrior)' in test_source
    assert '`"key_prior": KeyPrior,` in `SYNTHESIZERS`' in DOC.read_text().replace("\n", " ")
