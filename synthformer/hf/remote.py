"""Remote code for an export: the modeling code written into the folder, for ``trust_remote_code=True``.

A process that never imported synthformer (and may not have it installed) loads an export with the
stock Auto classes::

    AutoModelForCausalLM.from_pretrained("exported/", trust_remote_code=True)

For that the folder holds ``configuration_synthformer.py`` and ``modeling_synthformer.py`` (named by
``auto_map`` in config.json) and the synthformer modules they need, vendored: transformers copies a
remote module and the files it imports relatively (``from .name import ...``) into one flat package,
so each module ``synthformer.a.b`` is written as ``synthformer_a_b.py`` with its relative imports
rewritten to those flat names. The code is synthformer's own, unchanged otherwise, so the remote
classes compute what ``synthformer.hf`` computes; they import only torch, transformers and the
standard library.
"""
from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the synthformer package folder
ROOTS = ("synthformer.hf.configuration", "synthformer.hf.modeling")  # what the entry files re-export
CONFIG_FILE, MODELING_FILE = "configuration_synthformer", "modeling_synthformer"
_FROM = re.compile(r"^(?P<indent>\s*)from (?P<dots>\.+)(?P<rest>[\w.]*) import (?P<names>.+)$")


def module_file(name: str) -> Path:
    """The source file of module ``name`` (``synthformer.a.b``): ``a/b.py`` or ``a/b/__init__.py``."""
    rel = Path(*name.split(".")[1:])
    return PACKAGE / rel / "__init__.py" if (PACKAGE / rel).is_dir() else (PACKAGE / rel).with_suffix(".py")


def flat_name(name: str) -> str:
    """The file stem of module ``name`` in the export folder: ``synthformer.a.b`` -> ``synthformer_a_b``."""
    return name.replace(".", "_")


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).is_dir() or (PACKAGE / rel).with_suffix(".py").is_file()


def _base(module: str, dots: int) -> str:
    """The package that ``dots`` leading dots name inside ``module``."""
    parts = module.split(".")
    package = parts if module_file(module).name == "__init__.py" else parts[:-1]
    return ".".join(package[:len(package) - dots + 1])


def rewrite(module: str, source: str) -> tuple[str, set[str]]:
    """``source`` of ``module`` with relative imports made flat, and the modules it imports."""
    out, deps = [], set()
    for line in source.splitlines():
        m = _FROM.match(line)
        if m is None:
            out.append(line)
            continue
        base, rest, indent = _base(module, len(m["dots"])), m["rest"], m["indent"]
        items = [n.strip() for n in m["names"].split("#")[0].split(",")]
        base = f"{base}.{rest}" if rest else base
        if rest and ("(" in m["names"] or not any(_is_module(f"{base}.{n.partition(' as ')[0].strip()}")
                                                  for n in items)):
            deps.add(base)
            out.append(f"{indent}from .{flat_name(base)} import {m['names']}")
            continue
        # `from . import a, b as c` or `from .pkg import a`: each name a submodule or a name of the package's __init__
        for item in items:
            name, _, alias = item.partition(" as ")
            name, alias = name.strip(), alias.strip() or name.strip()
            if _is_module(f"{base}.{name}"):
                deps.add(f"{base}.{name}")
                out.append(f"{indent}from . import {flat_name(f'{base}.{name}')} as {alias}")
            else:
                deps.add(base)
                out.append(f"{indent}from .{flat_name(base)} import {name} as {alias}")
    return "\n".join(out) + "\n", deps


def vendored_sources() -> dict[str, str]:
    """{file stem: rewritten source} of every synthformer module the remote classes need."""
    todo, sources = list(ROOTS), {}
    while todo:
        name = todo.pop()
        if flat_name(name) in sources:
            continue
        text, deps = rewrite(name, module_file(name).read_text(encoding="utf-8"))
        sources[flat_name(name)] = text
        todo.extend(sorted(deps))
    return sources


def _entry(doc: str, module: str, names: list[str], everything: list[str]) -> str:
    """An entry file: re-exports ``names`` of ``module``; lists every vendored file (transformers copies
    a remote module's files by following ``from .x import`` lines)."""
    lines = [f'"""{doc}"""', f"from .{flat_name(module)} import {', '.join(names)}  # noqa: F401", ""]
    lines += [f"from .{stem} import __name__ as _{stem}  # noqa: F401,E402" for stem in everything]
    return "\n".join(lines) + "\n"


def write_remote_code(out: Path, model_classes: dict[str, str]) -> dict[str, str]:
    """Write the vendored modules and the two entry files into ``out``; returns config.json's
    ``auto_map`` ({Auto class name: "file.Class"}) for ``model_classes`` ({Auto class: model class})."""
    sources = vendored_sources()
    for stem, text in sources.items():
        (out / f"{stem}.py").write_text(text, encoding="utf-8")
    stems = sorted(sources)
    header = "synthformer's {} for trust_remote_code=True (written by `synthformer export hf`)."
    (out / f"{CONFIG_FILE}.py").write_text(_entry(header.format("configuration"), "synthformer.hf.configuration",
                                                   ["SynthformerConfig"], stems), encoding="utf-8")
    names = sorted(set(model_classes.values()))
    (out / f"{MODELING_FILE}.py").write_text(_entry(header.format("model classes"), "synthformer.hf.modeling",
                                                    names, stems), encoding="utf-8")
    return {"AutoConfig": f"{CONFIG_FILE}.SynthformerConfig",
            **{auto: f"{MODELING_FILE}.{cls}" for auto, cls in model_classes.items()}}

