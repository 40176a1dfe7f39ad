"""The tuning protocol (`synthformer.evidence.tuning`): every variant gets the same learning-rate sweep on the
validation split; a tiny sweep runs through the real `compare` and the chosen values are the argmin."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.errors import ConfigError
from synthformer.mixers import BASELINES
from synthformer.model import ModelConfig, build_model
from synthformer.tasks import TASKS
from synthformer.training.optim import position_tables
from synthformer.training.loop import TrainConfig
from synthformer.evidence.tuning import (TuneConfig, best_index, candidates, first_seed, has_tables, lr_grid,
                                        make_tune, recorded_protocol)
from conftest import ALL_SPECS, kill_cli_when
from test_compare import compare_main, dialogue  # noqa: F401 (dialogue: the tiny data file fixture)

TINY = ["--steps", "3", "--seq_len", "24", "--vocab_size", "300", "--batch_size", "4", "--eval_batches", "2",
        "--threads", "1", "--progress", "false", "--warmup_steps", "1"]


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh-seeds", "before-issue-48"])
def test_a_tiny_sweep_through_compare_chooses_the_argmin_of_validation(dialogue, tmp_path, fresh):
    """Two lr values for every variant (and the table multiplier where there are tables), given in the
    config file's compare section; the chosen values are those of the lowest validation loss, read
    back from the candidates' own run folders, and every seed trains with them. Under the current protocol
    V (no tables) gets as many candidates as R from a finer lr grid, and the reported seed is seed 1, trained
    from scratch; under the old one V gets 2 and seed 0 continues the whole-run winner."""
    cfg = tmp_path / "c.yaml"
    protocol = "" if fresh else ", fresh_seeds: false, equal_candidates: false"
    cfg.write_text("eval_every: 0\ncompare:\n  seeds: 1\n  variants: [V, R]\n"
                   f"  tune: {{lr_mults: [1, 8], table_lr_mults: [1, 10], fraction: 1.0, edge_steps: 0{protocol}}}\n")
    out = tmp_path / "cmp"
    code, stdout, err = compare_main("--config", cfg, "--data", dialogue, "--out", out, *TINY)
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    assert results["tuning"]["lr_mults"] == [1, 8] and results["tuning"]["fraction"] == 1.0
    assert results["seeds"] == ([1] if fresh else [0])
    by = {r["variant"]: r for r in results["variants"]}
    # V has no position tables: the multiplier is inert; its lrs are cut into half-steps (x1, x2.83, x8, x22.6)
    # so that it gets R's 2 x 2 candidates, or (old protocol) they are the two lrs alone
    v_lrs = [2e-3, 2e-3 * 8 ** 0.5, 1.6e-2, 1.6e-2 * 8 ** 0.5] if fresh else [2e-3, 1.6e-2]
    assert [c["lr"] for c in by["V"]["sweep"]] == pytest.approx(v_lrs)
    assert {c["table_lr_mult"] for c in by["V"]["sweep"]} == {10.0}
    assert [(c["lr"], c["table_lr_mult"]) for c in by["R"]["sweep"]] == [(2e-3, 1.0), (2e-3, 10.0),
                                                                         (1.6e-2, 1.0), (1.6e-2, 10.0)]
    for row in results["variants"]:
        losses = []
        for c in row["sweep"]:
            done = json.loads((Path(c["run"]) / "done.json").read_text())
            assert done["train"]["lr"] == c["lr"] and done["train"]["table_lr_mult"] == c["table_lr_mult"]
            assert done["train"]["steps"] == 3 and done["train"]["seed"] == 0
            assert done["valid"]["loss"] == c["valid"]
            losses.append(done["valid"]["loss"])
        best = row["sweep"][losses.index(min(losses))]
        assert row["tuned"] == {k: best[k] for k in ("lr", "warmup_steps", "table_lr_mult")}
        trained = json.loads((Path(row["run"]) / "config.json").read_text())["train"]
        assert trained["lr"] == row["tuned"]["lr"] and trained["table_lr_mult"] == row["tuned"]["table_lr_mult"]
        done = json.loads((Path(row["run"]) / "done.json").read_text())
        if fresh:  # a seed of its own, trained from scratch
            assert done["train"]["seed"] == 1 and not done.get("continued_from")
        else:  # the candidates trained the whole budget: the seed (the candidates' seed) continues the winner's run
            assert done["continued_from"] == best["run"] and done["valid"]["loss"] == best["valid"]
    assert stdout.count("continuing it (this seed's own evaluation only)") == (0 if fresh else 2), stdout
    table = (out / "table.md").read_text()
    assert "Tuning (the same sweep for every variant" in table and "x1/8 of the base" in table
    assert f"| R | {by['R']['tuned']['lr']:.3g} | 1 | {by['R']['tuned']['table_lr_mult']:g} | 4 |" in table
    assert ("every reported seed is trained from scratch" in table) == fresh
    assert ("every variant gets the same number of candidates" in table) == fresh
    # a rerun reuses the finished candidates; the settings recorded include the sweep
    (out / "results.json").unlink()
    code, stdout, err = compare_main("--config", cfg, "--data", dialogue, "--out", out, *TINY)
    assert code == 0 and stdout.count("finished earlier") == (4 if fresh else 2) + 4 + 2, stdout
    code, _, err = compare_main("--config", cfg, "--data", dialogue, "--out", out, *TINY, "--tune")
    assert code == 2 and "was run with other settings: tune.edge_steps 0 (now 2)" in err


def test_a_folder_recorded_before_the_protocol_options_keeps_its_protocol(tmp_path):
    """A settings file whose tune lacks fresh_seeds (a grid of before issue 48) keeps the old protocol, so its
    committed cells stand; one that records them, or no file, gets the asked protocol."""
    tune, said = TuneConfig(), []
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"tune": {k: v for k, v in tune.to_dict().items()
                                        if k not in ("fresh_seeds", "equal_candidates")}}))
    new.write_text(json.dumps({"tune": tune.to_dict()}))
    kept = recorded_protocol(tune, old, said.append)
    assert (kept.fresh_seeds, kept.equal_candidates) == (None, None) and "before issue 48" in said[0]
    half = tmp_path / "half.json"  # a grid migrated to fresh seeds alone (its candidates kept) keeps that
    half.write_text(json.dumps({"tune": {**tune.to_dict(), "equal_candidates": None}}))
    assert recorded_protocol(tune, half, said.append) == TuneConfig(equal_candidates=None)
    assert "every reported seed is trained from scratch" in said[1] and "get more candidates" in said[1]
    said.pop()
    assert recorded_protocol(tune, new, said.append) == tune == recorded_protocol(tune, tmp_path / "none.json")
    assert len(said) == 1 and recorded_protocol(None, old) is None
    assert first_seed(0, kept) == 0 and first_seed(0, tune) == 1 and first_seed(5, None) == 5


def test_every_variant_gets_the_same_number_of_candidates():
    """Under the default protocol a variant without position tables is swept on a finer lr grid (half-octave
    steps over the same range and one above), so its best-of is a best-of as many as R+V's; the old protocol
    gave it half as many."""
    base = TrainConfig(lr=1e-3, warmup_steps=40, table_lr_mult=10.0)
    counts = {v: len(candidates(TuneConfig(), base, has_tables("classify", "tiny", {}, v)))
              for v in ALL_SPECS + list(BASELINES)}
    assert set(counts.values()) == {8}, counts
    assert lr_grid(TuneConfig(), tables=False) == pytest.approx([0.5 * 2 ** (j / 2) for j in range(8)])
    assert lr_grid(TuneConfig(lr_mults=(1.0,), table_lr_mults=(1.0, 10.0, 100.0)), tables=False) == pytest.approx(
        [1.0, 2 ** (1 / 3), 2 ** (2 / 3)])
    old = TuneConfig(equal_candidates=None)
    assert len(candidates(old, base, tables=False)) == 4 and len(candidates(old, base, tables=True)) == 8


def test_a_choice_at_an_edge_of_the_lr_grid_is_followed_beyond_it(tmp_path):
    """`sweep` with a scoring callback in place of training (the selection logic alone; the real runs are
    tested above): the grid's best at its largest lr gets candidates at 2x, 4x while each new one wins, at most
    `edge_steps`; at its smallest, half; a best inside the grid adds nothing. The extra candidates keep the
    winner's warm-up and table multiplier, are named like the grid's, and the choice is their argmin."""
    from synthformer.evidence.tuning import beyond_edge, candidate_name, sweep

    base = TrainConfig(lr=1e-3, warmup_steps=10, steps=40, table_lr_mult=10.0)

    def run(best_lr, edge_steps=2):
        trained = []

        def train_cell(cfg, overrides, tag):
            trained.append((cfg.lr, cfg.table_lr_mult, cfg.warmup_steps, Path(cfg.out).name))
            return {"valid": {"loss": abs(cfg.lr / best_lr - 1) + (0.5 if cfg.table_lr_mult == 1 else 0)}}

        chosen, scores = sweep("R", base, {}, tmp_path, TuneConfig(edge_steps=edge_steps),
                               lambda cells: [train_cell(*c) for c in cells], log=lambda m: None)
        assert [s["lr"] for s in scores] == [t[0] for t in trained]
        assert all(name == candidate_name({"lr": lr, "warmup_steps": w, "table_lr_mult": t})
                   for lr, t, w, name in trained)
        return chosen, trained

    grid = [(lr, t) for lr in (5e-4, 1e-3, 2e-3, 4e-3) for t in (1.0, 10.0)]
    chosen, trained = run(2e-3)  # inside the grid: nothing added
    assert [t[:2] for t in trained] == grid and chosen["lr"] == 2e-3
    chosen, trained = run(8e-3)  # one step beyond wins, the next (1.6e-2) loses
    assert [t[:2] for t in trained] == grid + [(8e-3, 10.0), (1.6e-2, 10.0)] and chosen["lr"] == 8e-3
    chosen, trained = run(1.0)  # still winning after edge_steps: stops there
    assert [t[0] for t in trained[8:]] == [8e-3, 1.6e-2] and chosen == {"lr": 1.6e-2, "warmup_steps": 10,
                                                                        "table_lr_mult": 10.0}
    chosen, trained = run(1e-4)  # the smallest edge: halves
    assert [t[0] for t in trained[8:]] == [2.5e-4, 1.25e-4] and chosen["lr"] == 1.25e-4
    assert all(t[1:3] == (10.0, 10) for t in trained[8:])
    chosen, trained = run(8e-3, edge_steps=0)
    assert len(trained) == 8 and chosen["lr"] == 4e-3
    assert beyond_edge([{"lr": 1e-3, "warmup_steps": 10, "table_lr_mult": 1.0, "valid": 2.0}]) is None
    # a variant without tables: its finer grid continues at half-octave steps beyond either edge (`edge_spacing`),
    # the lrs exactly those of the grid's formula; before `edge_spacing` the edge was doubled (halved)
    top = base.lr * 4 * 2 ** 0.5  # the finer grid's largest: 5.66x
    for spacing, above, below in [(True, [base.lr * 8, base.lr * 4 * 2 ** 1.5], [base.lr * 0.5 * 2 ** -0.5, base.lr / 4]),
                                  (None, [top * 2, top * 4], [base.lr / 4, base.lr / 8])]:
        for best, expected in [(1.0, above), (1e-6, below)]:
            trained = []
            sweep("V", base, {}, tmp_path, TuneConfig(edge_spacing=spacing),
                  lambda cells: [trained.append(c[0].lr) or {"valid": {"loss": abs(c[0].lr / best - 1)}}
                                 for c in cells], log=lambda m: None)
            assert len(trained) == 10 and trained[8:] == expected, (spacing, best, trained)


def test_the_lowest_finite_loss_wins():
    nan, inf = float("nan"), float("inf")
    assert best_index([nan, 3.0, 2.0, 2.0]) == 2  # NaN compares false: a plain min() would keep it
    assert best_index([inf, 5.0]) == 1 and best_index([4.0, nan]) == 0 and best_index([nan, nan]) == 0


def test_intervals_skip_diverged_seeds():
    from synthformer.evidence.rows import intervals

    rows = [{"metrics": {"ppl": 10.0, "ppl_se": 0.5, "loss": 2.3}}, {"metrics": {"ppl": float("inf"), "loss": 9.0,
                                                                               "ppl_se": float("nan")}}]
    found = intervals(rows)
    assert "ppl" not in found and found["loss"][0] < 2.3 < 9.0 < found["loss"][1]


def test_a_perplexity_interval_is_the_loss_interval_mapped_through_exp():
    """Three seeds of table4's D+V (test loss 4.28, 5.47, 4.46): a t-interval of their perplexities would reach
    below zero; the reported one is exp of the loss interval, positive, around the geometric mean."""
    import math

    from synthformer.evidence.rows import intervals

    rows = [{"metrics": {"loss": loss, "loss_se": 0.015, "ppl": math.exp(loss), "ppl_se": 0.015 * math.exp(loss)}}
            for loss in (4.28, 5.47, 4.46)]
    found = intervals(rows)
    assert found["ppl"] == [math.exp(v) for v in found["loss"]]
    assert 0 < found["ppl"][0] < math.exp(sum(r["metrics"]["loss"] for r in rows) / 3) < found["ppl"][1]


def test_candidates_and_which_variants_have_tables():
    base = TrainConfig(lr=1e-3, warmup_steps=40, table_lr_mult=10.0)
    tune = TuneConfig(lr_mults=(0.5, 2.0), warmups=(40, 160), table_lr_mults=(1.0, 10.0))
    assert len(candidates(tune, base, tables=True)) == 8 and len(candidates(tune, base, tables=False)) == 8
    assert candidates(tune, base, tables=False)[1] == {"lr": 5e-4, "warmup_steps": 160, "table_lr_mult": 10.0}
    assert TuneConfig().steps(800) == 200 and TuneConfig(min_steps=300).steps(800) == 300
    tables = {v: has_tables("lm", "tiny", {}, v) for v in ("V", "Fix", "R", "FR", "D", "FD", "R+V", "dynamicconv")}
    assert tables == {"V": False, "Fix": False, "R": True, "FR": True, "D": True, "FD": True, "R+V": True,
                      "dynamicconv": False}
    assert has_tables("classify", "tiny", {}, "linformer") is False


def built_has_tables(task: str, preset: str, overrides: dict, variant: str) -> bool:
    """The answer read off a built model: what the optimizer's tables group holds."""
    fields = {"vocab_size": 300, **overrides, "kind": TASKS[task].model_kind, "attention": variant}
    return bool(position_tables(build_model(ModelConfig.preset(preset, **fields)), embeddings=False))


@pytest.mark.parametrize("variant", ALL_SPECS + list(BASELINES))
def test_has_tables_from_the_classes_equals_the_built_models_answer(variant):
    """has_tables answers from the classes' declarations, without a model; a built model agrees, for every
    task's model kind and for a seq2seq whose cross-attention has tables."""
    cases = [(task, {}) for task in TASKS] + [("seq2seq", {"cross_attention": "R"}),
                                              ("seq2seq", {"cross_attention": "Fix"}),
                                              ("classify", {"num_layers": 1, "factorized_k": 4})]
    for task, overrides in cases:
        try:
            expected = built_has_tables(task, "tiny", overrides, variant)
        except ConfigError:  # a slot this mixer cannot fill (linformer in a decoder): refused alike
            with pytest.raises(ConfigError):
                has_tables(task, "tiny", overrides, variant)
            continue
        assert has_tables(task, "tiny", overrides, variant) is expected, (task, overrides)


@pytest.mark.parametrize("value, message", [
    ({"lr_mults": []}, "lr_mults=() is invalid"),
    ({"fraction": 0}, "fraction=0 is invalid: must be in (0, 1]"),
    ({"edge_steps": -1}, "edge_steps=-1 is invalid: must be an integer >= 0"),
    ({"lr_mult": [1]}, "unknown key(s) ['lr_mult']"),
    ("yes", "tune='yes' is invalid"),
])
def test_bad_tune_options_are_one_line(value, message, dialogue, tmp_path):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        make_tune(value)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("compare:\n  tune: " + json.dumps(value) + "\n")
    code, _, err = compare_main("--config", cfg, "--data", dialogue, "--out", tmp_path / "x", *TINY)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


def test_a_sweep_and_seeds_are_taken_from_another_folder_of_the_same_settings(dialogue, tmp_path):
    """`compare(runs_from=...)` (reproduce --reuse: figures takes table2's LM runs): the finished candidates and
    seeds of another folder with the same settings stand in for this one's (kept here as cells), the same values
    are chosen, nothing trains here; a folder of other settings is refused, naming the difference."""
    from synthformer.evidence.compare import compare
    from synthformer.errors import SynthformerError
    from synthformer.evidence.tuning import TUNE_DIR

    train = dict(data=str(dialogue), steps=3, seq_len=24, vocab_size=300, batch_size=4, eval_batches=2, threads=1,
                 progress=False, warmup_steps=1, eval_every=0)
    tune = TuneConfig(lr_mults=(1, 8), table_lr_mults=(1,), fraction=1.0)
    first = compare(["V", "R"], train, {}, tmp_path / "a", seeds=1, tune=tune, log=lambda m: None)
    said = []
    second = compare(["V", "R"], train, {}, tmp_path / "b", seeds=1, tune=tune, runs_from=tmp_path / "a",
                     log=said.append)
    # two lrs a variant, then the steps beyond the edge its choice lands on, and its seed: all from the first folder
    assert sum(f"finished in {tmp_path / 'a'}" in m for m in said) == sum(len(r["sweep"]) + 1 for r in first["variants"])
    assert all(len(r["sweep"]) > 2 for r in first["variants"])
    assert not (tmp_path / "b" / TUNE_DIR).exists() and (tmp_path / "b" / "cells" / TUNE_DIR).is_dir()
    for cell in (tmp_path / "b" / "cells" / TUNE_DIR).rglob("*.json"):  # each candidate's curve comes along
        theirs = tmp_path / "a" / "cells" / cell.relative_to(tmp_path / "b" / "cells")
        assert json.loads(cell.read_text())["metrics"] == json.loads(theirs.read_text())["metrics"] != []
    assert [r["tuned"] for r in second["variants"]] == [r["tuned"] for r in first["variants"]]
    assert [r["metrics"] for r in second["variants"]] == [r["metrics"] for r in first["variants"]]
    assert not [p for p in (tmp_path / "b").iterdir() if p.is_dir() and p.name != "cells"]  # no run folder here
    assert all((tmp_path / "b" / "cells" / f"{r['variant']}.json").is_file() for r in second["variants"])
    with pytest.raises(SynthformerError, match="batch_size 4 \\(now 5\\)"):
        compare(["V"], {**train, "batch_size": 5}, {}, tmp_path / "c", seeds=1, tune=tune, runs_from=tmp_path / "a",
                log=lambda m: None)


@pytest.mark.slow  # 12 s: a candidate killed and resumed
def test_a_candidate_killed_mid_run_resumes_from_its_checkpoint(dialogue, tmp_path):
    """A real interruption: `synthformer compare` is SIGKILLed once its sweep candidate has written a
    checkpoint (candidates keep the comparison's checkpoint_every), and the rerun resumes the candidate there
    instead of training it again from step 0."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("compare:\n  seeds: 1\n  variants: [V]\n  tune: {lr_mults: [1], fraction: 1.0, edge_steps: 0}\n")
    out = tmp_path / "cmp"
    args = ["--config", cfg, "--data", dialogue, "--out", out, "--steps", "60", "--checkpoint_every", "5",
            "--seq_len", "24", "--vocab_size", "300", "--batch_size", "4", "--eval_every", "0", "--eval_batches",
            "2", "--threads", "1", "--progress", "false", "--warmup_steps", "1"]
    kill_cli_when(lambda: any(out.glob("tune/V/*/checkpoints/latest.json")), "compare", *args)
    (pointer,) = out.glob("tune/V/*/checkpoints/latest.json")
    step = json.loads(pointer.read_text())["step"]  # caught within ~10 ms of step 5's checkpoint
    assert 5 <= step < 60 and not (pointer.parents[1] / "done.json").exists()
    code, stdout, err = compare_main(*args)
    assert code == 0, err
    assert f"resumed {pointer.parents[1]} at step {step}" in stdout + err
    assert json.loads((pointer.parents[1] / "done.json").read_text())["step"] == 60


def test_a_finished_run_is_reused_whatever_its_checkpoint_and_evaluation_cadence():
    """`check_cell`: checkpoint_every, keep_checkpoints and eval_every do not change what a run computed (a sweep
    candidate of an earlier version kept no checkpoints and evaluated only at its end), so they never refuse a
    finished run; its lr does."""
    from synthformer.evidence.grid import GridError
    from synthformer.evidence.grid import check_cell

    cfg = TrainConfig(task="lm", steps=10, checkpoint_every=100, keep_checkpoints=1)
    result = {"train": {**cfg.to_dict(), "checkpoint_every": 0, "keep_checkpoints": 3, "eval_every": 0},
              "model": {"attention": "V"}}
    check_cell(Path("run"), result, cfg, {"attention": "V"})
    with pytest.raises(GridError, match="lr 0.5"):
        check_cell(Path("run"), {**result, "train": {**result["train"], "lr": 0.5}}, cfg, {"attention": "V"})


def test_the_tuning_table_names_choices_at_the_edge_of_the_lr_grid():
    """A variant whose sweep chose its largest (or smallest) lr is named: its best lr may lie beyond the grid."""
    from synthformer.evidence.tables import tuning_markdown

    def row(name, chosen):
        sweep = [{"lr": lr, "warmup_steps": 100, "table_lr_mult": 1.0, "valid": 4.0 if lr == chosen else 5.0}
                 for lr in (1e-3, 2e-3, 4e-3)]
        return {"variant": name, "tuned": {"lr": chosen, "warmup_steps": 100, "table_lr_mult": 1.0}, "sweep": sweep}

    protocol = TuneConfig().to_dict()
    text = tuning_markdown([row("V", 2e-3), row("R", 4e-3), row("D", 1e-3)], protocol)
    assert text.splitlines()[-1] == ("Chosen at an edge of the lr grid, so the best lr may lie beyond it: "
                                     "R (largest), D (smallest).")
    assert "edge" not in tuning_markdown([row("V", 2e-3)], protocol)


def test_a_classifier_sweep_with_every_candidate_at_the_majority_class_is_flagged(tmp_path):
    """lra text at 75 steps: every candidate predicted one class and the sweep chose on the class prior's fit.
    Such a sweep is logged and named under the tuning table; one candidate above the majority class clears it,
    and a task without a majority-class floor (LM: no chance_accuracy) is never flagged."""
    from synthformer.evidence.tables import tuning_markdown
    from synthformer.evidence.tuning import sweep

    base = TrainConfig(lr=1e-3, warmup_steps=10, steps=40)

    def run(accuracy, chance=43.8):
        logged = []

        def train_cell(cfg, overrides, tag):
            valid = {"loss": cfg.lr, "accuracy": accuracy(cfg.lr), "chance_accuracy": chance}
            return {"valid": {k: v for k, v in valid.items() if v is not None}}

        chosen, scores = sweep("V", base, {}, tmp_path, TuneConfig(), lambda cells: [train_cell(*c) for c in cells],
                               log=logged.append)
        table = tuning_markdown([{"variant": "V", "tuned": chosen, "sweep": scores}], TuneConfig().to_dict())
        return "\n".join(logged), table

    logged, table = run(lambda lr: 43.8)  # at the majority class, not above it
    assert "no candidate beat the majority class" in logged
    assert table.splitlines()[-1] == ("No sweep candidate beat the majority class on validation, so the choice "
                                      "rests on noise: V.")
    for logged, table in (run(lambda lr: 52.0 if lr == 2e-3 else 21.8), run(lambda lr: 21.8, chance=None)):
        assert "majority class" not in logged + table
