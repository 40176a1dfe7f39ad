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

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

from .cells import cell_file, cells_wall_s, curve, load_cell, save_cell
from .judge import gate_note
from .paper.claims import check_kind, select as select_claims
from ..utils.stats import stat
from ..errors import SynthformerError
from ..utils.integrity import atomic_write_json, atomic_write_text
from ..training.lock import LOCK_FILE, RunLock
from ..mixers.registry import check_slot, display_name
from .paper.numbers import LABEL, TASK_KINDS, task_kind
from .speed import add_speed, speed_note
from .tables import floor_line, findings, findings_markdown, table_markdown, tuning_markdown
from .tuning import TuneConfig, make_tune, sweep, untuned, winner_run

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


# Keys of a config file's `compare:` section (the rest of the file is TrainConfig / ModelConfig).
COMPARE_KEYS = ("variants", "seeds", "task_kind", "claims", "tune", "gate")
SETTINGS = "settings.json"  # what a folder's results were (or are being) computed with
FLOOR = "floor.json"  # the floor row of the comparison's data (computed once)
INTERIM = "interim.json"  # an interim report's results (findings of the finished variants), beside interim.md


def variant_name(spec: str) -> str:
    """Canonical display name: the paper's short spec ("R+V") or a baseline mixer name."""
    return display_name(spec)


def seed_list(seed: int, seeds: int) -> list[int]:
    """The seeds of a comparison: seed, seed+1, ..., seeds of them."""
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise CompareError(f"--seeds={seeds} must be an integer >= 1 (the number of seeds per variant)")
    return [seed + k for k in range(seeds)]


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


def run_folder(out: Path, name: str, seed: int, seeds: int) -> Path:
    """out/<variant> with one seed (as before seeds existed); out/<variant>-seed<S> with several."""
    return out / name if seeds == 1 else out / f"{name}-seed{seed}"


# ----------------------------------------------------------------------------- the settings of a folder
def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) and v else {f"{prefix}{k}": v})
    return out


def read_json(file: Path, error=CompareError, fix: str = "choose another --out"):
    """A JSON file of a run folder; a damaged one is a one-line `error` naming it."""
    try:
        return json.loads(Path(file).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise error(f"{file} is damaged (not JSON); {fix}") from None


def check_settings(folder: Path, settings: dict, error=CompareError, record: bool = True) -> bool:
    """Record the settings `folder`'s results are made with, or check them against those recorded;
    True when the folder holds finished results (results.json) made with these settings.

    Refused (`error`, one line): a folder run with other settings (naming the keys that differ), and
    results or runs without a settings file -- reusing either would report numbers of another
    configuration under this one's name. A setting the stored file lacks counts as None: a config field
    added since, with a None default, still matches folders recorded before it (as `check_cell` does
    for runs). `compare` and `reproduce` share this check. With `record`
    false a new folder's settings are left to `record_settings` (once its inputs proved good)."""
    settings = json.loads(json.dumps(settings))  # as stored: tuples -> lists
    file, done = folder / SETTINGS, folder / "results.json"
    if file.exists():
        stored = read_json(file, error, f"choose another --out (or delete {folder} to start over)")
        theirs, mine = _flat(stored), _flat(settings)
        diff = ", ".join(f"{k} {theirs.get(k)} (now {mine.get(k)})" for k in sorted(theirs.keys() | mine.keys())
                         if theirs.get(k) != mine.get(k))
        if diff:
            raise error(f"{folder} was run with other settings: {diff}; rerun with those settings or choose another "
                        f"--out (or delete {folder} to start over)")
        return done.exists()
    if done.exists():
        raise error(f"{folder} holds results without the {SETTINGS} they were made with; choose another --out "
                    f"(or delete {folder} to start over)")
    if folder.is_dir() and any(p.name != LOCK_FILE for p in folder.iterdir()):
        raise error(f"{folder} is not empty and holds no {SETTINGS} (runs of unknown settings); choose another --out")
    if record:
        record_settings(folder, settings)
    return False


def record_settings(folder: Path, settings: dict) -> None:
    """Write ``folder/settings.json`` (see `check_settings`)."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / SETTINGS, json.dumps(settings, indent=1))


def _open_folder(out: Path) -> None:
    """Create `out` (one line, not a traceback, when it is a file or cannot be created)."""
    if out.exists() and not out.is_dir():
        raise CompareError(f"--out {out} is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CompareError(f"--out {out}: cannot create it ({e.strerror}); choose another --out") from None


# ----------------------------------------------------------------------------- result rows
SKIP_INTERVAL = ("eval_tokens", "masked_tokens", "count", "decoded")  # counts, not measurements


def intervals(per_seed: list[dict]) -> dict:
    """{metric: [lo, hi]}: the 95% interval of every metric of a variant, combining the per-seed
    bootstrap standard errors ("<metric>_se") with the spread over seeds (`stats.combine`); perplexity's
    is the loss's mapped through exp (it stays positive however far apart the seeds are)."""
    from ..utils.stats import combine

    out = {}
    for k, v in per_seed[0]["metrics"].items():
        if k.endswith("_se") or k in SKIP_INTERVAL or not _number(v):
            continue
        seeds = [r["metrics"] for r in per_seed if _number(r["metrics"].get(k))]
        if not seeds or not all(math.isfinite(m[k]) for m in seeds):
            continue  # a diverged seed (inf perplexity): no interval
        ses = [m.get(f"{k}_se") for m in seeds]
        _, lo, hi = combine([m[k] for m in seeds], [s if _number(s) and math.isfinite(s) else None for s in ses])
        if math.isfinite(lo) and math.isfinite(hi):  # one seed without an item SE has none (NaN)
            out[k] = [lo, hi]
    if "ppl" in out and "loss" in out:  # ppl = exp(loss): a t-interval of ppl itself can reach below 0
        out["ppl"] = [math.exp(v) for v in out["loss"]]
    return out


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def mean_std(per_seed: list[dict], keys) -> tuple[dict, dict]:
    """({key: mean over seeds}, {key: sample std, None with one seed}) of the per-seed "metrics" `keys`."""
    mean, std = {}, {}
    for k in keys:
        s = stat([r["metrics"][k] for r in per_seed if _number(r["metrics"].get(k))])
        mean[k], std[k] = (s.mean, s.std) if s else (None, None)
    return mean, std


def aggregate(name: str, per_seed: list[dict]) -> dict:
    """One result row of a variant from its per-seed rows: the mean of every numeric metric (and
    tokens/s, time) in "metrics"/"tokens_per_s", the sample std beside it (None with one seed),
    the 95% interval of every metric ("interval") and the per-seed rows under "seeds"."""
    mean, std = mean_std(per_seed, [k for k, v in per_seed[0]["metrics"].items() if _number(v)])
    tps = stat([r["tokens_per_s"] for r in per_seed])
    first = per_seed[0]
    return {"variant": name, "params": first["params"], "metrics": mean, "metrics_std": std,
            "interval": intervals(per_seed), "tokens_per_s": tps.mean, "tokens_per_s_std": tps.std,
            "train_time_s": stat([r["train_time_s"] for r in per_seed]).mean, "tokens": first["tokens"],
            "n_seeds": len(per_seed), "run": first["run"], "runs": [r["run"] for r in per_seed],
            "seeds": [{k: r.get(k) for k in ("seed", "metrics", "valid_metrics", "tokens_per_s", "hardware",
                                             "train_time_s", "tokens", "run")} for r in per_seed],
            "model": first["model"], "train": first["train"]}


def with_floor(results: dict) -> list[dict]:
    """The rows claims and tables read: the variants, then the floor row when there is one."""
    return results["variants"] + ([results["floor"]] if results.get("floor") else [])


# ----------------------------------------------------------------------------- the comparison
def compare(variants: list[str], train_overrides: dict, model_overrides: dict, out: Path,
            log=print, seeds: int | None = None, kind: str | None = None, claims: list[str] | None = None,
            tune: TuneConfig | None = None, reuse: bool = False, only: list[str] | None = None,
            interim: bool = False, sweeps_from: Path | None = None, gate: str | None = None) -> dict | None:
    """Train every variant `seeds` times (seeds s, s+1, ...) into ``out``; write table.md, curves.png,
    results.json.

    `train_overrides` / `model_overrides` go over `DEFAULTS` and the preset for every variant alike;
    every run shares one tokenizer and encoding of the data. `seeds`: None picks DEFAULT_SEEDS
    (SMALL_EVAL_SEEDS when the validation split has under SMALL_EVAL items). `tune`: the learning-rate
    sweep every variant gets before its runs (`synthformer.evidence.tuning`); None trains all at the base values.
    `kind` is the task kind whose paper columns and claims the report shows (default: from the task
    and data, `task_kind`); `claims` narrows the claims checked to these claim or table names.

    ``out`` records its settings (settings.json) and is locked while it runs (the lock of
    `synthformer train`); a folder of other settings is refused. A finished comparison is refused too,
    or returned when `reuse`. Returns the results dict also written to results.json.

    `sweeps_from`: another comparison folder of the same settings (say, the same grid of another reproduction)
    whose finished sweep candidates (run folders or cells, checked: `reused`) stand in for this one's.

    `only`: train just these variants' cells (sweep and seeds) and return None, writing no results: a
    grid split over machines, each running its share in a clone of the folder; once every cell is there
    (cells/, merged), the same call without `only` writes the results without training.

    `interim`: train nothing; write ``interim.md`` (no results.json) from the variants whose sweep and
    seeds have all finished, judging only the claims none of whose variants is still pending. It reads a
    folder another comparison may be writing, so it takes no lock; a finished comparison returns its results.

    `gate`: the first variant (V); when it beats the floor on no claim the floor gates (`claims.gate_note`), the
    rest are not trained. results["gated"] says so, and a claim naming them is inconclusive (`claims.evaluate`).
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
        seed_list(base.seed, seeds)
    kind = check_kind(kind) if kind else task_kind(base.task, base.data)
    chosen = select_claims(claims)  # unknown claim / table names fail before any work too
    out = Path(out)
    settings = {"variants": names, "train": {k: v for k, v in base.to_dict().items() if k not in RESUME_FREE},
                "model": dict(model_overrides), "seeds": "auto" if seeds is None else seeds,
                "tune": tune.to_dict() if tune else None, **({"gate": names[0]} if gate else {})}
    if interim:
        if only is not None:
            raise CompareError("interim reports the finished variants and trains none: drop `only`")
        if not (out / SETTINGS).exists():
            raise CompareError(f"{out} holds no comparison yet (no {SETTINGS}): nothing to report; start it first")
        if check_settings(out, settings, record=False):
            log(f"{out}: finished, see {out / 'table.md'}")
            return read_json(out / "results.json")
        return _run(names, base, dict(model_overrides), out, log, seeds, kind, chosen, tune, settings, interim=True,
                    gate=gate is not None)
    created = not out.exists()
    _open_folder(out)
    try:
        with RunLock(out):  # `train --out X` and `compare --out X` exclude each other
            if check_settings(out, settings, record=False):
                if not reuse:
                    raise CompareError(f"{out} already holds a finished comparison (results.json); choose another "
                                       "--out")
                log(f"{out}: finished earlier, reusing {out / 'results.json'}")
                return read_json(out / "results.json")
            return _run(names, base, dict(model_overrides), out, log, seeds, kind, chosen, tune, settings, only,
                        sweeps_from=sweeps_from, gate=gate is not None)
    finally:
        if created and not (out / SETTINGS).exists():  # failed before anything was recorded (e.g. bad data)
            with contextlib.suppress(OSError):
                out.rmdir()


def _run(names, base, model_overrides: dict, out: Path, log, seeds, kind, chosen, tune, settings,
         only=None, interim: bool = False, sweeps_from: Path | None = None, gate: bool = False) -> dict | None:
    from ..training.plan import prepare

    t0 = time.time()
    data = prepare(base, model_overrides, log=log)  # one tokenizer and encoding for all
    if seeds is None:
        items = eval_items(data, base)
        seeds = default_seeds(items)
        log(f"{seeds} seeds per variant (validation: {items} items; {SMALL_EVAL_SEEDS} seeds under {SMALL_EVAL})")
    seed_values_ = seed_list(base.seed, seeds)
    if not (out / SETTINGS).exists():
        record_settings(out, settings)  # the data loaded: from here on the folder holds this comparison
    log(f"{out}: {', '.join(names)} x {seeds} seed(s)" + (", each after the same learning-rate sweep" if tune else ""))
    cell = _Cells(out, data, log, reuse_only=interim, sweeps_from=sweeps_from)
    rows, pending, gated = [], [], None
    total = len(names) * seeds
    for i, name in enumerate(names):
        if only is not None and name not in only:
            continue
        try:
            if tune:
                tuned, scores = sweep(name, base, model_overrides, out, tune,
                                      lambda c, o, tag: cell.train(c, o, tag, candidate=True), log)
            else:
                tuned, scores = untuned(base), []
            per_seed = []
            for j, seed in enumerate(seed_values_):
                tag = f"[{i * seeds + j + 1}/{total}] {name}" + (f" seed {seed}" if seeds > 1 else "")
                run = run_folder(out, name, seed, seeds)
                cfg = dataclasses.replace(base, **tuned, out=str(run), seed=seed)
                result = cell.train(cfg, {**model_overrides, "attention": name}, tag,
                                    continue_from=winner_run(scores, base) if j == 0 else None)
                # with eval_test the test split is what is reported and judged (the sweep chose on validation)
                per_seed.append({"seed": seed, "params": result["params"],
                                 "metrics": _plain(result["test"] if base.eval_test else result["valid"]),
                                 "valid_metrics": _plain(result["valid"]),
                                 "tokens_per_s": result["tokens_per_s"], "hardware": result.get("hardware"),
                                 "train_time_s": result["train_time_s"],
                                 "tokens": result["tokens"], "run": str(run), "model": result["model"],
                                 "train": result["train"]})
                log(f"{tag}: {_summary(per_seed[-1], base.task)}  ({time.time() - t0:.0f}s so far)")
        except _Unfinished as e:  # interim only: this variant waits
            log(f"{name}: not finished ({e})")
            pending.append(name)
            continue
        rows.append({**aggregate(name, per_seed), "tuned": tuned, "sweep": scores})
        if gate and i == 0 and only is None and len(names) > 1:
            floor = _floor(out, base.task, kind, data, log, "test" if base.eval_test else "valid")
            note = gate_note(rows[0], [floor] if floor else [], kind, chosen)
            if note:
                gated = {"by": name, "skipped": names[1:], "note": note}
                log(f"{name} did not clear the floor ({note}): {', '.join(names[1:])} not trained (the grid's gate)")
                break
    if only is not None:  # a share of the grid: its cells are written, the results need every variant's
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
        speed = add_speed(rows, base, model_overrides, data, out, log)
    split = "test" if base.eval_test else "valid"
    floor = _floor(out, base.task, kind, data, log, split)
    results = {"task": base.task, "kind": kind, "data": base.data, "split": split, "seeds": seed_values_,
               "variants": rows,
               "floor": floor, "tuning": tune.to_dict() if tune else None, "paper_label": LABEL,
               "wall_s": max(time.time() - t0, cells_wall_s(out)), "command": sys.argv,
               "created": time.strftime("%Y-%m-%d %H:%M:%S"), **({"pending": pending} if interim else {}),
               **({"gated": gated} if gated else {}), **({"speed": speed} if speed else {})}
    results["findings"] = findings(with_floor(results), kind, chosen, gated)
    _write_report(out, base, results, log)
    return results


class _Unfinished(Exception):
    """A run an interim report needs has not finished (`compare(interim=True)`)."""


class _Cells:
    """Train or reuse one run of a comparison (a variant's seed, or a tuning candidate); every finished
    run is also kept as its cell (`synthformer.evidence.cells`), which stands in for a run folder that is absent.
    With `reuse_only` (an interim report) nothing is trained or written: a run not finished raises
    `_Unfinished`. With `sweeps_from`, a sweep candidate finished there is taken (and kept as a cell here)."""

    def __init__(self, out: Path, data, log, reuse_only: bool = False, sweeps_from: Path | None = None):
        self.out, self.data, self.log, self.reuse_only = out, data, log, reuse_only
        self.sweeps_from = sweeps_from

    def train(self, cfg, model_overrides: dict, tag: str, candidate: bool = False,
              continue_from: Path | None = None) -> dict:
        """The result of run ``cfg.out``: read from its done.json when it finished (with these
        settings, else refused), or from its cell when the run folder is absent, or (a sweep
        `candidate`) from `sweeps_from`; otherwise trained (resumed from its checkpoint when it started;
        a new one continuing run `continue_from`, the sweep's winner, when given)."""
        from ..training.runs import read_done
        from ..training.loop import train

        run = Path(cfg.out)
        if (run / "done.json").exists():
            result = read_done(run)  # verified against the run manifest; one line when damaged
            check_cell(run, result, cfg, model_overrides)
            self.log(f"{tag}: finished earlier, reusing {run}")
            if self.reuse_only:
                return result
        elif not run.exists() and (kept := load_cell(self.out, run)) is not None:
            result = kept["result"]
            check_cell(cell_file(self.out, run), result, cfg, model_overrides)
            self.log(f"{tag}: finished earlier, reusing its cell {cell_file(self.out, run)}")
            return result
        elif self.reuse_only:
            raise _Unfinished(f"{tag} has not finished")
        elif candidate and self.sweeps_from is not None and (result := reused(
                theirs := self.sweeps_from / run.relative_to(self.out), self.sweeps_from, cfg,
                model_overrides)) is not None:
            self.log(f"{tag}: finished in {self.sweeps_from}, reusing it")
            save_cell(self.out, run, result, curve(self.sweeps_from, theirs))
            return result
        else:
            resume = (run / "config.json").exists()
            data = None if resume else self.data  # resuming: train reads the run's own tokenizer and data
            source = None if resume else continue_from
            if source is not None:
                self.log(f"{tag}: the same training as the sweep's winner {source}: continuing it (this seed's "
                         "own evaluation only)")
            result = train(dataclasses.replace(cfg, resume=resume), model_overrides, data=data, label=tag,
                           log=self.log, continue_from=source)
        save_cell(self.out, run, result)
        return result


def reused(theirs: Path, cells: Path | None, cfg, model_overrides: dict) -> dict | None:
    """The result of run `theirs`, the counterpart of ``cfg.out`` in another folder of the same settings, when
    it finished there: its done.json, or (given `cells`, that folder) its cell; None when it has not. Checked
    to have been trained with `cfg` and with `model_overrides`' model: one error naming what differs."""
    from ..training.runs import read_done

    if (theirs / "done.json").exists():
        result = read_done(theirs)
    elif cells is not None and (kept := load_cell(cells, theirs)) is not None:
        result = kept["result"]
    else:
        return None
    check_cell(theirs, result, cfg, model_overrides)
    model = result.get("model") or {}
    other = [f"{k} {model.get(k)} (now {v})" for k, v in model_overrides.items() if model.get(k) != v]
    if other:
        raise CompareError(f"{theirs} trained another model: {', '.join(other)}; reuse a folder of the same settings")
    return result


def check_cell(run: Path, result: dict, cfg, model_overrides: dict) -> None:
    """A finished run (its folder ``run``, or its cell file) is reused only when it was trained with the
    config this comparison asks of it (its checkpoint cadence aside, `RESULT_FREE`)."""
    from ..training.loop import RESULT_FREE

    theirs = {k: v for k, v in (result.get("train") or {}).items() if k not in RESULT_FREE}
    mine = json.loads(json.dumps({k: v for k, v in cfg.to_dict().items() if k not in RESULT_FREE}))
    diff = [f"{k} {theirs.get(k)} (now {mine.get(k)})" for k in sorted(theirs.keys() | mine.keys())
            if theirs.get(k) != mine.get(k)]
    if (result.get("model") or {}).get("attention") != model_overrides["attention"]:
        diff.append(f"attention {(result.get('model') or {}).get('attention')} (now {model_overrides['attention']})")
    if diff:
        raise CompareError(f"{run} was trained with other settings: {', '.join(diff)}; choose another --out "
                           f"(or delete {run} to train it again)")


def _floor(out: Path, task: str, kind: str, data, log, split: str = "valid") -> dict | None:
    """The floor row of the comparison's data on the split it reports (`floors.floor_row`), computed once
    into out/floor.json."""
    from .floors import floor_row

    file = out / FLOOR
    if file.exists():
        return read_json(file, fix=f"delete {file} to compute it again").get("row")
    row = floor_row(task, data, split, kind=kind)
    atomic_write_text(file, json.dumps({"row": row}, indent=1))
    if row:
        log(f"floor ({row.get('name')}): " + ", ".join(f"{k} {v:.4g}" for k, v in row["metrics"].items()
                                                      if _number(v)))
    return row


def _write_report(out: Path, base, results: dict, log) -> None:
    """table.md, curves.png, then results.json last (it marks the comparison complete); an interim
    report (results["pending"]) is interim.md and its results, interim.json, alone."""
    from ..plots.curves import plot_curves  # matplotlib only when drawing

    kind, seeds, rows = results["kind"], results["seeds"], results["variants"]
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}..{seeds[-1]}"
    pending = results.get("pending")
    title = "# synthformer compare" if pending is None else f"# Interim ({results['created']}), synthformer compare"
    shape = shape_text(rows[0]["model"]) if rows and rows[0].get("model") else f"preset {base.preset}"
    header = (f"{title}: {base.task} on {base.data} (task kind {kind}), {shape}, "
              f"{base.steps} steps x {base.batch_size} sequences, {seed_text}\n")
    if pending is not None:
        header += (f"\nFinished: {', '.join(r['variant'] for r in rows)}. Still running or not started: "
                   f"{', '.join(pending) or 'none'}. A claim naming an unfinished variant is left out until it "
                   "finishes; the full report (table.md, results.json) comes with the last cell.\n")
    note = floor_line(with_floor(results), base.task)
    text = (header + "\n" + table_markdown(with_floor(results), base.task, kind=kind, split=results["split"]) + "\n\n"
            + (f"**{note}**\n\n" if note else "") + (f"**{gate_line(results['gated'])}**\n\n"
                                                      if results.get("gated") else "")
            + (f"{speed_note(results['speed'])}\n\n" if results.get("speed") else
               "Speed claims are judged when every variant has finished and is timed alike (`synthformer.evidence.speed`).\n\n"
               if pending is not None else "")
            + tuning_markdown(rows, results.get("tuning"))
            + f"\n\n## The paper's claims for task kind {kind}, checked here\n\n"
            + findings_markdown(results["findings"]) + "\n")
    log("\n" + text)
    if pending is not None:
        atomic_write_text(out / "interim.md", text)
        atomic_write_json(out / INTERIM, results)  # its findings for `reproduce --index`
        log(f"wrote {out / 'interim.md'} and {INTERIM}: {len(rows)} finished, {len(pending)} pending")
        return
    atomic_write_text(out / "table.md", text)
    plot_curves({r["variant"]: curve(out, Path(r["run"])) for r in rows}, out / "curves.png", base.task,
                title=f"{base.task} on {base.data} ({base.preset}, {base.steps} steps"
                      + (f", seed {base.seed} of {len(seeds)}" if len(seeds) > 1 else "") + ")")
    atomic_write_json(out / "results.json", results)
    log(f"wrote {out / 'table.md'}, {out / 'curves.png'}, {out / 'results.json'} ({results['wall_s']:.0f}s)")


def shape_text(model: dict) -> str:
    """A trained model's size in words (its resolved ModelConfig), e.g. "d=128, 3 + 3 layers, 4 heads, FFN 512"."""
    layers = model.get("num_layers")
    if model.get("kind") == "seq2seq":
        layers = f"{layers} + {model.get('num_decoder_layers') or layers}"
    return f"d={model.get('embed_dim')}, {layers} layers, {model.get('num_heads')} heads, FFN {model.get('ffn_dim')}"


def gate_line(gated: dict) -> str:
    """One line on a comparison its gate stopped (`compare`'s `gate`)."""
    return (f"Stopped after {gated['by']}, the grid's gate: {gated['note']}. Not trained at this budget: "
            f"{', '.join(gated['skipped'])}; every claim naming them is inconclusive (a claim is not learned until "
            "its variants beat the floor).")


def _plain(metrics: dict | None) -> dict:
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}


def _summary(row: dict, task: str) -> str:
    m = row["metrics"]
    shown = ", ".join(f"{k} {m[k]:.3g}" for k in ("ppl", "bleu", "rougeL", "accuracy") if k in m)
    return f"{shown}, {row['params']:,} params, {row['tokens_per_s']:,.0f} tokens/s"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="synthformer compare", description=__doc__.split("\n\n")[0],
        epilog="Any other --key=value is a TrainConfig / ModelConfig option applied to every variant "
               f"(see `synthformer train --help`). Defaults: {DEFAULTS}")
    p.add_argument("--variants", default=None,
                   help="comma-separated: synthesizer specs (V, Fix, R, FR, D, FD, R+V, D+V, R+D, ...) "
                        "and baselines (dynamicconv, lightconv, linformer)")
    p.add_argument("--task", help=f"lm | seq2seq | classify | mlm (default {DEFAULTS['task']})")
    p.add_argument("--data", help=f"source name or data file (default {DEFAULTS['data']})")
    p.add_argument("--preset", help=f"model size: tiny | small | base (default {DEFAULTS['preset']})")
    p.add_argument("--steps", type=int, help=f"optimizer steps per variant (default {DEFAULTS['steps']})")
    p.add_argument("--device", help="auto | cpu | cuda | cuda:N | mps (default auto)")
    p.add_argument("--seed", type=int, help=f"first seed (default {DEFAULTS['seed']})")
    p.add_argument("--seeds", type=int, help=f"train every variant this many times, seeds s, s+1, ... (default "
                                             f"{DEFAULT_SEEDS}; {SMALL_EVAL_SEEDS} when the validation split has "
                                             f"under {SMALL_EVAL} items); the table shows means and 95%% intervals")
    p.add_argument("--tune", action="store_true",
                   help="before its runs, give every variant the same learning-rate sweep on the validation split "
                        "(synthformer.evidence.tuning: lr x0.5/1/2/4, table multiplier 1/10, a quarter of the steps each, "
                        "and up to two steps beyond an edge lr that wins); "
                        "the chosen values are used for every seed and reported")
    p.add_argument("--gate", action="store_true",
                   help="train the first variant first and, when it beats the floor on no claim the floor gates, "
                        "stop there: the rest would be 'not learned' at this budget too")
    p.add_argument("--task-kind", dest="task_kind",
                   help=f"which paper benchmark the task stands in for: {' | '.join(TASK_KINDS)} "
                        "(default: from --task and --data)")
    p.add_argument("--claims", help="comma-separated claim or table names to check (default: all of the "
                                    "task kind), e.g. 'Table 2' or t2-lm1b-fix-vs-r")
    p.add_argument("--out", help="run folder (default runs/compare-<timestamp>); rerun with it to continue")
    p.add_argument("--config", help="YAML file of TrainConfig / ModelConfig overrides, plus an optional "
                                    f"`compare:` section ({', '.join(COMPARE_KEYS)}; tune: true or a mapping of "
                                    "synthformer.evidence.tuning.TuneConfig fields)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of `synthformer compare` (errors: one line, exit status 2)."""
    from ..training.overrides import UsageError, apply_overrides, split_cli_overrides

    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        section, items = _read_config(args.config)
        train_over, model_over = apply_overrides(items + split_cli_overrides(rest))
        for key in ("task", "data", "preset", "steps", "device", "seed"):
            if getattr(args, key) is not None:
                train_over[key] = getattr(args, key)
        if "attention" in model_over:
            raise UsageError("set the variants with --variants, not --attention")
        spec = args.variants if args.variants is not None else section.get("variants", ",".join(DEFAULT_VARIANTS))
        variants = [v.strip() for v in (spec.split(",") if isinstance(spec, str) else spec) if str(v).strip()]
        if not variants:
            raise UsageError("--variants is empty")
        seeds = args.seeds if args.seeds is not None else section.get("seeds")
        claims = args.claims if args.claims is not None else section.get("claims")
        if isinstance(claims, str):
            claims = [c for c in claims.split(",") if c.strip()]
        tune = make_tune(True if args.tune else section.get("tune"))
        out = Path(args.out or Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}")
        gate = variants[0] if args.gate or section.get("gate") else None
        compare(variants, train_over, model_over, out, seeds=seeds,
                kind=args.task_kind or section.get("task_kind"), claims=claims, tune=tune, gate=gate)
    except SynthformerError as e:
        print(f"synthformer compare: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


def _read_config(config: str | None) -> tuple[dict, list]:
    """(the `compare:` section, the other (key, value, from_text) items) of a config file, read once."""
    if not config:
        return {}, []
    from ..training.overrides import find_config_file, read_config_file

    items = read_config_file(config)
    section = next((value for key, value, _ in items if key == "compare"), None) or {}
    if not isinstance(section, dict):
        raise CompareError(f"{find_config_file(config)}: `compare:` must be a mapping of {', '.join(COMPARE_KEYS)}")
    unknown = [k for k in section if k not in COMPARE_KEYS]
    if unknown:
        raise CompareError(f"{find_config_file(config)}: unknown key(s) {unknown} in `compare:`; valid: "
                           f"{', '.join(COMPARE_KEYS)}")
    return section, [item for item in items if item[0] != "compare"]


if __name__ == "__main__":
    sys.exit(main())
