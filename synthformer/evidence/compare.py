"""`synthformer compare`: the main job. Train the paper's variants with the same data, token budget
and seed, then tabulate them beside the paper's published numbers.

    synthformer compare                                   # tiny LMs on chitchat, 3 seeds each
    synthformer compare --preset small --steps 5000 --device cuda --tune --out runs/cmp-small
    synthformer compare --variants V,R,D+V --task seq2seq --data bible-en-es --seeds 1

The run folder (`--out`, default runs/compare-<timestamp>) records the settings it runs with
(``settings.json``) and gets one sub-folder per variant and seed (a normal training run; with
``--tune`` first the sweep's candidate runs under ``tune/``), then ``floor.json`` (the trivial
baseline of the data: `synthformer.evidence.floors`), ``table.md``, ``curves.png`` and, last,
``results.json`` (rows with per-seed results, 95% intervals, the tuned values and the resolved
configs, and the floor row). Running the same command again with the same ``--out`` continues:
finished runs are reused (from their folder, or from their cell ``cells/<run>.json``, which every
finished run leaves: `synthformer.evidence.cells`), an interrupted one resumes from its last checkpoint; the same ``--out``
with other settings is refused, and so is a folder a `synthformer train` (or another compare) is
writing: both take the folder's ``train.lock``.

While a long comparison runs (or between the sessions that finish it), ``interim`` (`reproduce
--interim`) writes ``interim.md`` (and its results, ``interim.json``, for `reproduce --index`) from the
variants whose every cell is there, trains nothing and takes no lock; a claim naming an unfinished variant
waits for it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import SynthformerError
from ..mixers.registry import check_slot
from ..training.lock import RunLock
from ..utils.integrity import atomic_write_text, read_recorded_json, write_recorded, write_recorded_json
from ..utils.stats import is_number
from .cells import cells_wall_s, curve
from .judge import gate_note
from .paper.claims import check_kind, select as select_claims
from .grid import INTERIM, SETTINGS, Cell, Grid, check_settings, record_settings, run_folder, seed_list
from .paper.numbers import LABEL, task_kind
from .rows import aggregate, gate_line, shape_text, variant_name, with_floor
from .speed import add_speed, speed_note
from .tables import (INSTALLED_SIZING, compare_table_markdown, floor_line, findings, findings_markdown,
                     table_markdown, tuning_markdown)
from ..tasks.metrics import scalars
from .tuning import Sweep, TuneConfig, first_seed, recorded_protocol, train_sweeps, untuned, winner_run

# The paper's Table 2 variants plus its strongest convolutional baseline (Table 4).
DEFAULT_VARIANTS = ("V", "Fix", "R", "FR", "D", "FD", "R+V", "D+V", "dynamicconv")
# Budget of the default run: ~50 s per variant on a 2-core CPU (819k training tokens each).
# One thread: the tiny model gains little from a second one, and two threads slow down several
# times over when anything else shares the cores (measured); pass --threads 2 on an idle machine.
DEFAULT_SEEDS = 3  # seeds per variant when none are given ...
SMALL_EVAL, SMALL_EVAL_SEEDS = 200, 5  # ... and when the validation split has fewer items than this
DEFAULTS = {"task": "lm", "data": "chitchat", "preset": "tiny", "steps": 400, "batch_size": 16,
            "vocab_size": 2000, "warmup_steps": 40, "lr": 2e-3, "eval_every": 100, "eval_batches": 20,
            "final_eval_batches": 0, "checkpoint_every": 100, "log_every": 10, "seed": 0, "threads": 1}


class CompareError(SynthformerError):
    """Bad input to a comparison (seeds, the compare section of a config, a run folder of other settings)."""


FLOOR = "floor.json"  # the floor row of the comparison's data (computed once)


def default_seeds(eval_items: int) -> int:
    """Seeds per variant when none are given: DEFAULT_SEEDS, SMALL_EVAL_SEEDS under SMALL_EVAL items."""
    return SMALL_EVAL_SEEDS if eval_items < SMALL_EVAL else DEFAULT_SEEDS


def eval_items(data, cfg) -> int:
    """Validation items (sequences / examples) a run's final evaluation reads; `cfg` a TrainConfig."""
    import torch

    n = 0
    for batch in data.task.batches(data.encoded["valid"], data.tokenizer, data.seq_len, cfg.batch_size,
                                   shuffle=False):
        n += next(v.shape[0] for v in batch.values() if isinstance(v, torch.Tensor))
    return min(n, cfg.final_eval_batches * cfg.batch_size) if cfg.final_eval_batches else n


def _open_folder(out: Path) -> None:
    """Create `out` (one line, not a traceback, when it is a file or cannot be created)."""
    if out.exists() and not out.is_dir():
        raise CompareError(f"--out {out} is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CompareError(f"--out {out}: cannot create it ({e.strerror}); choose another --out") from None


# ----------------------------------------------------------------------------- the comparison
def compare(variants: list[str], train_overrides: dict, model_overrides: dict, out: Path,
            log=print, seeds: int | None = None, kind: str | None = None, claims: list[str] | None = None,
            tune: TuneConfig | None = None, reuse: bool = False, only: list[str] | None = None,
            interim: bool = False, runs_from: Path | None = None, gate: str | None = None,
            executor=None, own_table: bool = False) -> dict | None:
    """Train every variant `seeds` times (seeds s, s+1, ...) into ``out``; write table.md, curves.png,
    results.json.

    `train_overrides` / `model_overrides` go over `DEFAULTS` and the preset for every variant alike;
    every run shares one tokenizer and encoding of the data. `seeds`: None picks DEFAULT_SEEDS
    (SMALL_EVAL_SEEDS when the validation split has under SMALL_EVAL items). `tune`: the learning-rate
    sweep every variant gets before its runs (`synthformer.evidence.tuning`); None trains all at the base values.
    `kind` is the task kind whose paper columns and claims the report shows (default: from the task
    and data, `task_kind`); `claims` narrows the claims checked to these claim or table names.

    ``out`` records its settings (settings.json) and is locked while it runs (the lock of
    `synthformer train`); a folder of other settings is refused, but more variants or seeds extend it (`_extend`).
    A finished one is returned (`reuse`) or its table printed again. Returns the results (results.json).
    `own_table`: compare's own table (`tables.compare_table_markdown`), not reproduce's (`table_markdown`).

    `runs_from`: another comparison folder of the same settings whose finished candidates and seeds stand in.

    `only`: train just these variants' cells (sweep and seeds) and return None, writing no results.

    `interim`: train nothing; write ``interim.md`` (no results.json) from the variants whose sweep and
    seeds have all finished, judging only the claims none of whose variants is still pending. It reads a
    folder another comparison may be writing, so it takes no lock; a finished comparison returns its results.

    `executor`: how unfinished cells train (`synthformer.evidence.executors`); None: here, one after another.

    `gate`: the first variant (V); when it beats the floor on no claim the floor gates (`judge.gate_note`), the
    rest are not trained. results["gated"] says so, and a claim naming them is inconclusive (`judge.judge_rows`).
    """
    from ..training.loop import RESUME_FREE, TrainConfig

    names = [variant_name(v) for v in variants]  # unknown names fail here, before any work
    if len(set(names)) != len(names):
        raise CompareError(f"variants repeat: {names}; name each variant once")
    if only is not None and not set(only) <= set(names):
        raise CompareError(f"only {sorted(set(only) - set(names))}: not among the variants {names}")
    if gate is not None and variant_name(gate) != names[0]:
        raise CompareError(f"gate {gate}: the gate is trained first; make it the first of the variants {names}")
    base = TrainConfig(**{**DEFAULTS, **train_overrides})
    # every variant must fit its slot (e.g. linformer cannot be a decoder's self-attention): checked up front
    causal = base.task == "lm" or (base.task == "seq2seq" and model_overrides.get("decoder_attention") is None)
    for name in names:
        check_slot(name, causal=causal, field="variants")
    if seeds is not None:
        seed_list(base.seed, seeds, CompareError)
    kind = check_kind(kind) if kind else task_kind(base.task, base.data)
    chosen = select_claims(claims)  # unknown claim / table names fail before any work too
    out = Path(out)
    tune = recorded_protocol(tune, out / SETTINGS, log)  # a folder keeps the sweep protocol it was started under
    settings = {"variants": names, "train": {k: v for k, v in base.to_dict().items() if k not in RESUME_FREE},
                "model": dict(model_overrides), "seeds": "auto" if seeds is None else seeds,
                "tune": tune.to_dict() if tune else None, **({"gate": names[0]} if gate else {})}
    plan = _Plan(tuple(names), base, dict(model_overrides), out, seeds, kind, chosen, tune, settings,
                 None if only is None else tuple(only), runs_from, gate is not None, executor, own_table)
    if interim:
        if only is not None:
            raise CompareError("interim reports the finished variants and trains none: drop `only`")
        if not (out / SETTINGS).exists():
            raise CompareError(f"{out} holds no comparison yet (no {SETTINGS}): nothing to report; start it first")
        if check_settings(out, settings, CompareError, record=False):
            log(f"{out}: finished, see {out / 'table.md'}")
            return read_results(out)
        return _run(replace(plan, only=None), log, interim=True)
    created = not out.exists()
    _open_folder(out)
    try:
        with RunLock(out):  # `train --out X` and `compare --out X` exclude each other
            if not reuse and only is None:
                _extend(out, settings, log)
            if check_settings(out, settings, CompareError, record=False):
                return _finished(plan, reuse, log)
            return _run(plan, log)
    finally:
        if created and not (out / SETTINGS).exists():  # failed before anything was recorded (e.g. bad data)
            with contextlib.suppress(OSError):
                out.rmdir()


def read_results(out: Path, fix: str | None = None) -> dict:
    """A finished comparison's results.json, verified against out/digests.json (one line when it differs, is
    not covered or is not a results object)."""
    fix = fix or f"delete {out / 'results.json'} to report it again"
    results = read_recorded_json(out, out / "results.json", fix)
    if not (isinstance(results.get("variants"), list) and all(isinstance(r, dict) for r in results["variants"])
            and isinstance(results.get("kind"), str)):
        raise CompareError(f"{out / 'results.json'}: not a comparison's results (variants, kind); {fix}")
    return results


def check_floor_row(row, file: Path, fix: str, error=CompareError):
    """A floor row as kept in floor.json: None, or an object whose metrics are numbers; else one line."""
    if row is None:
        return row
    if not (isinstance(row, dict) and isinstance(row.get("metrics"), dict)):
        raise error(f"{file}: its row is not a floor row (an object with metrics); {fix}")
    for k, v in row["metrics"].items():
        if not is_number(v) and v is not None:
            raise error(f"{file}: floor {k} is {v!r:.40}, not a number; {fix}")
    return row


def _finished(plan: "_Plan", reuse: bool, log) -> dict:
    """A finished comparison's results: returned as they are (`reuse`), or with its table printed again."""
    results = read_results(plan.out)
    if reuse:
        log(f"{plan.out}: finished earlier, reusing {plan.out / 'results.json'}")
    else:
        log(f"{plan.out}: finished earlier (nothing trained); its table again (add variants or seeds to extend it):")
        _report_text(plan.base, results, plan.own_table, log)
    return results


def _extend(out: Path, settings: dict, log) -> None:
    """Let a comparison grow: when `out` was run with the same settings but fewer variants or fewer seeds than
    `settings` names, record the new settings and set the finished results and speed timing aside (moved to
    results.previous.json, speed.previous.json), so the run trains only the new cells (every kept cell is reused),
    times every variant alike again and rebuilds the table. Anything else that differs (a training or model
    option, fewer variants or seeds) is left to `check_settings`, which refuses it naming the keys: those would
    change the existing cells."""
    file = out / SETTINGS
    if not file.exists():
        return
    stored = json.loads(file.read_text(encoding="utf-8"))
    mine = json.loads(json.dumps(settings))  # as stored: tuples -> lists
    if not isinstance(stored, dict) or stored == mine:
        return
    same = {k: v for k, v in stored.items() if k not in ("variants", "seeds")}
    if same != {k: v for k, v in mine.items() if k not in ("variants", "seeds")} or "gate" in stored:
        return
    old_variants, old_seeds = stored.get("variants") or [], stored.get("seeds")
    more_variants = set(old_variants) <= set(mine["variants"])
    more_seeds = old_seeds == mine["seeds"] or (isinstance(old_seeds, int) and isinstance(mine["seeds"], int)
                                                and mine["seeds"] >= old_seeds)
    if not (more_variants and more_seeds):
        return
    added = [v for v in mine["variants"] if v not in old_variants]
    log(f"{out}: extending the comparison ({', '.join(old_variants)} x {old_seeds} seed(s)) with "
        + ", ".join(filter(None, [f"variant(s) {', '.join(added)}" if added else "",
                                  f"{mine['seeds']} seeds" if mine["seeds"] != old_seeds else ""]))
        + "; the finished cells are reused, only the new ones train"
        + ("; from 1 seed the run folders are named per seed, so seed "
           f"{mine['train'].get('seed')} trains again" if old_seeds == 1 and mine["seeds"] != 1 else ""))
    for name in ("results.json", "speed.json"):  # the table is rebuilt, every variant timed alike again
        if (out / name).exists():
            (out / name).replace(out / name.replace(".json", ".previous.json"))
    record_settings(out, settings)


@dataclass(frozen=True)
class _Plan:
    """One comparison, resolved and checked: what `_run` trains and reports."""
    names: tuple[str, ...]
    base: object  # the TrainConfig every variant starts from
    model: dict  # ModelConfig overrides of every variant (without "attention")
    out: Path
    seeds: int | None  # None: from the validation split's size (`default_seeds`)
    kind: str  # the task kind whose paper columns and claims the report shows
    claims: tuple  # the claims checked
    tune: TuneConfig | None
    settings: dict  # settings.json
    only: tuple[str, ...] | None = None
    runs_from: Path | None = None
    gate: bool = False
    executor: object = None  # how the grid trains its cells (synthformer.evidence.executors); None: in this process
    own_table: bool = False  # compare's own table format (`compare`'s `own_table`), not reproduce's


def _run(plan: _Plan, log, interim: bool = False) -> dict | None:
    from ..training.plan import prepare

    t0, base, out, names = time.time(), plan.base, plan.out, plan.names
    data = prepare(base, plan.model, log=log)  # one tokenizer and encoding for all
    seeds = plan.seeds
    if seeds is None:
        items = eval_items(data, base)
        seeds = default_seeds(items)
        log(f"{seeds} seeds per variant (validation: {items} items; {SMALL_EVAL_SEEDS} seeds under {SMALL_EVAL})")
    if not (out / SETTINGS).exists():
        record_settings(out, plan.settings)  # the data loaded: from here on the folder holds this comparison
    log(f"{out}: {', '.join(names)} x {seeds} seed(s)"
        + (", each after the same learning-rate sweep" if plan.tune else ""))
    grid = Grid(out, log, interim=interim, executor=plan.executor)
    chosen, gated = plan.claims, None
    todo = [n for n in names if plan.only is None or n in plan.only]
    first = todo[:1] if plan.gate and plan.only is None and len(names) > 1 else []
    rows, pending = _train_variants(plan, grid, data, first, seeds, t0, log)  # the gate alone first
    if first and rows:
        floor = _floor(out, base.task, plan.kind, data, log, "test" if base.eval_test else "valid")
        note = gate_note(rows[0], [floor] if floor else [], plan.kind, chosen)
        if note:
            gated = {"by": names[0], "skipped": list(names[1:]), "note": note}
            log(f"{names[0]} did not clear the floor ({note}): {', '.join(names[1:])} not trained (the grid's gate)")
    if gated is None:
        more_rows, more_pending = _train_variants(plan, grid, data, [n for n in todo if n not in first], seeds, t0,
                                                  log)
        rows, pending = rows + more_rows, pending + more_pending
    if plan.only is not None:  # a share of the grid: its cells are written, the results need every variant's
        return None
    speed = None
    if interim:
        if not rows:
            raise CompareError(f"{out}: no variant has finished its sweep and every seed yet (pending: "
                               f"{', '.join(pending)}); nothing to report")
        # a claim is judged once all of its variants that this comparison trains are finished; a speed claim
        # once they are timed alike, at the end (`synthformer.evidence.speed`)
        chosen = tuple(c for c in chosen if not {c.subject, *c.others} & set(pending) and c.metric != "tokens_per_s")
    else:
        speed = add_speed(rows, base, plan.model, data, out, log)
    split = "test" if base.eval_test else "valid"
    floor = _floor(out, base.task, plan.kind, data, log, split)
    results = {"task": base.task, "kind": plan.kind, "data": base.data, "split": split,
               "seeds": seed_list(first_seed(base.seed, plan.tune), seeds), "variants": rows,
               "floor": floor, "tuning": plan.tune.to_dict() if plan.tune else None, "paper_label": LABEL,
               "wall_s": max(time.time() - t0, cells_wall_s(out)), "command": sys.argv,
               "created": time.strftime("%Y-%m-%d %H:%M:%S"), **({"pending": pending} if interim else {}),
               **({"gated": gated} if gated else {}), **({"speed": speed} if speed else {})}
    results["findings"] = findings(with_floor(results), plan.kind, chosen, gated)
    _write_report(out, base, results, log, plan.own_table)
    return results


def _train_variants(plan: _Plan, grid: Grid, data, names: list[str], seeds: int, t0: float,
                    log) -> tuple[list[dict], list[str]]:
    """The rows of `names` (in order) and the names not finished (interim): their sweeps first, the candidates of
    every variant trained together, then every seed of every variant together, each run a cell of the grid
    (so an executor with several workers keeps them busy)."""
    base, out = plan.base, plan.out
    tuned = {name: (untuned(base), []) for name in names}
    waiting: set[str] = set()  # interim: a variant with an unfinished cell
    sweeps = {name: Sweep(name, base, plan.model, out, plan.tune, log) for name in names} if plan.tune else {}
    tuned.update(train_sweeps(sweeps, grid, lambda _, c: _candidate(plan, data, *c), waiting))
    total, cells = len(plan.names) * seeds, []
    for name in (n for n in names if n not in waiting):
        i, (values, scores) = plan.names.index(name), tuned[name]
        for j, seed in enumerate(seed_list(first_seed(base.seed, plan.tune), seeds)):
            tag = f"[{i * seeds + j + 1}/{total}] {name}" + (f" seed {seed}" if seeds > 1 else "")
            cfg = dataclasses.replace(base, **values, out=str(run_folder(out, name, seed, seeds)), seed=seed)
            repeats = seed == base.seed  # the old protocol: the first seed is the candidates' (`tuning.first_seed`)
            cells.append(Cell(cfg, {**plan.model, "attention": name}, tag, data=lambda: data,
                              continue_from=winner_run(scores, base) if repeats else None, **_shared(plan, cfg)))
    found = dict(zip((c.label for c in cells), grid.run_all(cells)))
    rows = []
    for name in names:
        mine = [c for c in cells if c.model["attention"] == name]
        if name in waiting or any(found[c.label] is None for c in mine):
            log(f"{name}: not finished (interim: left out until every cell of it is there)")
            waiting.add(name)
            continue
        per_seed = [_seed_row(c, *found[c.label], base) for c in mine]
        for c, row in zip(mine, per_seed):
            log(f"{c.label}: {_summary(row, base.task)}  ({time.time() - t0:.0f}s so far)")
        rows.append({**aggregate(name, per_seed), "tuned": tuned[name][0], "sweep": tuned[name][1]})
    return rows, [n for n in names if n in waiting]


def _candidate(plan: _Plan, data, cfg, model: dict, tag: str) -> Cell:
    """A sweep candidate as a cell (taken from `runs_from` when it finished there)."""
    return Cell(cfg, model, tag, data=lambda: data, **_shared(plan, cfg))


def _shared(plan: _Plan, cfg) -> dict:
    """The Cell fields that take run ``cfg.out`` from `runs_from`, its counterpart there, when it finished."""
    if plan.runs_from is None:
        return {}
    return {"theirs": plan.runs_from / Path(cfg.out).relative_to(plan.out), "their_grid": plan.runs_from}


def _seed_row(cell: Cell, run: Path, result: dict, base) -> dict:
    """One seed's row; with eval_test the test split is what is reported and judged (the sweep chose on
    validation)."""
    scored = result["test"] if base.eval_test else result["valid"]
    return {"seed": cell.cfg.seed, "params": result["params"], "metrics": scalars(scored),
            **({"items": scored["items"]} if isinstance(scored.get("items"), dict) else {}),  # per item: paired gaps
            "valid_metrics": scalars(result["valid"]), "tokens_per_s": result["tokens_per_s"],
            "hardware": result.get("hardware"), "train_time_s": result["train_time_s"], "tokens": result["tokens"],
            "run": str(run), "model": result["model"], "train": result["train"]}


def _floor(out: Path, task: str, kind: str, data, log, split: str = "valid") -> dict | None:
    """The floor row of the comparison's data on the split it reports (`floors.floor_row`), computed once
    into out/floor.json."""
    from .floors import floor_row

    file = out / FLOOR
    if file.exists():
        fix = f"delete {file} to compute it again"
        stored = read_recorded_json(out, file, fix)  # verified against out/digests.json
        if "row" not in stored:
            raise CompareError(f"{file}: lacks its row; {fix}")
        return check_floor_row(stored["row"], file, fix)
    row = floor_row(task, data, split, kind=kind)
    write_recorded(out, file, json.dumps({"row": row}, indent=1))
    if row:
        log(f"floor ({row.get('name')}): " + ", ".join(f"{k} {v:.4g}" for k, v in row["metrics"].items()
                                                      if is_number(v)))
    return row


def _report_text(base, results: dict, own_table: bool = False, log=None) -> str:
    """The report of a comparison (table.md / interim.md) as Markdown, logged when `log` is given;
    `own_table`: compare's own table and findings wording (`compare`), else reproduce's."""
    kind, seeds, rows = results["kind"], results["seeds"], results["variants"]
    pending = results.get("pending")
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}..{seeds[-1]}"
    title = "# synthformer compare" if pending is None else f"# Interim ({results['created']}), synthformer compare"
    shape = shape_text(rows[0]["model"]) if rows and rows[0].get("model") else f"preset {base.preset}"
    data = f"{base.data} as {base.tokenizer} tokens" if own_table and base.tokenizer != "bpe" else base.data
    header = (f"{title}: {base.task} on {data} (task kind {kind}), {shape}, "
              f"{base.steps} steps x {base.batch_size} sequences, {seed_text}\n")
    if pending is not None:
        header += (f"\nFinished: {', '.join(r['variant'] for r in rows)}. Still running or not started: "
                   f"{', '.join(pending) or 'none'}. A claim naming an unfinished variant is left out until it "
                   "finishes; the full report (table.md, results.json) comes with the last cell.\n")
    note = floor_line(with_floor(results), base.task, **({"sizing": INSTALLED_SIZING} if own_table else {}))
    table = compare_table_markdown if own_table else table_markdown
    text = (header + "\n" + table(with_floor(results), base.task, kind=kind, split=results["split"]) + "\n\n"
            + (f"**{note}**\n\n" if note else "") + (f"**{gate_line(results['gated'])}**\n\n"
                                                      if results.get("gated") else "")
            + (f"{speed_note(results['speed'])}\n\n" if results.get("speed") else
               "Speed claims are judged when every variant has finished and is timed alike (`synthformer.evidence.speed`).\n\n"
               if pending is not None else "")
            + tuning_markdown(rows, results.get("tuning"), results.get("seeds"))
            + f"\n\n## The paper's claims for task kind {kind}, checked here\n\n"
            + findings_markdown(results["findings"], words=own_table) + "\n")
    if log is not None:
        log("\n" + text)
    return text


def _write_report(out: Path, base, results: dict, log, own_table: bool = False) -> None:
    """table.md, curves.png, then results.json last (it marks the comparison complete); an interim
    report (results["pending"]) is interim.md and its results, interim.json, alone."""
    from ..plots.curves import plot_curves  # matplotlib only when drawing

    seeds, rows, pending = results["seeds"], results["variants"], results.get("pending")
    text = _report_text(base, results, own_table, log)
    if pending is not None:
        atomic_write_text(out / "interim.md", text)
        write_recorded_json(out, out / INTERIM, results)  # its findings for `reproduce --index`
        log(f"wrote {out / 'interim.md'} and {INTERIM}: {len(rows)} finished, {len(pending)} pending")
        return
    atomic_write_text(out / "table.md", text)
    if own_table:  # every seed of every variant, and the floor line
        plot_curves({r["variant"]: tuple(curve(out, Path(run)) for run in r.get("runs") or [r["run"]]) for r in rows},
                    out / "curves.png", base.task, floor=results.get("floor"),
                    title=f"{base.task} on {base.data} ({base.preset}, {base.steps} steps, {len(seeds)} seed(s))")
    else:
        plot_curves({r["variant"]: curve(out, Path(r["run"])) for r in rows}, out / "curves.png", base.task,
                    title=f"{base.task} on {base.data} ({base.preset}, {base.steps} steps"
                          + (f", seed {seeds[0]} of {len(seeds)}" if len(seeds) > 1 else "") + ")")
    write_recorded_json(out, out / "results.json", results)
    log(f"wrote {out / 'table.md'}, {out / 'curves.png'}, {out / 'results.json'} ({results['wall_s']:.0f}s)")


def _summary(row: dict, task: str) -> str:
    m = row["metrics"]
    shown = ", ".join(f"{k} {m[k]:.3g}" for k in ("ppl", "bleu", "rougeL", "accuracy") if k in m)
    return f"{shown}, {row['params']:,} params, {row['tokens_per_s']:,.0f} tokens/s"


