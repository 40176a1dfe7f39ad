"""`synthformer reproduce NAME`: one command per table and figure of the paper, at a budget you can run.

    synthformer reproduce --list                          # names, what each reproduces, time per budget
    synthformer reproduce table2 --budget smoke           # a pipeline check, under a minute
    synthformer reproduce table2 --budget cpu --seeds 2 --out runs/t2
    synthformer reproduce --index reproductions           # reproductions/README.md from the reports there

Each name trains its variants x seeds through `synthformer.evidence.compare` (one shared encoding per grid) and
writes into its run folder (default runs/reproduce/NAME-BUDGET): one sub-folder per grid (compare's
results.json with the paper's claims judged, table.md, curves.png, one run folder per variant), then
``report.md`` (our numbers beside the paper's, every claim of the table with its status),
``results.json`` and the name's own figures. Running the same command again continues: finished grids
and runs are reused, an interrupted run resumes from its checkpoint. A grid folder records the settings it
ran with (``settings.json``): one run with other settings (a budget changed since) is refused, not reused.
At the cpu and gpu budgets every variant first gets the same learning-rate sweep (`synthformer.evidence.tuning`)
and trains 3 seeds (5 where a validation split has under 200 items); the smoke budget does neither.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..data.sources import SOURCES
from .common import AUTO_SEEDS, BUDGET_TUNE, BUDGETS, Context, ReproduceError, write_report
from ..errors import SynthformerError
from ..utils.integrity import read_recorded_json, verify_recorded, write_recorded

MANIFEST = "reproduce.json"  # name, budget and seeds of a run folder (a rerun must match them)


def names() -> dict:
    from .registry import NAMES

    return NAMES


def get(name: str):
    """The module of a name; ReproduceError listing the names otherwise."""
    table = names()
    if name not in table:
        raise ReproduceError(f"unknown name {name!r}; valid: {', '.join(table)} (see `synthformer reproduce --list`)")
    return table[name]


def check_budget(budget: str) -> str:
    if budget not in BUDGETS:
        raise ReproduceError(f"unknown budget {budget!r}; valid: {', '.join(BUDGETS)}")
    return budget


def check_sources(spec) -> None:
    """Every registry source the name needs is here; else one line saying how to get it (before any training)."""
    for source in spec.sources:
        src = SOURCES[source]
        if not src.installed():
            raise ReproduceError(f"{spec.name} needs data source {source!r}, which is not installed; "
                                 f"run `{src.how_to_get}`")


def check_reuse(module, folder: Path, budget: str) -> None:
    """`--reuse FOLDER` names a reproduction of what `module` reuses (its REUSES) at the same budget."""
    wanted = getattr(module, "REUSES", None)
    if wanted is None:
        which = ", ".join(f"{n} reuses {m.REUSES}'s" for n, m in names().items() if getattr(m, "REUSES", None))
        raise ReproduceError(f"--reuse: {module.SPEC.name} reuses no other reproduction's runs ({which})")
    file = folder / MANIFEST
    if not file.is_file():
        raise ReproduceError(f"--reuse {folder}: no {MANIFEST} there; give the --out of a `synthformer "
                             f"reproduce {wanted} --budget {budget}` run")
    stored = read_recorded_json(folder, file, f"give the --out of a `synthformer reproduce {wanted} --budget "
                                f"{budget}` run", adopt=False)  # verified against folder/digests.json
    if (stored.get("name"), stored.get("budget")) != (wanted, budget):
        raise ReproduceError(f"--reuse {folder} holds {stored.get('name')} at budget {stored.get('budget')}; "
                             f"{module.SPEC.name} reuses {wanted} at budget {budget}")


def default_out(name: str, budget: str) -> Path:
    return Path("runs") / "reproduce" / f"{name}-{budget}"


def open_folder(out: Path, name: str, budget: str, seeds: int | None) -> None:
    """Create the run folder, or check that it holds the same reproduction (continuing it)."""
    file = out / MANIFEST
    seeds = "auto" if seeds is None else seeds
    if out.exists() and not out.is_dir():
        raise ReproduceError(f"--out {out} is a file; give a folder")
    if file.exists():
        stored = read_recorded_json(out, file, "restore it or choose another --out")  # verified: out/digests.json
        mine = {"name": name, "budget": budget, "seeds": seeds}
        theirs = {k: stored.get(k) for k in mine}
        if theirs != mine:
            diff = ", ".join(f"{k} {theirs[k]} (asked {mine[k]})" for k in mine if theirs[k] != mine[k])
            raise ReproduceError(f"{out} holds another reproduction: {diff}; rerun with its options or choose "
                                 "another --out")
        return
    if out.exists() and any(out.iterdir()):
        raise ReproduceError(f"{out} is not empty and holds no {MANIFEST}; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_recorded(out, file, json.dumps({"name": name, "budget": budget, "seeds": seeds,
                                          "started": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=1))


def reproduce(name: str, budget: str = "smoke", seeds: int | None = None, out: str | Path | None = None,
              device: str | None = None, threads: int | None = None, log=print, tune=None,
              only: list[str] | None = None, interim: bool = False, reuse: str | Path | None = None,
              executor=None) -> dict | None:
    """Run one name at a budget into `out`; returns the results dict written to out/results.json (None
    with `only`: just those variants' cells are trained, in every grid that has them, or in table5's suite; None with
    `interim`: nothing is trained, and every started grid writes interim.md from its finished variants).

    `seeds`: per variant (default the name's for the budget; None there is compare's default: 3, or 5
    for validation splits under 200 items). `tune`: a `tuning.TuneConfig`, or None for the budget's
    (the default sweep at cpu and gpu, none at smoke). `reuse`: a reproduction folder of the name this one
    reuses (the module's REUSES: table5 table4's, figures table2's) at the same budget, whose finished runs
    of the same settings stand in for this one's (table5: its pretraining sweep and seeds; figures: its
    sweep and seeds); runs not finished there are trained here. `executor`: how the grids train their cells
    (`synthformer.evidence.executors`; None: one after another in this process)."""
    module = get(name)
    spec = module.SPEC
    check_budget(budget)
    seeds = spec.seeds[budget] if seeds is None else seeds
    if seeds is not None and (not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1):
        raise ReproduceError(f"--seeds {seeds} must be an integer >= 1")
    if threads is not None and threads < 1:
        raise ReproduceError(f"--threads {threads} must be >= 1")
    check_sources(spec)
    out = Path(out) if out else default_out(name, budget)
    verify_recorded(out)  # a damaged file anywhere in it: one line now, before anything is written
    if reuse is not None:
        check_reuse(module, Path(reuse), budget)
    if interim:
        _check_interim(out)
    grids, only = only_grids(module, name, budget, out, only) if only is not None else ([], None)
    if hasattr(module, "check"):
        module.check()  # e.g. table5: the fine-tuning pipeline is installed
    open_folder(out, name, budget, seeds)
    ctx = Context(name, budget, seeds, out, device=device, threads=threads, log=log,
                  tune=BUDGET_TUNE[budget] if tune is None else tune, only=only, interim=interim,
                  reuse=None if reuse is None else Path(reuse), executor=executor)
    if interim:
        _run_interim(ctx, module)
        return None
    if only is not None:  # just these variants' cells, no report (a grid split over machines)
        for grid in grids:
            ctx.run_grid(grid)
            if hasattr(module, "after_share"):
                module.after_share(ctx, grid)  # figures: what it measures on the weights, kept in the cells
        if not hasattr(module, "grids"):
            module.run(ctx)  # a suite that keeps cells (table5) honours ctx.only
        log(f"trained the cells of {', '.join(only)} in {out}; `synthformer reproduce {name} --budget {budget} "
            f"--out {out}` writes the report once every variant's cells are there")
        return None
    t0 = time.time()
    sections, images = module.run(ctx)
    results = write_report(ctx, spec, sections, _wall(out, time.time() - t0), images)
    log(f"wrote {out / 'report.md'} and {out / 'results.json'}: {len(results['claims'])} claims")
    return results


def _check_interim(out: Path) -> None:
    """`reproduce --interim` needs a reproduction already started in `out` (so that `open_folder` only checks its
    name, budget and seeds, and writes nothing)."""
    if not (out / MANIFEST).exists():
        raise ReproduceError(f"--interim: {out} holds no reproduction yet (no {MANIFEST}); start it first")


def _run_interim(ctx: Context, module) -> None:
    """An interim.md in every grid of ``ctx.out`` that has started, or in table5's suite (read only, no lock)."""
    from ..evidence.grid import SETTINGS

    if not hasattr(module, "grids"):
        module.run(ctx)  # a suite that keeps cells (table5) honours ctx.interim
        return
    grids = _grids(module, ctx.budget, ctx.out)
    started = [g for g in grids if (ctx.out / g.key / SETTINGS).exists()]
    if not started:
        raise ReproduceError(f"--interim: no grid of {ctx.name} has started in {ctx.out}")
    for grid in grids:
        if grid in started:
            ctx.run_grid(grid)
        else:
            ctx.log(f"{ctx.out / grid.key}: not started")


def _grids(module, budget: str, out: Path) -> list:
    import inspect

    return module.grids(*(budget, out)[:len(inspect.signature(module.grids).parameters)])


def only_grids(module, name: str, budget: str, out: Path, only: list[str]) -> tuple[list, tuple]:
    """`reproduce --only`: the name's grids (none for a suite that keeps cells, table5) and the variants named
    (checked before anything is written)."""
    from ..evidence.rows import variant_name

    grids = _grids(module, budget, out) if hasattr(module, "grids") else []
    known = {variant_name(v) for g in grids for v in g.variants} if grids else set(module.variants(budget))
    wanted = tuple(v if v in known else variant_name(v) for v in only)  # unknown names fail here
    if not set(wanted) <= known:
        raise ReproduceError(f"--only {','.join(sorted(set(wanted) - known))}: not a variant of {name} "
                             f"(its variants: {', '.join(sorted(known))})")
    return grids, wanted


def _wall(out: Path, this_call: float) -> float:
    """Training + evaluation time of the runs in the folder (a continued run counts its earlier calls)."""
    total = 0.0
    for file in out.glob("*/results.json"):
        try:  # a grid's (verified against its digests.json) or the suite's
            total += float(read_recorded_json(file.parent, file, "", adopt=False).get("wall_s") or 0.0)
        except (SynthformerError, ValueError, TypeError):
            pass
    return max(total, this_call)


def list_text() -> str:
    """What `--list` prints: each name, what it reproduces, its data, variants and time per budget."""
    lines = []
    for name, module in names().items():
        s = module.SPEC
        times = ", ".join(f"{b} {s.minutes[b]}" for b in BUDGETS)
        seeds = ", ".join(f"{b} {AUTO_SEEDS if s.seeds[b] is None else s.seeds[b]}" for b in BUDGETS)
        lines += [f"{name}: {s.reproduces}", f"    data: {s.data}", f"    variants: {s.variants}",
                  f"    time (on 2 cores, one thread a run; \"a seed\" excludes the lr sweep, which adds about one "
                  f"to two seeds' time at cpu and gpu): {times}", f"    seeds per variant: {seeds}", ""]
    return "\n".join(lines).rstrip()


__all__ = ["BUDGETS", "ReproduceError", "check_budget", "default_out", "get", "list_text", "names", "reproduce"]
