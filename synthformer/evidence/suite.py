"""The fine-tuning suite: pretrain, then fine-tune (the paper's Tables 5-6 at a scale that runs here).

For each variant an MLM encoder is pretrained once (per seed) on a real corpus, then fine-tuned on
each task of a small GLUE-like suite built from real data (`SUITE`): single-sentence tasks
(sentiment, topic) and a sentence-pair task (KJV/WEB paraphrase, encoded ``[CLS] a <sep> b``).
The score of a task is its dev (validation) accuracy, as the paper reports dev scores; a variant's
row holds every task's accuracy, their mean ("accuracy", our GLUE score), the means over the
single-sentence and the sentence-pair tasks ("single", "pair": the SuperGLUE claims are judged on
"pair") and ``pair_vs_single`` = 100 x pair / single, which the paper's claim "pure synthesizers are
weak on sentence pairs" is judged on (evidence/paper/claims.py, Tables 5-6).

The evidence rules of DESIGN.md section 7 apply as in `synthformer.evidence.compare`:
- every seed's metrics carry "<metric>_se" (the classify task's bootstrap SE over dev examples; the
  means' SEs by independence, pair_vs_single's by the delta method) and each row an "interval"
  (`compare.intervals`: the item SEs combined with the seed spread);
- a majority-class floor row (`floors.floor_row` on each task's data, per seed, averaged over the
  seeds) with the same metrics except pair_vs_single (a ratio of two floors is no floor), so claims
  gate on it (`judge.judge`);
- with `tune` every variant gets the same learning-rate sweep of its **pretraining**
  (`tuning.sweep`, chosen on the MLM validation loss; candidates in ``out/tune/<variant>``); the
  fine-tuning learning rate is the same fixed value for all. The chosen values are in each row's
  "tuned" and the report;
- with `reuse` (a comparison folder of the same MLM pretraining, e.g. table4's grid) its finished runs stand
  in for this suite's: a sweep candidate by its run folder or its cell (the sweep needs the score only), a
  seed's pretraining by its run folder (fine-tuning needs the weights); each is checked to have this
  suite's settings and model (`synthformer.evidence.grid.check_cell`), a mismatch is one error;
- ``T5 Base+`` (`BASE_PLUS`) is V with its FFN widened until its parameter count matches the largest
  +V mixture of the run within 1% (`matched_ffn`, from the built pretraining models), the paper's
  parameter-matched baseline.

    from synthformer.evidence.suite import pretrain_finetune
    results = pretrain_finetune(SuiteConfig(("V", "R", "R+V")), out="runs/table5")

The folder ``out`` gets ``pretrain/<variant>`` (mlm runs) and ``finetune/<task>/<variant>``
(classify runs started with ``init_from``; ``-seed<S>`` appended with several seeds), then
``report.md`` (ours beside the paper's GLUE / SuperGLUE numbers, the deltas vs V, every Table 5/6
claim with its status) and, last, ``results.json``, both written atomically. Calling again with the
same ``out`` continues: finished runs (done.json) are reused, interrupted ones resume.

Every finished run is also kept as its cell (``out/cells/<run path>.json``, `synthformer.evidence.cells`), and
floor.json and base_plus.json hold what else the report needs, so the suite can be finished over several
calls on different machines from those small files alone: a run whose folder is gone is taken from its
cell (checked to have the same settings) when its score is all that is needed - a fine-tuning run, a
sweep candidate, or a seed's pretraining once every task of that seed has finished. Only a seed whose
fine-tuning is not finished needs its encoder's weights, and pretrains again where they are gone.
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .cells import cell_file, cells_wall_s
from .paired import suite_items
from .suite_rows import (BASE_PLUS, KIND, SUITE, floor_row, report_markdown, suite_findings, summarize, task_groups,
                         variant_row)
from .grid import INTERIM, Cell, Grid, run_folder, seed_list
from .rows import variant_name
from ..data.sources import SOURCES
from ..data.prepare import SourceNotInstalledError
from ..errors import ConfigError
from ..utils.integrity import atomic_write_text, read_recorded_json, write_recorded_json
from ..mixers.registry import check_slot
from .paper.numbers import LABEL
from ..training.plan import model_config, open_trained, prepare, tokenizer_identity
from ..training.loop import TrainConfig
from ..utils.stats import is_number
from .tuning import Sweep, TuneConfig, first_seed, train_sweeps, untuned


DEFAULT_TASKS = tuple(SUITE)
DEFAULT_VARIANTS = ("V", "R", "D", "R+V", "D+V")
MATCH_TOLERANCE = 0.01  # T5 Base+'s parameters within this fraction of the mixture's
BASE_PLUS_FILE = "base_plus.json"  # out/: the matched ffn_dim (computed once, from the built models)
FLOOR_FILE = "floor.json"  # out/: the majority-class accuracy of each task and seed (computed once)
# Shared by both stages unless given: the model shape and the run mechanics.
COMMON = {"preset": "tiny", "batch_size": 16, "eval_every": 0, "final_eval_batches": 0, "log_every": 10,
          "progress": False}
PRETRAIN = {"task": "mlm", "data": "chitchat", "vocab_size": 2000, "lr": 2e-3, "eval_batches": 20}
FINETUNE = {"task": "classify", "lr": 5e-4}


def _check(variants, tasks, seeds: int, only=None) -> tuple[list[str], list[str], list[str] | None]:
    names = [v if v == BASE_PLUS else variant_name(v) for v in variants]  # unknown: one line listing the valid
    only = None if only is None else [v if v == BASE_PLUS else variant_name(v) for v in only]
    if only is not None and not set(only) <= set(names):
        raise ConfigError(f"only={sorted(set(only) - set(names))}: not among the suite's variants {names}")
    if not names or len(set(names)) != len(names):
        raise ConfigError(f"variants={names}: name each variant once (at least one)")
    for name in names:
        if name != BASE_PLUS:
            check_slot(name, causal=False, field="variants")  # an encoder slot
    if BASE_PLUS in names and not _mixtures(names):
        raise ConfigError(f"variants={names}: {BASE_PLUS} is matched to a +V mixture's parameter count; "
                          "add one (R+V or D+V)")
    tasks = list(tasks)
    unknown = [t for t in tasks if t not in SUITE]
    if unknown or not tasks or len(set(tasks)) != len(tasks):
        raise ConfigError(f"tasks={tasks}: give distinct tasks of the suite: {', '.join(SUITE)}")
    seed_list(0, seeds)  # seeds >= 1
    return names, tasks, only


def _mixtures(names: list[str]) -> list[str]:
    return [n for n in names if n != BASE_PLUS and n.endswith("+V")]


def _attention(name: str) -> str:
    """The attention spec a variant's models are built with (T5 Base+ is V)."""
    return "V" if name == BASE_PLUS else name


def _folder(name: str) -> str:
    return "T5-Base-plus" if name == BASE_PLUS else name


def _check_installed(sources: list[str]) -> None:
    for name in sources:
        src = SOURCES.get(name)
        if src is not None and not src.installed():
            raise SourceNotInstalledError(f"data source {name!r} is not installed; run `{src.how_to_get}`")


def _pre_cell(suite: "_Suite", cfg: TrainConfig, name: str, label: str, theirs: Path | None,
              weights: bool = True) -> Cell:
    """One pretraining run of `name` as a cell of the suite's grid. `theirs`: the same run in a `reuse` folder,
    taken when it finished there (its folder stands in for this one's: fine-tuning starts from it). When only its
    score is needed (`weights` False) a cell stands in for an absent run folder, here or in `reuse`."""
    return Cell(cfg, _overrides(suite, name), label, data=suite.pre_data, needs_weights=weights, theirs=theirs,
                their_grid=suite.reuse, keep_theirs=False)


def _overrides(suite: "_Suite", name: str) -> dict:
    """The model of `name`'s pretraining: the suite's shape, its attention (T5 Base+: V with the matched FFN)."""
    return {**suite.model, "attention": _attention(name),
            **({"ffn_dim": suite.base_plus["ffn_dim"]} if name == BASE_PLUS else {})}


def _theirs(suite: "_Suite", name: str, rel: Path) -> Path | None:
    """Run `rel` (under the suite folder) in the `reuse` folder; None without one, or for T5 Base+ (none there)."""
    return None if suite.reuse is None or name == BASE_PLUS else suite.reuse / rel


def _tag(suite: "_Suite", name: str, s: int) -> str:
    i = suite.names.index(name)
    return f"[{i + 1}/{len(suite.names)}] {name}" + (f" seed {s}" if suite.seeds > 1 else "")


def _settled(run: Path, cells: Path) -> bool:
    """Run `run` has finished: its done.json, or its cell where its folder is not here. A seed needs its encoder's
    weights unless every task's run is settled and has its floor."""
    return (run / "done.json").exists() or (not run.exists() and cell_file(cells, run).is_file())


def count_params(cfg: TrainConfig, overrides: dict, data) -> int:
    """Trainable parameters of the model a new run of `cfg` with `overrides` on `data` builds."""
    from ..model import build_model, count_parameters

    return count_parameters(build_model(model_config(cfg, overrides, data)))


def matched_ffn(cfg: TrainConfig, model: dict, data, mixtures: list[str]) -> dict:
    """The ffn_dim that gives V (`model` overrides, pretraining `cfg` and `data`) the parameter count of
    the largest of `mixtures`, from built models: parameters are affine in ffn_dim, so two builds give
    the slope and a third checks the match. {"ffn_dim", "params", "matched", "matched_params", "rel_diff"};
    ConfigError when no ffn_dim comes within MATCH_TOLERANCE."""
    sizes = {m: count_params(cfg, {**model, "attention": m}, data) for m in mixtures}
    matched = max(sizes, key=sizes.get)
    base_ffn = model_config(cfg, {**model, "attention": "V"}, data).ffn_dim
    p0 = count_params(cfg, {**model, "attention": "V", "ffn_dim": base_ffn}, data)
    p1 = count_params(cfg, {**model, "attention": "V", "ffn_dim": base_ffn + 1}, data)
    ffn = max(1, base_ffn + round((sizes[matched] - p0) / (p1 - p0)))
    params = count_params(cfg, {**model, "attention": "V", "ffn_dim": ffn}, data)
    rel = (params - sizes[matched]) / sizes[matched]
    if abs(rel) > MATCH_TOLERANCE:
        raise ConfigError(f"{BASE_PLUS}: no ffn_dim matches {matched}'s {sizes[matched]:,} parameters within "
                          f"{MATCH_TOLERANCE:.0%} (ffn_dim {ffn}: {params:,}); widen the model or drop {BASE_PLUS}")
    return {"ffn_dim": ffn, "params": params, "matched": matched, "matched_params": sizes[matched],
            "rel_diff": rel, "base_ffn_dim": base_ffn}


def _finetunings(suite: "_Suite", pre: dict, waiting: set) -> dict:
    """{(variant, seed): {task: (run folder, result)}}: every task fine-tuned from every finished pretraining of
    `pre` ({(variant, seed): (run folder, result)}), trained together. Each task's score is on the test split
    when the fine-tuning evaluates it (eval_test), else on validation; its floor (on that split, per task and
    seed) is recorded in `suite.floors`. A finished task is taken from its run folder or its cell: a pretraining's
    tokenizer is opened only when a task trains or its floor is not yet known. Interim: a variant with an
    unfinished task (or floor) joins `waiting`."""
    cells, data, split = {}, {}, score_split(suite.fine_base)
    pooling = {"pooling": suite.pooling} if suite.pooling else {}
    for (name, s), (pre_run, pre_result) in pre.items():
        for task in suite.tasks:
            cfg = dataclasses.replace(suite.fine_base, data=SUITE[task].data, seed=s, init_from=str(pre_run),
                                      out=str(_fine_run(suite.out, task, name, s, suite.seeds)))
            data[name, s, task] = _task_data(suite, cfg, task, pre_run, pre_result)
            cells[name, s, task] = Cell(cfg, pooling, f"{_tag(suite, name, s)} {task}", data=data[name, s, task],
                                        expect={"attention": _attention(name), **pooling})
    found, out = dict(zip(cells, suite.grid.run_all(list(cells.values())))), {}
    for (name, s, task), f in found.items():
        key = f"{task}/{s}"  # the majority class of this task's data at this seed
        if f is None or (key not in suite.floors and suite.grid.interim):
            waiting.add(name)
            continue
        if key not in suite.floors:
            suite.floors[key] = _task_floor(data[name, s, task](), split)
            write_recorded_json(suite.out, suite.out / FLOOR_FILE, suite.floors)  # its digest: out/digests.json
        out.setdefault((name, s), {})[task] = f
    return out


def _task_data(suite: "_Suite", cfg: TrainConfig, task: str, pre_run: Path, pre: dict) -> Callable:
    """() -> `task`'s data encoded with `pre_run`'s tokenizer (opened when first asked for), shared by every run
    of the same task, seed and tokenizer."""
    def task_data():
        cache = suite.cache
        if (opened := ("tokenizer", str(pre_run))) not in cache:
            cache[opened] = open_trained(pre_run, log=suite.log).tokenizer
        key = (task, cfg.seed, tokenizer_identity(cache[opened]))
        if key not in cache:
            shape = {"max_seq_len": pre["model"]["max_seq_len"], "pooling": suite.pooling or pre["model"]["pooling"]}
            cache[key] = prepare(cfg, shape, cache[opened], log=suite.log)
        return cache[key]
    return task_data


def _fine_run(out: Path, task: str, name: str, s: int, seeds: int) -> Path:
    """The run folder of `name`'s seed `s` fine-tuned on `task`."""
    return run_folder(out / "finetune" / task, _folder(name), s, seeds)


@dataclass(frozen=True)
class SuiteConfig:
    """What a fine-tuning suite trains (the settings of `pretrain_finetune`)."""
    variants: tuple[str, ...] = DEFAULT_VARIANTS  # encoder specs, and BASE_PLUS (with a +V mixture to match)
    tasks: tuple[str, ...] = DEFAULT_TASKS  # names of SUITE
    pretrain_steps: int = 400
    finetune_steps: int = 200
    seeds: int = 1
    seed: int = 0  # the first seed
    preset: str = "tiny"
    device: str = "auto"
    threads: int | None = 1
    pretrain_data: str = "chitchat"
    finetune_examples: int | None = 4000  # each task's training examples at most (None = all)
    pretrain: dict | None = None  # TrainConfig overrides of the pretraining
    finetune: dict | None = None  # ... of the fine-tuning (``eval_test``: tasks are scored on test)
    model: dict | None = None  # ModelConfig overrides of both stages (a `pooling` goes to the classifier alone)
    tune: TuneConfig | None = None  # the lr sweep of every variant's pretraining (`synthformer.evidence.tuning`)


def pretrain_finetune(config: SuiteConfig, out: str | Path = "runs/finetune", *, reuse: str | Path | None = None,
                      only: Sequence[str] | None = None, interim: bool = False, log=print,
                      executor=None) -> dict | None:
    """Pretrain an MLM encoder per variant (and seed) of `config` on its `pretrain_data`, fine-tune it on every task
    of its `tasks`; write report.md and results.json into `out`; return the results.

    `reuse`: a comparison folder of the same pretraining whose finished runs stand in (module docstring). `only`:
    run just these variants (cells kept), write no report, return None (the suite split over machines). `interim`:
    train nothing; write interim.md and interim.json from the variants whose runs have all finished (the others in
    "pending"). `executor`: how unfinished runs train (`synthformer.evidence.executors`; None: here, one after
    another); each round's runs (the sweeps, the pretrainings, the fine-tunings) train together. Fine-tuning opens
    its pretraining's folder, so Ray across machines needs a file system they share. Unknown variants, tasks or
    sources not installed fail first."""
    c = config
    names, tasks, only = _check(c.variants, c.tasks, c.seeds, only)
    if only is not None and interim:
        raise ConfigError("interim reports the finished variants and trains none: drop `only`")
    _check_installed([c.pretrain_data] + [SUITE[t].data for t in tasks])
    out, model, tune = Path(out), dict(c.model or {}), c.tune
    pooling = model.pop("pooling", None)
    base = {**COMMON, "preset": c.preset, "device": c.device, "threads": c.threads}
    pre_cfg = _stage(base, PRETRAIN, c.pretrain_steps, {"data": c.pretrain_data, **(c.pretrain or {})})
    fine_base = _stage(base, FINETUNE, c.finetune_steps, {"max_examples": c.finetune_examples, **(c.finetune or {})})
    cache: dict = {}  # shared across variants: one pretraining tokenizer, one encoding per task and seed

    def pre_data():
        if "pretrain" not in cache:
            cache["pretrain"] = prepare(pre_cfg, model, log=log)
        return cache["pretrain"]

    base_plus = _base_plus(out, names, pre_cfg, model, pre_data, log) if BASE_PLUS in names else None
    seed_values = seed_list(first_seed(c.seed, tune), c.seeds)  # after a sweep: the seeds after the candidates'
    suite = _Suite(names=names, tasks=tasks, seed_values=seed_values, out=out, model=model, pooling=pooling,
                   pre_cfg=pre_cfg, fine_base=fine_base, tune=tune, base_plus=base_plus,
                   reuse=None if reuse is None else Path(reuse), floors=_read_json(out / FLOOR_FILE), cache=cache,
                   pre_data=pre_data, log=log, t0=time.time(), grid=Grid(out, log, interim=interim, executor=executor))
    rows, pending = _train(suite, [n for n in names if only is None or n in only])
    if only is not None:
        log(f"ran {', '.join(only)} in {out}: their cells are kept; the suite without `only` writes the report")
        return None
    split = score_split(fine_base)
    results = {"kind": KIND, "variants": rows, "floor": floor_row(suite.floors, tasks, suite.seed_values, split),
               "tasks": {t: dataclasses.asdict(SUITE[t]) for t in tasks}, "seeds": suite.seed_values,
               "tuning": tune.to_dict() if tune else None, "base_plus": suite.base_plus, "paper_label": LABEL,
               "settings": {"pretrain": pre_cfg.to_dict(), "finetune": fine_base.to_dict(), "model": model,
                            "pooling": pooling, "split": split},
               "wall_s": max(time.time() - suite.t0, cells_wall_s(out)),
               "created": time.strftime("%Y-%m-%d %H:%M:%S"), **({"pending": pending} if interim else {})}
    return _judge_and_write(results, out, log)


@dataclass
class _Suite:
    """What every variant of one `pretrain_finetune` call shares."""
    names: list[str]
    tasks: list[str]
    seed_values: list[int]
    out: Path
    model: dict  # ModelConfig overrides of both stages, without pooling
    pooling: str | None
    pre_cfg: TrainConfig
    fine_base: TrainConfig
    tune: TuneConfig | None
    reuse: Path | None
    base_plus: dict | None
    floors: dict  # floor.json: {"task/seed": majority-class floor}
    cache: dict
    pre_data: Callable
    log: Callable
    t0: float
    grid: Grid  # every run of the suite is a cell of it (interim: trains nothing)

    @property
    def seeds(self) -> int:
        return len(self.seed_values)


def _train(suite: _Suite, names: list[str]) -> tuple[list[dict], list[str]]:
    """The rows of `names` (in order) and the names not finished (interim), in three rounds whose cells are
    trained together, so that an executor with several workers keeps them busy: every variant's pretraining
    sweep, then every seed's pretraining, then every task fine-tuned from every seed."""
    waiting: set[str] = set()  # interim: a variant with an unfinished cell
    tuned = _sweeps(suite, names, waiting)
    pre = _pretrainings(suite, [n for n in names if n not in waiting], tuned, waiting)
    fine = _finetunings(suite, pre, waiting)
    rows = []
    for name in names:
        if name in waiting:
            suite.log(f"{name}: not finished (interim: left out until every cell of it is there)")
            continue
        per_seed = [_seed_row(suite, name, s, *pre[name, s], fine[name, s]) for s in suite.seed_values]
        rows.append({**variant_row(name, per_seed), "tuned": tuned[name][0], "sweep": tuned[name][1],
                     "model": pre[name, suite.seed_values[-1]][1]["model"],  # the encoder's shape
                     **({"base_plus": suite.base_plus} if name == BASE_PLUS else {})})
    return rows, [n for n in names if n in waiting]


def _sweeps(suite: _Suite, names: list[str], waiting: set) -> dict[str, tuple[dict, list]]:
    """{variant: (chosen values, the candidates' scores)}: every variant's pretraining sweep (shared with `reuse`;
    T5 Base+ has its own V candidates), the candidates of every variant trained together."""
    if not suite.tune:
        return {name: (untuned(suite.pre_cfg), []) for name in names}
    roots = {name: suite.out if name == _attention(name) else suite.out / _folder(name) for name in names}
    sweeps = {name: Sweep(_attention(name), suite.pre_cfg, _overrides(suite, name), roots[name], suite.tune,
                          suite.log) for name in names}

    def candidate(name: str, planned: tuple) -> Cell:  # its score is all the sweep needs
        cfg, _, tag = planned
        return _pre_cell(suite, cfg, name, tag, _theirs(suite, name, Path(cfg.out).relative_to(roots[name])),
                         weights=False)
    return train_sweeps(sweeps, suite.grid, candidate, waiting)


def _pretrainings(suite: _Suite, names: list[str], tuned: dict, waiting: set) -> dict:
    """{(variant, seed): (run folder, result)}: every seed's pretraining with its variant's chosen values, trained
    together. A seed needs its encoder's weights unless every task's run is settled and has its floor; else its
    cell may stand in for an absent run folder."""
    cells = {}
    for name in names:
        for s in suite.seed_values:
            weights = not all(_settled(_fine_run(suite.out, t, name, s, suite.seeds), suite.out)
                              and f"{t}/{s}" in suite.floors for t in suite.tasks)
            cfg = dataclasses.replace(suite.pre_cfg, **tuned[name][0], seed=s,
                                      out=str(run_folder(suite.out / "pretrain", _folder(name), s, suite.seeds)))
            cells[name, s] = _pre_cell(suite, cfg, name, f"{_tag(suite, name, s)} pretrain",
                                       _theirs(suite, name, run_folder(Path(), name, s, suite.seeds)), weights)
    found = dict(zip(cells, suite.grid.run_all(list(cells.values()))))
    waiting.update(name for (name, _), f in found.items() if f is None)
    return {key: f for key, f in found.items() if f is not None}


def _seed_row(suite: _Suite, name: str, s: int, pre_run: Path, pre: dict, fine: dict) -> dict:
    """One seed's row: every task's score (`score_split`) and their means (`summarize`), its pretraining, and
    every task's per-item record where all kept one (`paired.suite_items`: the judge pairs the items)."""
    split = score_split(suite.fine_base)
    scored = {task: fine[task][1][split] for task in suite.tasks}
    accuracies = {task: m["accuracy"] for task, m in scored.items()}
    metrics = summarize(accuracies, suite.tasks, {task: m.get("accuracy_se") for task, m in scored.items()})
    if all(m.get("chance_accuracy") is not None for m in scored.values()):  # the majority-class baseline of the mean
        metrics["chance_accuracy"] = statistics.fmean(m["chance_accuracy"] for m in scored.values())
    suite.log(f"{_tag(suite, name, s)}: " + ", ".join(f"{t} {accuracies[t]:.1f}" for t in suite.tasks)
              + f"; mean {metrics['accuracy']:.2f} ({time.time() - suite.t0:.0f}s so far)")
    items = suite_items({task: m.get("items") for task, m in scored.items()}, task_groups(suite.tasks))
    return {"seed": s, "metrics": metrics, **({"items": items} if items else {}), "pretrain": {
        "run": str(pre_run), "loss": pre["valid"]["loss"], "ppl": pre["valid"].get("ppl"),
        "tokens_per_s": pre["tokens_per_s"], "params": pre["params"]},
        "runs": {task: str(fine[task][0]) for task in suite.tasks}, "tokens_per_s": pre["tokens_per_s"]}


def _stage(base: dict, defaults: dict, steps: int, overrides: dict) -> TrainConfig:
    """The TrainConfig of one stage (pretraining or fine-tuning): a tenth of its steps warm up, one checkpoint."""
    return TrainConfig(**{**base, **defaults, "steps": steps, "warmup_steps": max(1, steps // 10),
                          "checkpoint_every": steps, **overrides})


def _judge_and_write(results: dict, out: Path, log) -> dict:
    """The findings of Tables 5-6 on `results`, then report.md and results.json (last: marks the suite complete);
    an interim report (results["pending"]: claims naming a pending variant are left out) is interim.md and
    interim.json alone."""
    results["findings"] = suite_findings(results)
    pending = results.get("pending")
    if pending is not None and not results["variants"]:
        raise ConfigError(f"interim: no variant of the suite in {out} has finished yet (pending: {pending}); a suite "
                          "that reuses another folder's runs needs the same reuse (`--reuse`)")
    text = report_markdown(results)
    if pending is not None:
        text = (f"> **Interim report** ({results['created']}): {len(results['variants'])} variants finished; "
                f"pending: {', '.join(pending) or 'none'}. Claims naming a pending variant are left out.\n\n" + text)
    report, data = ("interim.md", INTERIM) if pending is not None else ("report.md", "results.json")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / report, text)
    write_recorded_json(out, out / data, results)
    log(text)
    log(f"wrote {out / report}, {out / data} ({results['wall_s']:.0f}s)")
    return results


def _read_json(file: Path) -> dict:
    """A file the suite computes once (floor.json, base_plus.json), verified against the suite folder's
    digests.json; {} before it is computed. floor.json: {"task/seed": {"accuracy": number, ...}}; base_plus.json:
    its matched ffn_dim and parameter counts as numbers; anything else is one line naming the file."""
    if not file.exists():
        return {}
    fix = f"delete {file} to compute it again"
    found = read_recorded_json(file.parent, file, fix)
    if file.name == FLOOR_FILE:
        bad = [k for k, v in found.items() if not (isinstance(v, dict) and is_number(v.get("accuracy")))]
    else:
        bad = [k for k in ("ffn_dim", "base_ffn_dim", "params", "matched_params", "rel_diff")
               if not is_number(found.get(k))]
    if bad:
        raise ConfigError(f"{file}: {bad[0]} is missing or not a number; {fix}")
    return found


def _base_plus(out: Path, names: list[str], pre_cfg: TrainConfig, model: dict, pre_data, log) -> dict:
    """T5 Base+'s matched FFN (`matched_ffn`), computed once into out/base_plus.json."""
    file = out / BASE_PLUS_FILE
    found = _read_json(file)
    if not found:
        found = matched_ffn(pre_cfg, model, pre_data(), _mixtures(names))
        out.mkdir(parents=True, exist_ok=True)
        write_recorded_json(out, file, found)
    log(f"{BASE_PLUS}: V with ffn_dim {found['ffn_dim']} (was {found['base_ffn_dim']}): {found['params']:,} "
        f"parameters vs {found['matched']}'s {found['matched_params']:,} ({100 * found['rel_diff']:+.2f}%)")
    return found


def score_split(fine: TrainConfig) -> str:
    """The split a fine-tuned task is scored on: "test" when the fine-tuning runs evaluate it, else "valid"."""
    return "test" if fine.eval_test else "valid"


def _task_floor(data, split: str) -> dict:
    from .floors import floor_row as data_floor

    row = data_floor("classify", data, split)
    return {"accuracy": row["metrics"]["accuracy"], "examples": row["metrics"]["examples"]}


if __name__ == "__main__":  # a quick look: python -m synthformer.evidence.suite OUT [variants] [tasks]
    args = sys.argv[1:]
    pretrain_finetune(SuiteConfig(tuple(args[1].split(",")) if len(args) > 1 else DEFAULT_VARIANTS,
                                  tuple(args[2].split(",")) if len(args) > 2 else DEFAULT_TASKS),
                      args[0] if args else "runs/finetune")
