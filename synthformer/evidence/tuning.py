"""The tuning protocol: the same short learning-rate sweep for every variant of a comparison.

A claim about attention variants is fair only when every variant was tuned alike (DESIGN.md section 7;
issue 17: a 10x table learning rate tuned on R's perplexity alone favoured the synthesizers, and V and
the baselines got no tuning at all). The protocol, used by `synthformer compare --tune` and by
`synthformer reproduce` at its cpu and gpu budgets (one code path, `sweep`):

1. Candidates: the peak learning rate at ``lr_mults`` x the comparison's base lr (default 0.5, 1, 2,
   4), crossed with the warm-up steps ``warmups`` (default: the base warm-up alone) and, for variants
   with trainable position tables (R, FR, D, FD and their mixtures), the tables' multiplier
   ``table_lr_mults`` (default 1 and 10; 10 was the default tuned on R alone, now one swept value).
   Variants without such tables (V, Fix, the convolutions, Linformer) have nothing that multiplier
   acts on; with ``equal_candidates`` (the default) they get as many candidates as the others from a
   finer lr grid instead (`lr_grid`: with two table multipliers, half-octave steps 0.5, 0.71, 1, ...,
   5.66), so that no variant's best-of is a best-of more (issue 48: 8 candidates for R+V against 4 for V).
2. Each candidate trains ``fraction`` of the budget's steps (default a quarter, at least
   ``min_steps``) from the comparison's first seed, with the budget's schedule over those steps, and
   is scored by its loss on the validation split (final evaluation; every task reports a loss; no
   decoding). The lowest loss wins; a tie goes to the earlier candidate (the smaller lr).
3. A winner at an edge of the lr grid (its largest or smallest lr) may not be the best: one candidate
   beyond that edge is trained (with ``edge_spacing``, the default, the variant's own lr grid continued one
   step: half-octave steps where it is cut finer, else twice the largest lr or half the smallest; with the
   winner's warm-up and table multiplier), and again while the new one wins, at most ``edge_steps`` times
   (default 2). Before ``edge_spacing`` (issue 48's sessions) a finer grid stepped beyond by twice (half)
   its edge, skipping the half-octave between.
   So every variant's choice is inside the lrs it was tried at, or the report says it is not.
   A classifier's sweep in which no candidate beats the validation split's majority class chose on noise
   (lra text at a quarter of its steps did): it is logged and the report names it (`at_chance`).
4. Every seed of the variant then trains the full budget with the chosen values. They are stored in
   the result row (``"tuned"``) with every candidate's score (``"sweep"``) and printed in the reports.
   With ``fresh_seeds`` (the default) the reported seeds are the ones after the seed the candidates
   trained on (`first_seed`: seeds 1, 2, 3 after a sweep on seed 0), each trained from scratch: no reported
   run is the sweep's winner or shares its initialisation and data order (issue 48: with whole-run
   candidates seed 0 *was* the winner, a best-of-8, and its gap to seeds 1-2 favoured the variants with
   more candidates).

Folders started before these options (their settings lack them: None) keep the protocol they were run
with (`recorded_protocol`): seed 0 is the first reported seed, and a whole-run winner is continued as it
(`winner_run`; `train`'s continue_from); variants without tables get 4 candidates. The reports say which
protocol a grid used (`protocol_text`).

Cost with the defaults: every variant trains 8 candidates x 1/4 of the budget (two budgets' steps), one
or two more where the choice lands on an edge, beside its seeds' full runs (3 by default): about 1.7-1.8x
the time of the untuned seeds. Sized for the
tiny CPU models of `reproduce --budget cpu` (a quarter of 800-2,000 steps is enough to tell a diverging or
crawling lr from a working one).

The sweep selects on the validation split. A comparison with ``eval_test`` (every `reproduce` grid at
its cpu and gpu budgets) reports and judges the test split, which the selection never saw; without it
the tables report the validation split the sweep chose on, and the (small) optimism this adds is the
same for every variant. Candidate runs live in ``OUT/tune/<variant>/<candidate>``; a rerun
reuses finished ones and resumes an interrupted one from its last checkpoint (the comparison's
``checkpoint_every``: a whole-run candidate killed near its end loses minutes, not the run).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

TUNED_KEYS = ("lr", "warmup_steps", "table_lr_mult")  # the TrainConfig fields the sweep chooses
TUNE_DIR = "tune"  # candidate runs: OUT/tune/<variant>/<candidate>
PROTOCOL_KEYS = ("fresh_seeds", "equal_candidates", "edge_spacing")  # what a grid folder keeps (`recorded_protocol`)


@dataclass(frozen=True)
class TuneConfig:
    """The sweep every variant gets; checked on construction."""

    lr_mults: tuple = (0.5, 1.0, 2.0, 4.0)  # candidate peak lrs as multiples of the base lr
    warmups: tuple | None = None  # candidate warm-up steps; None = the base warm-up only
    table_lr_mults: tuple = (1.0, 10.0)  # position-table lr multipliers, for variants that have tables
    fraction: float = 0.25  # steps of a candidate run, as a fraction of the budget's steps
    min_steps: int = 1  # ... and at least this many
    metric: str = "loss"  # validation metric chosen on (lower is better)
    edge_steps: int = 2  # candidates added beyond an edge of the lr grid while the edge wins (0 = none)
    # the protocol of issue 48 (None: a folder recorded before it, run the old way; see the module docstring)
    fresh_seeds: bool | None = True  # the reported seeds follow the candidates' seed, each trained from scratch
    equal_candidates: bool | None = True  # variants without tables get a finer lr grid, as many candidates
    edge_spacing: bool | None = True  # beyond an edge the lr grid continues at its own spacing (None: x2, /2)

    def __post_init__(self):
        for name in ("lr_mults", "table_lr_mults"):
            values = getattr(self, name)
            if not values or not all(isinstance(v, (int, float)) and v > 0 for v in values):
                raise ConfigError(f"tune {name}={values!r} is invalid: must be a non-empty list of numbers > 0")
        if self.warmups is not None and (not self.warmups or not all(isinstance(v, int) and v >= 0
                                                                     for v in self.warmups)):
            raise ConfigError(f"tune warmups={self.warmups!r} is invalid: must be a non-empty list of integers >= 0")
        if not 0 < self.fraction <= 1:
            raise ConfigError(f"tune fraction={self.fraction!r} is invalid: must be in (0, 1]")
        if not isinstance(self.edge_steps, int) or self.edge_steps < 0:
            raise ConfigError(f"tune edge_steps={self.edge_steps!r} is invalid: must be an integer >= 0")
        if self.min_steps < 1:
            raise ConfigError(f"tune min_steps={self.min_steps!r} is invalid: must be >= 1")

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def steps(self, budget_steps: int) -> int:
        """Optimizer steps of one candidate run."""
        return min(budget_steps, max(self.min_steps, round(self.fraction * budget_steps)))


def has_tables(task: str, preset: str, model_overrides: dict, variant: str) -> bool:
    """Whether `variant` has trainable position tables (what ``table_lr_mult`` acts on): `plan.has_position_tables`,
    answered from the mixer classes' declarations (no model is built)."""
    from ..training.plan import has_position_tables

    return has_position_tables(task, preset, model_overrides, variant)


def candidates(tune: TuneConfig, base, tables: bool) -> list[dict]:
    """The candidate values ({lr, warmup_steps, table_lr_mult}) of one variant; `base` a TrainConfig."""
    warmups = tune.warmups if tune.warmups is not None else (base.warmup_steps,)
    mults = tune.table_lr_mults if tables else (base.table_lr_mult,)  # no tables: the multiplier is inert
    return [{"lr": base.lr * m, "warmup_steps": w, "table_lr_mult": float(t)}
            for m in lr_grid(tune, tables) for w in warmups for t in mults]


def lr_grid(tune: TuneConfig, tables: bool) -> list[float]:
    """The lr multipliers a variant is swept at: ``lr_mults``, or for a variant without position tables under
    ``equal_candidates`` each step of ``lr_mults`` cut into k geometric steps (k = the number of table
    multipliers), the last step repeated above the top, so that it gets as many candidates: with the defaults
    0.5, 0.71, 1, 1.41, 2, 2.83, 4, 5.66."""
    k, mults, ratios = _spacing(tune, tables)
    if k == 1:
        return list(tune.lr_mults)
    return [m * r ** (j / k) for m, r in zip(mults, ratios) for j in range(k)]


def _spacing(tune: TuneConfig, tables: bool) -> tuple[int, list, list]:
    """(k, the sorted lr_mults, the ratio from each to the next, the last repeated above the top): `lr_grid`
    cuts each step into k (1: the grid is lr_mults as given)."""
    k, mults = len(tune.table_lr_mults), sorted(tune.lr_mults)
    ratios = [b / a for a, b in zip(mults, mults[1:])] or [2.0]
    ratios.append(ratios[-1])  # above the top: the last step again
    return (1 if tables or not tune.equal_candidates else k), mults, ratios


def beyond_grid(tune: TuneConfig, tables: bool, side: int, n: int) -> float:
    """The lr multiplier of the n-th candidate beyond the top (`side` 1) or bottom (-1) of a variant's `lr_grid`:
    the grid continued at its own spacing (``edge_spacing``), e.g. 8 and 11.3 above the default finer grid's
    5.66, 8 and 16 above 4 for a variant with tables."""
    k, mults, ratios = _spacing(tune, tables)
    if side > 0:
        return mults[-1] * ratios[-1] ** ((k - 1 + n) / k)
    return mults[0] * ratios[0] ** (-n / k)


def first_seed(seed: int, tune: TuneConfig | None) -> int:
    """The first reported seed of a comparison whose first seed is `seed`: the next one after a sweep under
    ``fresh_seeds`` (the candidates trained on `seed`), else `seed`."""
    return seed + 1 if tune is not None and tune.fresh_seeds else seed


def recorded_protocol(tune: TuneConfig | None, settings_file: Path, log=print) -> TuneConfig | None:
    """`tune` with the protocol options (``fresh_seeds``, ``equal_candidates``) the folder whose settings are
    `settings_file` was started with: a grid keeps its protocol, so that its cells and report stand as they were
    made (one recorded before the options, which lacks them, keeps the old protocol: None). A new folder gets
    `tune` unchanged."""
    import json

    if tune is None or not settings_file.exists():
        return tune
    try:
        stored = json.loads(settings_file.read_text(encoding="utf-8")).get("tune")
    except (OSError, ValueError, AttributeError):
        return tune  # a damaged file is check_settings' to name
    if not isinstance(stored, dict):
        return tune
    kept = {k: stored.get(k) for k in PROTOCOL_KEYS}
    if kept == {k: getattr(tune, k) for k in PROTOCOL_KEYS}:
        return tune
    log(f"{settings_file.parent}: {protocol_text(kept)} (the protocol it was started with, kept so that its cells "
        "stand; a new --out gets the current one)")
    return dataclasses.replace(tune, **kept)


def protocol_text(protocol: dict | None, seeds: list | None = None) -> str:
    """One sentence of the report on how seeds and candidates relate (`protocol`: a TuneConfig's dict)."""
    if not protocol:
        return ""
    first = f"seed {seeds[0] - 1}" if seeds else "the first seed"
    fresh = (f"the candidates train on {first}; every reported seed is trained from scratch after the sweep"
             if protocol.get("fresh_seeds") else
             "the first reported seed is the seed the candidates trained on (with whole-run candidates it repeats "
             "the winner), the protocol before issue 48")
    equal = ("every variant gets the same number of candidates (a finer lr grid where there are no position tables)"
             if protocol.get("equal_candidates") else
             "variants with position tables get more candidates than those without")
    return f"Protocol: {fresh}; {equal}."


def candidate_name(values: dict) -> str:
    return f"lr{values['lr']:.4g}-warmup{values['warmup_steps']}-tables{values['table_lr_mult']:g}"


class Sweep:
    """One variant's sweep, step by step, so that a grid can train the candidates of several variants at once:
    `pending` lists the candidate runs to train now (every candidate of the grid first, then one beyond an edge
    at a time), `record` takes their results in that order, until `done`; then `choice`.

    `base`: the comparison's TrainConfig. Scores: [{lr, warmup_steps, table_lr_mult, metric, valid, run}] in
    candidate order."""

    def __init__(self, variant: str, base, model_overrides: dict, out: Path, tune: TuneConfig, log=print):
        self.variant, self.base, self.tune, self.log = variant, base, tune, log
        self.model = {**model_overrides, "attention": variant}
        self.folder = out / TUNE_DIR / variant
        self.steps = tune.steps(base.steps)
        self.scores: list[dict] = []
        self.tables = has_tables(base.task, base.preset, model_overrides, variant)
        found = candidates(tune, base, self.tables)
        self._next = [(values, f"{i + 1}/{len(found)}") for i, values in enumerate(found)]
        self._edges = 0

    @property
    def done(self) -> bool:
        return not self._next

    def pending(self) -> list[tuple]:
        """(TrainConfig, model overrides, label) of every candidate to train now."""
        out = []
        for values, label in self._next:
            cfg = dataclasses.replace(self.base, **{**values, "warmup_steps": min(values["warmup_steps"], self.steps)},
                                      steps=self.steps, out=str(self.folder / candidate_name(values)),
                                      decode_examples=0, eval_test=False)
            out.append((cfg, self.model, f"tune {self.variant} [{label}] {candidate_name(values)}"))
        return out

    def record(self, results: list[dict]) -> None:
        """The results (done.json) of `pending`'s runs, in its order; then the next step, if any."""
        for (values, _), result in zip(self._next, results):
            folder = self.folder / candidate_name(values)
            metrics = result.get("valid") or {}
            valid = metrics.get(self.tune.metric)
            if valid is None:
                raise ConfigError(f"tuning {self.variant}: the validation metric {self.tune.metric!r} is missing "
                                  f"from {folder}")
            score = {**values, "metric": self.tune.metric, "valid": float(valid), "steps": self.steps,
                     "run": str(folder)}
            if metrics.get("accuracy") is not None and metrics.get("chance_accuracy") is not None:
                score["above_chance"] = bool(metrics["accuracy"] > metrics["chance_accuracy"])
            self.scores.append(score)
        self._next = []
        if self._edges < self.tune.edge_steps and (values := beyond_edge(self.scores)) is not None:
            self._edges += 1
            if self.tune.edge_spacing:  # the grid continued (`beyond_grid`), not the edge doubled
                values["lr"] = self.base.lr * beyond_grid(self.tune, self.tables, edge_side(self.scores), self._edges)
            self._next = [(values, f"beyond the edge {self._edges}/{self.tune.edge_steps}")]

    def choice(self) -> tuple[dict, list[dict]]:
        """(the chosen values, every candidate's score), logged."""
        scores = self.scores
        best = best_index([c["valid"] for c in scores])
        chosen = {k: scores[best][k] for k in TUNED_KEYS}
        self.log(f"tune {self.variant}: chose {candidate_name(chosen)} (validation {self.tune.metric} "
                 f"{scores[best]['valid']:.4f} of {len(scores)} candidates at {self.steps} steps)")
        if at_chance(scores):
            self.log(f"tune {self.variant}: warning: no candidate beat the majority class on validation, so the choice "
                     "rests on noise; train the candidates longer (a grid's tune_fraction, or more steps)")
        return chosen, scores


def sweep(variant: str, base, model_overrides: dict, out: Path, tune: TuneConfig, train_cells, log=print) -> tuple:
    """Run (or reuse) the candidates of one variant; returns (chosen values, the candidates' scores).
    `train_cells([(cfg, model_overrides, tag), ...])` trains or reuses the runs ``cfg.out`` and returns their
    results (done.json), in order."""
    s = Sweep(variant, base, model_overrides, out, tune, log)
    while not s.done:
        s.record(train_cells(s.pending()))
    return s.choice()


def train_sweeps(sweeps: dict, grid, cell_of, waiting: set) -> dict[str, tuple[dict, list[dict]]]:
    """{name: (chosen values, the candidates' scores)} of the sweeps `sweeps` ({name: Sweep}), the pending
    candidates of all of them trained together at each step (`grid.run_all`, so that an executor with several
    workers keeps them busy). `cell_of(name, (cfg, model_overrides, tag))`: a candidate's grid Cell. Interim: a
    sweep with an unfinished candidate joins `waiting` and is left out."""
    while active := [n for n, s in sweeps.items() if not s.done and n not in waiting]:
        batch = [(n, c) for n in active for c in sweeps[n].pending()]
        found = grid.run_all([cell_of(n, c) for n, c in batch])
        for n in active:
            results = [f for (owner, _), f in zip(batch, found) if owner == n]
            if any(f is None for f in results):
                waiting.add(n)
            else:
                sweeps[n].record([result for _, result in results])
    return {n: s.choice() for n, s in sweeps.items() if n not in waiting}


def winner_run(scores: list[dict], base) -> Path | None:
    """The run folder of the sweep's winner when it trained the whole budget of `base` (a TrainConfig) and its
    folder still holds its final checkpoint: the first seed (the seed candidates train from) continues it;
    None otherwise (a share of the budget, or only the candidate's cell is left)."""
    from ..training.runs import holds_final_checkpoint

    if not scores:
        return None
    best = scores[best_index([c["valid"] for c in scores])]
    full = best.get("steps") == base.steps
    return Path(best["run"]) if full and holds_final_checkpoint(best["run"], base.steps) else None


def at_chance(scores: list[dict]) -> bool:
    """Whether every candidate of a classifier's sweep sat at or below the validation split's majority class
    (False when the task reports no such floor, or the scores predate the check)."""
    return bool(scores) and all(c.get("above_chance") is False for c in scores)


def beyond_edge(scores: list[dict]) -> dict | None:
    """The next candidate when the best of `scores` has the largest lr tried (twice it) or the smallest (half
    it), with the best's warm-up and table multiplier; None when the best lies inside (or only one lr was tried).
    Under ``edge_spacing`` the `Sweep` puts its own grid's next lr (`beyond_grid`) in place of the doubled one."""
    if not (side := edge_side(scores)):
        return None
    best = scores[best_index([c["valid"] for c in scores])]
    return {"lr": best["lr"] * (2.0 if side > 0 else 0.5), **{k: best[k] for k in TUNED_KEYS if k != "lr"}}


def edge_side(scores: list[dict]) -> int:
    """1 when the best of `scores` has the largest lr tried, -1 the smallest, 0 when it lies inside (or only one
    lr was tried)."""
    best = scores[best_index([c["valid"] for c in scores])]
    lrs = sorted({c["lr"] for c in scores})
    if len(lrs) < 2 or lrs[0] < best["lr"] < lrs[-1]:
        return 0
    return 1 if best["lr"] == lrs[-1] else -1


def best_index(losses: list[float]) -> int:
    """The candidate with the lowest loss; the first of equals; a diverged one (NaN, inf) never wins
    unless all did."""
    return min(range(len(losses)), key=lambda k: losses[k] if math.isfinite(losses[k]) else math.inf)


def untuned(base) -> dict:
    """The values every variant trains with when there is no sweep (the same for all)."""
    return {k: getattr(base, k) for k in TUNED_KEYS}


def make_tune(value) -> TuneConfig | None:
    """A TuneConfig from an option: true (the default protocol), false / None (no sweep), or a
    mapping of TuneConfig fields (lists for the tuples), e.g. ``{lr_mults: [1, 2], fraction: 0.5}``."""
    if value is None or value is False:
        return None
    if value is True:
        return TuneConfig()
    if not isinstance(value, dict):
        raise ConfigError(f"tune={value!r} is invalid: give true, false or a mapping of "
                          f"{', '.join(f.name for f in dataclasses.fields(TuneConfig))}")
    names = {f.name for f in dataclasses.fields(TuneConfig)}
    unknown = sorted(set(value) - names)
    if unknown:
        raise ConfigError(f"tune: unknown key(s) {unknown}; valid: {', '.join(sorted(names))}")
    return TuneConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in value.items()})
