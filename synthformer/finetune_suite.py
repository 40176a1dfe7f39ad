"""The fine-tuning suite: pretrain, then fine-tune (the paper's Tables 5-6 at a scale that runs here).

For each variant an MLM encoder is pretrained once (per seed) on a real corpus, then fine-tuned on
each task of a small GLUE-like suite built from real data (`SUITE`): single-sentence tasks
(sentiment, topic) and a sentence-pair task (KJV/WEB paraphrase, encoded ``[CLS] a <sep> b``).
The score of a task is its dev (validation) accuracy, as the paper reports dev scores; a variant's
row holds every task's accuracy, their mean ("accuracy", our GLUE score), the means over the
single-sentence and the sentence-pair tasks and ``pair_vs_single`` = 100 x pair / single, which the
paper's claim "pure synthesizers are weak on sentence pairs" is judged on (claims.py, Tables 5-6).

    from synthformer.finetune_suite import pretrain_finetune
    results = pretrain_finetune(["V", "R", "R+V"], out="runs/table5")

The folder ``out`` gets ``pretrain/<variant>`` (mlm runs) and ``finetune/<task>/<variant>``
(classify runs started with ``init_from``; ``-seed<S>`` appended with several seeds), then
``report.md`` (ours beside the paper's GLUE / SuperGLUE numbers, the deltas vs V, every Table 5/6
claim with its status) and, last, ``results.json``, both written atomically. Calling again with the
same ``out`` continues: finished runs (done.json) are reused, interrupted ones resume.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .claims import evaluate as evaluate_claims, finding_line, select as select_claims
from .compare import run_folder, seed_list, variant_name
from .data.sources import SOURCES
from .data.prepare import SourceNotInstalledError
from .errors import ConfigError
from .integrity import atomic_write_json, atomic_write_text
from .mixers.registry import check_slot
from .reference_results import CITATION, LABEL, TABLE5, TABLE6_SUPERGLUE, glue_summary, paper_columns
from .plan import open_trained, prepare, tokenizer_identity
from .train import TrainConfig, train

KIND = "finetune"  # the task kind of the report (reference_results.TASK_KINDS)


@dataclass(frozen=True)
class SuiteTask:
    """One task of the fine-tuning suite."""

    data: str  # registry source (classify)
    pair: bool  # sentence pairs (True) or single sentences
    stands_for: str  # the GLUE task it plays


SUITE: dict[str, SuiteTask] = {
    "sentiment": SuiteTask("sentiment", False, "SST-2: movie-review sentence sentiment (vaderSentiment ratings)"),
    "topic": SuiteTask("fortunes", False, "topic classification of Debian fortunes (single sentence; AG News-like)"),
    "paraphrase": SuiteTask("bible-paraphrase", True, "MRPC/QQP: KJV vs WEB, the same verse or a nearby other verse"),
}
DEFAULT_TASKS = tuple(SUITE)
DEFAULT_VARIANTS = ("V", "R", "D", "R+V", "D+V")
# Shared by both stages unless given: the model shape and the run mechanics.
COMMON = {"preset": "tiny", "batch_size": 16, "eval_every": 0, "final_eval_batches": 0, "log_every": 10,
          "progress": False}
PRETRAIN = {"task": "mlm", "data": "chitchat", "vocab_size": 2000, "lr": 2e-3, "eval_batches": 20}
FINETUNE = {"task": "classify", "lr": 5e-4}


def _check(variants, tasks, seeds: int) -> tuple[list[str], list[str]]:
    names = [variant_name(v) for v in variants]  # unknown names: one line listing the valid ones
    if not names or len(set(names)) != len(names):
        raise ConfigError(f"variants={names}: name each variant once (at least one)")
    for name in names:
        check_slot(name, causal=False, field="variants")  # an encoder slot
    tasks = list(tasks)
    unknown = [t for t in tasks if t not in SUITE]
    if unknown or not tasks or len(set(tasks)) != len(tasks):
        raise ConfigError(f"tasks={tasks}: give distinct tasks of the suite: {', '.join(SUITE)}")
    seed_list(0, seeds)  # seeds >= 1
    return names, tasks


def _check_installed(sources: list[str]) -> None:
    for name in sources:
        src = SOURCES.get(name)
        if src is not None and not src.installed():
            raise SourceNotInstalledError(f"data source {name!r} is not installed; run `{src.how_to_get}`")


def _run(cfg: TrainConfig, overrides: dict, data, label: str, log) -> dict:
    """Train `cfg` into cfg.out, or reuse it when finished (done.json), or resume it when started."""
    out = Path(cfg.out)
    if (out / "done.json").exists():
        log(f"{label}: finished earlier, reusing {out}")
        return json.loads((out / "done.json").read_text())
    resume = (out / "config.json").exists()
    if resume:
        data = None  # the run's own tokenizer and data (train reads them back)
    return train(dataclasses.replace(cfg, resume=resume), overrides, data=data, label=label, log=log)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(accuracies: dict[str, float], tasks: list[str]) -> dict:
    """The suite metrics of one fine-tuned variant from its per-task accuracies: acc_<task>, the
    mean ("accuracy"), the single-sentence and pair means, and pair_vs_single = 100 x pair / single."""
    metrics = {f"acc_{t}": accuracies[t] for t in tasks}
    single = _mean([accuracies[t] for t in tasks if not SUITE[t].pair])
    pair = _mean([accuracies[t] for t in tasks if SUITE[t].pair])
    metrics["accuracy"] = _mean([accuracies[t] for t in tasks])
    if single is not None:
        metrics["single"] = single
    if pair is not None:
        metrics["pair"] = pair
    if single and pair is not None:
        metrics["pair_vs_single"] = 100.0 * pair / single
    return metrics


def pretrain_finetune(variants: Sequence[str] = DEFAULT_VARIANTS, tasks: Sequence[str] = DEFAULT_TASKS,
                      out: str | Path = "runs/finetune", *, pretrain_steps: int = 400, finetune_steps: int = 200,
                      seeds: int = 1, seed: int = 0, preset: str = "tiny", device: str = "auto",
                      threads: int | None = 1, pretrain_data: str = "chitchat", finetune_examples: int | None = 4000,
                      pretrain: dict | None = None, finetune: dict | None = None, model: dict | None = None,
                      log=print) -> dict:
    """Pretrain an MLM encoder per variant (and seed) on `pretrain_data`, fine-tune it on every task of
    `tasks` (names of `SUITE`); write report.md and results.json into `out`; return the results.

    `pretrain` / `finetune` are TrainConfig overrides of either stage, `model` ModelConfig overrides of
    both (the fine-tuned classifier takes the pretrained encoder's shape; a `pooling` goes to it alone).
    `finetune_examples` caps each task's training examples (valid gets a tenth; None = all). Unknown
    variants or tasks, and sources that are not installed, fail before any training.
    """
    names, tasks = _check(variants, tasks, seeds)
    _check_installed([pretrain_data] + [SUITE[t].data for t in tasks])
    out = Path(out)
    model = dict(model or {})
    pooling = model.pop("pooling", None)
    base = {**COMMON, "preset": preset, "device": device, "threads": threads}
    pre_cfg = TrainConfig(**{**base, **PRETRAIN, "data": pretrain_data, "steps": pretrain_steps,
                             "warmup_steps": max(1, pretrain_steps // 10), "checkpoint_every": pretrain_steps,
                             **(pretrain or {})})
    fine_base = TrainConfig(**{**base, **FINETUNE, "steps": finetune_steps, "max_examples": finetune_examples,
                               "warmup_steps": max(1, finetune_steps // 10), "checkpoint_every": finetune_steps,
                               **(finetune or {})})
    seed_values = seed_list(seed, seeds)
    t0 = time.time()
    pre_data, task_data = None, {}  # shared across variants: one tokenizer, one encoding per task
    rows = []
    for i, name in enumerate(names):
        per_seed = []
        for s in seed_values:
            tag = f"[{i + 1}/{len(names)}] {name}" + (f" seed {s}" if seeds > 1 else "")
            pre_run = run_folder(out / "pretrain", name, s, seeds)
            if pre_data is None and not (pre_run / "config.json").exists():
                pre_data = prepare(pre_cfg, model, log=log)
            pre = _run(dataclasses.replace(pre_cfg, out=str(pre_run), seed=s), {**model, "attention": name},
                       pre_data, f"{tag} pretrain", log)
            tokenizer = open_trained(pre_run, log=log).tokenizer
            accuracies, chance, runs = {}, {}, {}
            for task in tasks:
                cfg = dataclasses.replace(fine_base, data=SUITE[task].data, seed=s, init_from=str(pre_run),
                                          out=str(run_folder(out / "finetune" / task, name, s, seeds)))
                key = (task, s, tokenizer_identity(tokenizer))
                if key not in task_data and not (Path(cfg.out) / "done.json").exists():
                    shape = {"max_seq_len": pre["model"]["max_seq_len"], "pooling": pooling or pre["model"]["pooling"]}
                    task_data[key] = prepare(cfg, shape, tokenizer, log=log)
                result = _run(cfg, {"pooling": pooling} if pooling else {}, task_data.get(key),
                              f"{tag} {task}", log)
                accuracies[task], runs[task] = result["valid"]["accuracy"], cfg.out
                chance[task] = result["valid"].get("chance_accuracy")
            metrics = summarize(accuracies, tasks)
            if all(chance.get(t) is not None for t in tasks):  # the majority-class baseline of the mean
                metrics["chance_accuracy"] = _mean([chance[t] for t in tasks])
            per_seed.append({"seed": s, "metrics": metrics, "pretrain": {
                "run": str(pre_run), "loss": pre["valid"]["loss"], "ppl": pre["valid"].get("ppl"),
                "tokens_per_s": pre["tokens_per_s"], "params": pre["params"]}, "runs": runs})
            log(f"{tag}: " + ", ".join(f"{t} {accuracies[t]:.1f}" for t in tasks)
                + f"; mean {metrics['accuracy']:.2f} ({time.time() - t0:.0f}s so far)")
        rows.append(_row(name, per_seed))
    found = evaluate_claims(rows, KIND, select_claims(["Table 5", "Table 6"]))
    settings = {"pretrain": pre_cfg.to_dict(), "finetune": fine_base.to_dict(), "model": model, "pooling": pooling}
    results = {"kind": KIND, "variants": rows, "tasks": {t: dataclasses.asdict(SUITE[t]) for t in tasks},
               "seeds": seed_values, "findings": found, "paper_label": LABEL, "settings": settings,
               "wall_s": time.time() - t0, "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    text = report_markdown(results)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "report.md", text)
    atomic_write_json(out / "results.json", results)  # last: marks the suite complete
    log(text)
    log(f"wrote {out / 'report.md'}, {out / 'results.json'} ({results['wall_s']:.0f}s)")
    return results


def _row(name: str, per_seed: list[dict]) -> dict:
    """A variant's result row: per-seed rows under "seeds", the mean (and sample std) of each metric."""
    keys = list(per_seed[0]["metrics"])
    mean, std = {}, {}
    for k in keys:
        values = [r["metrics"][k] for r in per_seed if r["metrics"].get(k) is not None]
        mean[k] = _mean(values)
        std[k] = statistics.stdev(values) if len(values) > 1 else None
    pre_loss = _mean([r["pretrain"]["loss"] for r in per_seed])
    return {"variant": name, "metrics": mean, "metrics_std": std, "n_seeds": len(per_seed),
            "pretrain_loss": pre_loss, "params": per_seed[0]["pretrain"]["params"],
            "tokens_per_s": _mean([r["pretrain"]["tokens_per_s"] for r in per_seed]), "seeds": per_seed}


def _fmt(value, spec: str = "{:.1f}") -> str:
    return "-" if value is None else spec.format(value)


def report_markdown(results: dict) -> str:
    """report.md: ours per task and on average beside the paper's GLUE / SuperGLUE, deltas vs V, claims."""
    rows, tasks = results["variants"], list(results["tasks"])
    pre = results["settings"]["pretrain"]
    fine = results["settings"]["finetune"]
    lines = [f"# Pretrain, then fine-tune (paper Tables 5-6): task kind {KIND}", "",
             f"MLM pretraining on `{pre['data']}` ({pre['steps']} steps x {pre['batch_size']} blocks), then "
             f"{fine['steps']} fine-tuning steps per task (at most {fine['max_examples'] or 'all'} training "
             f"examples), preset {pre['preset']}, seeds {results['seeds']}. Scores: dev (validation) accuracy, %.",
             "", "Tasks: " + "; ".join(f"**{t}** ({'pair' if results['tasks'][t]['pair'] else 'single'}: "
                                       f"{results['tasks'][t]['stands_for']})" for t in tasks), ""]
    paper_titles = [t for t in paper_columns(KIND, "V")]
    head = ["variant", *tasks, "mean", "single", "pair", "pair/single", "MLM loss", *paper_titles]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m, sd = r["metrics"], r["metrics_std"]
        ours = [_fmt(m.get(f"acc_{t}")) + (f" ± {sd[f'acc_{t}']:.1f}" if sd.get(f"acc_{t}") is not None else "")
                for t in tasks]
        ours += [_fmt(m.get("accuracy"), "{:.2f}") + (f" ± {sd['accuracy']:.2f}" if sd.get("accuracy") is not None else ""),
                 _fmt(m.get("single")), _fmt(m.get("pair")), _fmt(m.get("pair_vs_single")),
                 _fmt(r["pretrain_loss"], "{:.3f}")]
        paper = [_fmt(v) for v in paper_columns(KIND, r["variant"]).values()]
        lines.append("| " + " | ".join([r["variant"], *ours, *paper]) + " |")
    lines += ["", f"Paper columns: {LABEL}, {CITATION}; GLUE / SuperGLUE dev averages of T5 (small, en-mix; "
              f"'V' = T5 Base; T5 Base+, with the +V mixtures' parameter count: {TABLE5['T5 Base+']['glue']} / "
              f"{TABLE6_SUPERGLUE['T5 Base+']}), SST-2, and the "
              "mean of the GLUE sentence-pair tasks (MRPC, STS-B, QQP, MNLI, QNLI, RTE; two-number cells averaged).",
              ""]
    lines += _deltas(rows)
    found = results["findings"]
    lines += ["", "## The paper's Table 5-6 claims, checked here", ""]
    lines += [f"- {finding_line(f)}" for f in found] or ["- no claim could be checked (V and the variant it is "
                                                        "compared with must both be run)"]
    return "\n".join(lines) + "\n"


def _deltas(rows: list[dict]) -> list[str]:
    """Each variant minus V: our suite mean and pair/single ratio, the paper's GLUE and SuperGLUE."""
    by = {r["variant"]: r for r in rows}
    if "V" not in by:
        return ["(no V row: the deltas vs V are not shown)"]
    v = by["V"]["metrics"]
    pv = glue_summary("V")
    lines = ["## Deltas vs V (points)", "", "| variant | ours: mean | ours: pair/single | paper: GLUE | paper: SuperGLUE |",
             "|---|---|---|---|---|"]
    for name, r in by.items():
        if name == "V":
            continue
        m, p = r["metrics"], glue_summary(name)
        d = lambda a, b: None if a is None or b is None else a - b  # noqa: E731
        lines.append(f"| {name} | {_fmt(d(m.get('accuracy'), v.get('accuracy')), '{:+.2f}')} | "
                     f"{_fmt(d(m.get('pair_vs_single'), v.get('pair_vs_single')), '{:+.1f}')} | "
                     f"{_fmt(d(p and p['accuracy'], pv['accuracy']), '{:+.1f}')} | "
                     f"{_fmt(d(p and p['superglue'], pv['superglue']), '{:+.1f}')} |")
    return lines


if __name__ == "__main__":  # a quick look: python -m synthformer.finetune_suite OUT [variants] [tasks]
    args = sys.argv[1:]
    pretrain_finetune(args[1].split(",") if len(args) > 1 else DEFAULT_VARIANTS,
                      args[2].split(",") if len(args) > 2 else DEFAULT_TASKS, args[0] if args else "runs/finetune")
