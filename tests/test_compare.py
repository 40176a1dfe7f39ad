"""`synthformer compare` on a tiny budget, the report table and findings, the paper's numbers."""
from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from conftest import run_in_process
from synthformer.evidence.compare import DEFAULT_VARIANTS
from synthformer.evidence.rows import variant_name
from synthformer.evidence.paper.numbers import TABLE2, TABLE3, paper_columns
from synthformer.evidence.tables import findings, findings_markdown, table_markdown
from synthformer.utils.integrity import record_files

PAPER = Path(__file__).resolve().parents[2] / "shared" / "paper" / "synthesizer-icml2021.txt"
WORDS = "hello how are you doing today fine thanks what about the weather is nice here".split()


def compare_main(*args) -> tuple[int, str, str]:
    from synthformer.cli.compare import main

    return run_in_process(main, *args)


@pytest.fixture(scope="module")
def dialogue(tmp_path_factory) -> Path:
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("data") / "dialogue.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20)))
                              for _ in range(300)) + "\n")
    return path


# The fast path: one seed given explicitly (the default is 3, or 5 for validation splits under 200 items).
TINY = ["--seeds", "1", "--steps", "3", "--seq_len", "24", "--vocab_size", "300", "--batch_size", "4",
        "--eval_every", "2", "--eval_batches", "2", "--threads", "1", "--progress", "false", "--warmup_steps", "1"]


def test_floor_line_names_the_floor_only_when_no_variant_beats_it():
    from synthformer.evidence.tables import floor_line

    floor = {"variant": "floor", "floor": True, "name": "KN bigram", "metrics": {"ppl": 80.0}}
    rows = [{"variant": "V", "metrics": {"ppl": 90.0}}, {"variant": "R", "metrics": {"ppl": 85.0}}]
    assert "KN bigram: ppl 80" in floor_line(rows + [floor], "lm")
    assert floor_line([{"variant": "V", "metrics": {"ppl": 79.0}}, *rows, floor], "lm") is None
    assert floor_line(rows, "lm") is None  # no floor row
    acc = {"variant": "floor", "floor": True, "metrics": {"accuracy": 50.0}}
    assert floor_line([{"variant": "V", "metrics": {"accuracy": 49.0}}, acc], "classify") is not None
    assert floor_line([{"variant": "V", "metrics": {"accuracy": 61.0}}, acc], "classify") is None


def test_compare_tiny_budget_writes_table_plot_and_results(dialogue, tmp_path):
    out = tmp_path / "cmp"
    code, stdout, err = compare_main("--variants", "V,r+v", "--data", dialogue, "--preset", "tiny",
                                     "--out", out, "--seed", "1", *TINY)
    assert code == 0, err
    table = (out / "table.md").read_text()
    assert "| V |" in table and "| R+V |" in table  # names canonicalised ("r+v" -> "R+V")
    assert "(task kind lm), d=64, 2 layers, 2 heads, FFN 256, 3 steps" in table  # the size trained, not a name
    assert "paper: LM1B PPL" in table and "38.21" in table and "40.05" in table
    assert "paper (full scale, TPU)" in table
    assert "paper: dialogue" not in table and "EnDe" not in table  # paper columns of the LM kind only
    assert "claims for task kind lm" in table and "`t2-lm1b-rv-close-v`" in table
    assert "| V |" in stdout  # the table is printed too
    floor = json.loads((out / "floor.json").read_text())["row"]["metrics"]["ppl"]
    ppls = [r["metrics"]["ppl"] for r in json.loads((out / "results.json").read_text())["variants"]]
    assert ("No variant beats the floor" in table) == all(p >= floor for p in ppls)  # 3 steps: it never does
    png = (out / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    results = json.loads((out / "results.json").read_text())
    assert [r["variant"] for r in results["variants"]] == ["V", "R+V"]
    assert results["kind"] == "lm" and results["seeds"] == [1]
    found = {f["claim"]: f for f in results["findings"]}
    # the LM claims V and R+V can check, and Table 4's speed claim on them (a speed claim holds for any kind)
    assert set(found) == {"t2-lm1b-rv-close-v", "t2-lm1b-rv-not-above-v", "t4-speed-rv-close-v"}
    assert found["t2-lm1b-rv-close-v"]["status"] in ("reproduced", "not reproduced", "inconclusive", "undecidable at this size")
    assert found["t2-lm1b-rv-close-v"]["paper"] == {"R+V": 40.05, "V": 38.21}
    for row in results["variants"]:
        assert row["model"]["attention"] == row["variant"] and row["train"]["seed"] == 1
        assert row["train"]["steps"] == 3 and row["metrics"]["ppl"] > 1 and row["tokens_per_s"] > 0
        assert (Path(row["run"]) / "done.json").exists()
    v, rv = results["variants"]
    assert rv["params"] > v["params"]  # R+V adds the H x N x N tables and the mixing weights
    # speed: every variant's training step timed round-robin at the end (speed.json), the runs' own kept beside
    speed = json.loads((out / "speed.json").read_text())
    assert results["speed"] == speed and speed["threads"] == 1 and speed["batch_tokens"] == 4 * 24
    for row in (v, rv):
        assert row["tokens_per_s"] == speed["rows"][row["variant"]][0]["tokens_per_s"] > 0
        done = json.loads((Path(row["run"]) / "done.json").read_text())
        assert row["train_tokens_per_s"] == row["seeds"][0]["train_tokens_per_s"] == done["tokens_per_s"]
    assert "timed round-robin in one process after the runs" in table
    # the same seed: both variants saw the same tokens
    assert v["tokens"] == rv["tokens"] == 3 * 4 * 24
    # the floor row (a KN bigram on the same tokens) in results.json and the table; intervals; tuned values
    assert results["floor"]["floor"] is True and results["floor"]["metrics"]["ppl"] > 1
    assert f"| floor: {results['floor']['name']} |" in table
    assert results["tuning"] is None and "Not tuned: every variant trained with lr 0.002, 1 warm-up steps" in table
    for row in results["variants"]:
        assert row["tuned"] == {"lr": 2e-3, "warmup_steps": 1, "table_lr_mult": 10.0} and row["sweep"] == []
        # one seed: an interval only from the item bootstrap ("ppl_se"), when the evaluation gives one
        assert ("ppl" in row["interval"]) == ("ppl_se" in row["seeds"][0]["metrics"])
    # a finished comparison is not overwritten: the same command prints its table again, training nothing
    stamp = (out / "results.json").stat().st_mtime_ns
    code, again, err = compare_main("--variants", "V,R+V", "--data", dialogue, "--out", out, "--seed", "1", *TINY)
    assert code == 0, err
    assert "finished earlier (nothing trained)" in again and "| R+V |" in again and "[1/" not in again
    assert (out / "results.json").stat().st_mtime_ns == stamp
    # nor continued with settings that change its cells (fewer variants, another option)
    code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out", out, "--seed", "1", *TINY)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "was run with other settings: variants ['V', 'R+V'] (now ['V'])" in err and "choose another --out" in err
    # its curves can be redrawn from the run folders alone, for the whole comparison or chosen runs
    from synthformer.cli import main as cli_main
    from synthformer.plots import find_runs
    plot_main = lambda argv: cli_main(["plot", *argv])  # noqa: E731
    runs, task = find_runs([str(out)])
    assert sorted(runs) == ["R+V", "V"] and task == "lm"
    assert plot_main(["runs", str(out / "V"), str(out / "R+V"), "--out", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert plot_main(["runs", str(tmp_path / "nothing"), "--out", str(tmp_path / "d.png")]) == 2


def test_compare_continues_an_interrupted_comparison(dialogue, tmp_path):
    out = tmp_path / "cmp"
    assert compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY)[0] == 0
    first = json.loads((out / "results.json").read_text())
    # simulate a crash: the comparison and the second variant never finished
    (out / "results.json").unlink()
    (out / "Fix" / "done.json").unlink()
    code, stdout, err = compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY)
    assert code == 0, err
    assert "V: finished earlier" in stdout and "resumed" in stdout
    again = json.loads((out / "results.json").read_text())
    for a, b in zip(first["variants"], again["variants"]):
        assert a["metrics"]["ppl"] == pytest.approx(b["metrics"]["ppl"], rel=1e-6)


def test_compare_refuses_to_continue_with_other_settings(dialogue, tmp_path):
    """Issue 21: a comparison killed after V finished, rerun with more steps, must not mix V at 3 steps
    with Fix at 4 under one header: the folder's settings.json refuses it in one line."""
    out = tmp_path / "cmp"
    assert compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY)[0] == 0
    (out / "results.json").unlink()  # killed after the runs, before the report
    shutil.rmtree(out / "Fix")  # ... and before Fix even started
    code, _, err = compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY, "--steps", "4")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("was run with other settings: train.steps 3 (now 4); rerun with those settings or choose another --out"
            in err)
    assert not (out / "Fix").exists()  # nothing trained
    # a setting recorded before its config field existed (a field added since, default None) still matches
    stored = json.loads((out / "settings.json").read_text())
    assert stored["train"].pop("test_decode_examples", "absent") is None
    (out / "settings.json").write_text(json.dumps(stored))
    record_files(out, out / "settings.json")  # as that older synthformer recorded it (digests.json)
    code, _, err = compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY, "--steps", "4")
    assert code == 2 and "train.steps 3 (now 4);" in err, err
    code, stdout, err = compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY)
    assert code == 0 and "V: finished earlier" in stdout, err
    (out / "results.json").unlink()
    # results (or runs) without the settings they were made with are refused too
    (out / "settings.json").unlink()
    code, _, err = compare_main("--variants", "V,Fix", "--data", dialogue, "--out", out, *TINY)
    assert code == 2 and "is not empty and holds no settings.json" in err
    # a reused run is checked against what the comparison asks of it (here: another seed's run copied in)
    shutil.rmtree(out)
    assert compare_main("--variants", "V", "--data", dialogue, "--out", out, *TINY)[0] == 0
    settings = (out / "settings.json").read_text()
    (out / "results.json").unlink()
    other = tmp_path / "other"
    assert compare_main("--variants", "V", "--data", dialogue, "--out", other, *TINY, "--seed", "7")[0] == 0
    shutil.rmtree(out / "V")
    shutil.copytree(other / "V", out / "V")
    assert (out / "settings.json").read_text() == settings
    code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out", out, *TINY)
    assert code == 2 and "V was trained with other settings: seed 7 (now 0)" in err
    (out / "V" / "done.json").write_bytes(b"\xff\xfe{")  # a damaged marker: one line naming it (the run manifest catches it), no UnicodeDecodeError
    code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out", out, *TINY)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "done.json" in err and "manifest" in err, err


def test_compare_takes_the_run_lock_of_train(dialogue, tmp_path):
    """Issue 21: `compare --out X` while `train --out X` runs must fail in one line, not mix two runs."""
    from synthformer.training.lock import RunLock

    out = tmp_path / "x"
    out.mkdir()
    with RunLock(out):  # what a live `synthformer train --out X` holds
        code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out", out, *TINY)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is in use by another run" in err, err
    assert sorted(p.name for p in out.iterdir()) == []  # nothing written
    # and a train into a folder a compare is writing is refused the same way
    from synthformer.training.loop import TrainConfig, train
    with RunLock(out):
        with pytest.raises(Exception, match="is in use by another run"):
            train(TrainConfig(data=str(dialogue), out=str(out), steps=1, progress=False))


@pytest.mark.parametrize("where", ["file", "under a file"])
def test_compare_out_that_cannot_be_a_folder_is_one_line(dialogue, tmp_path, where):
    file = tmp_path / "f"
    file.write_text("x")
    code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out",
                                file if where == "file" else file / "sub", *TINY)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_default_seeds_follow_the_size_of_the_validation_split(dialogue):
    """3 seeds by default, 5 when the final evaluation reads under 200 items (here: LM blocks)."""
    from synthformer.evidence.compare import DEFAULTS, default_seeds, eval_items
    from synthformer.training.loop import TrainConfig, prepare_data

    cfg = TrainConfig(**{**DEFAULTS, "data": str(dialogue), "vocab_size": 300, "batch_size": 4})
    data = prepare_data(cfg, 24, log=lambda *a: None)
    blocks = (len(data.encoded["valid"]) - 1) // 24  # block i starts at token 24 i and holds 25 tokens
    assert eval_items(data, cfg) == blocks and 0 < blocks < 200
    assert eval_items(data, TrainConfig(**{**cfg.to_dict(), "final_eval_batches": 1})) == min(blocks, 4)
    assert [default_seeds(n) for n in (blocks, 199, 200, 5000)] == [5, 5, 3, 3]


# ----------------------------------------------------------------------------- report
def row(variant, ppl, tps, params=1000):
    return {"variant": variant, "params": params, "metrics": {"ppl": ppl}, "tokens_per_s": tps}


def test_table_reports_change_and_speed_against_v():
    table = table_markdown([row("V", 100.0, 1000.0), row("R", 110.0, 1500.0), row("dynamicconv", 95.0, 500.0)], "lm")
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
             for line in table.splitlines() if line.startswith("| ") and "---" not in line}
    head = lines["model"]
    r, dc = dict(zip(head, lines["R"])), dict(zip(head, lines["dynamicconv"]))
    assert r["Δ valid PPL vs V"] == "+10.0%" and r["speed vs V"] == "1.50x"
    assert dc["Δ valid PPL vs V"] == "-5.0%" and dc["speed vs V"] == "0.50x"
    assert r["paper: LM1B PPL"] == "40.6" and dc["paper: LM1B PPL"] == "—"


def test_speed_compares_only_runs_on_one_machine():
    """Cells of one grid may train on different machines: a training run's tokens/s is compared with V's only
    when all their seeds ran on the same hardware (runs without a record count as one unknown machine)."""
    def seeded(variant, *machines):
        r = row(variant, 100.0, 1000.0 * len(machines))
        r["seeds"] = [{"seed": i, "tokens_per_s": 1000.0 * len(machines), "hardware": m} for i, m in enumerate(machines)]
        return r

    xeon, epyc = "cpu (Intel Xeon), 1 thread", "cpu (AMD EPYC), 1 thread"
    rows = [seeded("V", epyc, epyc), seeded("R", epyc, xeon), seeded("Fix", epyc, epyc, epyc), seeded("D", xeon)]
    table = table_markdown(rows, "lm")
    cols = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in table.splitlines() if line.startswith("| ") and "---" not in line}
    got = {v: dict(zip(cols["model"], cols[v])) for v in ("V", "R", "Fix", "D")}
    assert got["Fix"]["speed vs V"] == "1.50x" and got["Fix"]["tokens/s"] == "3,000 ± 0"
    assert got["R"]["speed vs V"] == got["R"]["tokens/s"] == "—"  # its own seeds mix two machines
    assert got["D"]["speed vs V"] == "—" and got["D"]["tokens/s"] == "1,000"  # one machine, not V's
    assert f"different machines (cpu (AMD EPYC), 1 thread; cpu (Intel Xeon), 1 thread)" in table
    old = table_markdown([row("V", 100.0, 1000.0), row("R", 110.0, 1500.0)], "lm")  # nothing recorded: compared
    assert "| 1.50x |" in old and "different machines" not in old


def test_findings_and_paper_columns_follow_the_task_kind():
    rows = [row("V", 100.0, 1.0), row("Fix", 150.0, 2.0), row("R", 110.0, 2.0), row("R+V", 99.0, 0.9)]
    lm = {f["claim"]: f["status"] for f in findings(rows, "lm")}
    assert lm["t2-lm1b-fix-vs-r"] == "reproduced" and lm["t4-speed-r-vs-v"] == "reproduced"
    assert not any(name.startswith(("t3-", "t7-", "lra-")) for name in lm)
    rows = [dict(r, metrics={"accuracy": 40.0}) for r in rows]
    assert {f["claim"] for f in findings(rows, "lra-listops")} == {"lra-listops-rv-close-v", "t4-speed-r-vs-v",
                                                                   "t4-speed-rv-close-v"}  # LRA's 1K speed: Text's
    assert "LM1B" not in table_markdown(rows, "classify", kind="lra-listops")
    assert "paper: LRA ListOps acc." in table_markdown(rows, "classify", kind="lra-listops")
    assert "paper: EnDe BLEU" in table_markdown(rows, "seq2seq", kind="seq2seq-mt")
    assert "paper:" not in table_markdown(rows, "seq2seq")  # own data: no paper benchmark
    text = findings_markdown(findings(rows, "lra-listops"))
    assert "Rule:" in text and "LRA" in text


def test_default_variants_are_the_papers():
    assert [variant_name(v) for v in DEFAULT_VARIANTS] == ["V", "Fix", "R", "FR", "D", "FD", "R+V", "D+V",
                                                          "dynamicconv"]
    assert variant_name("random+vanilla") == "R+V" and variant_name("DynamicConv") == "dynamicconv"
    with pytest.raises(ValueError, match="unknown synthesizer"):
        variant_name("XYZ")


@pytest.mark.skipif(not PAPER.exists(), reason=f"paper text not found at {PAPER}")
def test_copied_numbers_match_the_paper_text():
    """Every Table 2 LM1B perplexity and Table 3 dialogue number we ship appears in the paper."""
    text = PAPER.read_text()
    numbers = set(re.findall(r"\d+\.\d+", text))
    for name, values in TABLE2.items():
        assert f"{values['lm1b_ppl']:.2f}" in numbers, (name, values)
        assert f"{values['ende_bleu']:.2f}" in numbers, (name, values)
        assert f"{values['enfr_bleu']:.2f}" in numbers, (name, values)
    for name, values in TABLE3.items():
        for v in values.values():
            assert f"{v:.2f}" in numbers, (name, v)
    assert paper_columns("lm", "Fix")["LM1B PPL"] == 50.52


def test_compare_seeds_two_through_the_cli(dialogue, tmp_path):
    """`compare --seeds 2`: every variant twice on the same data, mean ± std, per-seed rows kept."""
    out = tmp_path / "seeds"
    code, stdout, err = compare_main("--variants", "Fix,R", "--data", dialogue, "--out", out, "--seed", "5", *TINY,
                                     "--seeds", "2")
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    assert results["seeds"] == [5, 6]
    for r in results["variants"]:
        per_seed = [s["metrics"]["ppl"] for s in r["seeds"]]
        assert [s["seed"] for s in r["seeds"]] == [5, 6] and r["n_seeds"] == 2
        assert per_seed[0] != per_seed[1]  # different init and data order
        assert r["metrics"]["ppl"] == pytest.approx(sum(per_seed) / 2)
        assert r["metrics_std"]["ppl"] == pytest.approx(abs(per_seed[0] - per_seed[1]) / 2 ** 0.5)
        for s in r["seeds"]:
            assert Path(s["run"]).name == f"{r['variant']}-seed{s['seed']}"
            stored = json.loads((Path(s["run"]) / "config.json").read_text())["train"]
            assert stored["seed"] == s["seed"] and stored["data"] == str(dialogue)
        # the same data: the same tokenizer in every run
        toks = {(Path(s["run"]) / "tokenizer.json").read_text() for s in r["seeds"]}
        assert len(toks) == 1
    table = (out / "table.md").read_text()
    for r in results["variants"]:  # the 95% interval over the two seeds (and the items' SEs, when given)
        lo, hi = r["interval"]["ppl"]
        assert lo < r["metrics"]["ppl"] < hi and min(s["metrics"]["ppl"] for s in r["seeds"]) > lo
        std = r["metrics_std"]["ppl"]
        assert f"| {r['variant']} | " in table
        assert f"| {r['metrics']['ppl']:.2f} | {std:.2f} | [{lo:.2f}, {hi:.2f}]‡ |" in table  # labelled columns
    assert "| valid PPL: mean | seed spread (std) | 95% interval |" in table
    assert "mean over 2 seed(s); seed spread = sample std" in table
    assert "Warning: 2 seed(s) per variant" in table and "‡ 2 seeds: a t interval with 1 degree" in table
    assert {f["claim"] for f in results["findings"]} == {"t2-lm1b-fix-vs-r", "t2-lm1b-fix-worst"}


@pytest.mark.parametrize("args,message", [
    (["--seeds", "0"], "--seeds=0 must be an integer >= 1"),
    (["--seeds", "-2"], "--seeds=-2 must be an integer >= 1"),
    (["--claims", "Table 9"], "unknown claim or table 'Table 9'; valid tables: Table 2"),
    (["--task-kind", "speech"], "unknown task kind 'speech'; valid: lm"),
    (["--data", "no-such-file.txt"], "no-such-file.txt"),  # found out by loading the data: nothing left behind
])
def test_compare_bad_input_is_one_line_before_any_work(args, message, dialogue, tmp_path):
    code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out", tmp_path / "x", *TINY, *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


def test_compare_section_of_a_config_file(dialogue, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("steps: 3\ncompare:\n  claims: [t2-lm1b-nope]\n")
    code, _, err = compare_main("--data", dialogue, "--out", tmp_path / "x", "--config", cfg)
    assert code == 2 and "unknown claim or table 't2-lm1b-nope'" in err and "t2-lm1b-fix-vs-r" in err
    cfg.write_text("compare:\n  seed_count: 2\n")
    code, _, err = compare_main("--data", dialogue, "--out", tmp_path / "x", "--config", cfg)
    assert code == 2 and "unknown key(s) ['seed_count']" in err and "valid: variants, seeds" in err


def test_demo_runs_the_measured_settings_and_user_arguments_win():
    from synthformer.cli.compare import build_parser
    from synthformer.cli.demo import demo_argv, epilogue

    args, rest = build_parser().parse_known_args(demo_argv([]))
    assert args.seeds == 3 and args.variants == "V,Fix,R" and args.jobs == 2 and args.out == "runs/demo"
    assert args.steps == 600 and rest == ["--tokenizer", "char", "--seq_len", "32", "--batch_size", "64"]
    args, rest = build_parser().parse_known_args(demo_argv(["--seeds", "5", "--steps", "10", "--lr", "1e-3"]))
    assert args.seeds == 5 and args.steps == 10 and rest[-2:] == ["--lr", "1e-3"]
    text = epilogue()  # where the full reproductions are and what they cost
    assert "synthformer reproduce table2 --budget cpu" in text and "core-hours" in text
    assert "reproductions/README.md" in text


def test_a_folder_of_cells_alone_finishes_without_training_and_trains_only_missing_cells(dialogue, tmp_path):
    """Issue 18: a grid completed over several machines. What is committed of a comparison folder is
    settings.json, floor.json and cells/ (the run folders hold weights); a fresh clone holding only
    those must rebuild the same table without training, and train only the cells that are missing."""
    out = tmp_path / "cmp"
    opts = ("--variants", "V,Fix", "--data", dialogue, "--tune", *TINY)
    assert compare_main(*opts, "--out", out)[0] == 0
    first = json.loads((out / "results.json").read_text())
    cells = sorted(p.relative_to(out / "cells").as_posix() for p in (out / "cells").rglob("*.json"))
    assert "V.json" in cells and "Fix.json" in cells and any(c.startswith("tune/V/") for c in cells), cells
    # the committed part only: drop every run folder, the results and the report
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("settings.json", "floor.json", "digests.json", "cells"):
        (shutil.copytree if (out / name).is_dir() else shutil.copy2)(out / name, clone / name)
    (clone / "cells" / "Fix.json").unlink()  # one cell not finished yet on the other machine
    code, stdout, err = compare_main(*opts, "--out", clone)
    assert code == 0, err
    assert "V: finished earlier, reusing its cell" in stdout
    assert "Fix: finished earlier" not in stdout and (clone / "Fix" / "done.json").exists()  # trained again
    assert not (clone / "V").exists() and not (clone / "tune").exists()  # nothing else trained
    again = json.loads((clone / "results.json").read_text())
    for a, b in zip(first["variants"], again["variants"]):
        assert a["metrics"]["ppl"] == pytest.approx(b["metrics"]["ppl"], rel=1e-6)
        assert a["tuned"] == b["tuned"]
    assert (clone / "curves.png").read_bytes()[:4] == b"\x89PNG"  # V's curve drawn from its cell
    # the time reported is what the cells cost, not the few seconds of reusing them
    cost = sum(json.loads(p.read_text())["result"]["wall_s_this_invocation"] for p in (clone / "cells").rglob("*.json"))
    assert again["wall_s"] >= cost > 0
    # a damaged cell is one line naming it; a cell of other settings is refused like a run folder
    (clone / "results.json").unlink()
    shutil.rmtree(clone / "Fix")
    (clone / "cells" / "V.json").write_text("{")
    code, _, err = compare_main(*opts, "--out", clone)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "V.json: contents differ from" in err, err
    record_files(clone, clone / "cells" / "V.json")  # damaged by its writer: the digest vouches, the content not
    code, _, err = compare_main(*opts, "--out", clone)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "V.json: not valid JSON" in err, err
    cell = json.loads((out / "cells" / "V.json").read_text())
    cell["result"]["train"]["lr"] *= 3
    (clone / "cells" / "V.json").write_text(json.dumps(cell))
    record_files(clone, clone / "cells" / "V.json")
    code, _, err = compare_main(*opts, "--out", clone)
    assert code == 2 and "V.json was trained with other settings: lr" in err, err


def test_eval_test_reports_and_judges_the_test_split_the_sweep_never_saw(dialogue, tmp_path):
    """Issue 18: the sweep chooses on validation, so a reproduction reports the test split: every
    variant's metrics, its intervals and the floor row come from the test split, and the table says so."""
    out = tmp_path / "cmp"
    code, _, err = compare_main("--variants", "V,R", "--data", dialogue, "--out", out, "--tune", *TINY,
                                "--eval_test", "true")
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    assert results["split"] == "test"
    for row in results["variants"]:
        done = json.loads((Path(row["run"]) / "done.json").read_text())
        assert row["metrics"]["ppl"] == pytest.approx(done["test"]["ppl"])
        assert row["metrics"]["ppl"] != pytest.approx(done["valid"]["ppl"])  # a different split
        assert row["seeds"][0]["valid_metrics"]["ppl"] == pytest.approx(done["valid"]["ppl"])
        for cand in row["sweep"]:  # the candidates never evaluate the test split
            assert "test" not in json.loads((Path(cand["run"]) / "done.json").read_text())
    from synthformer.evidence.floors import floor_row
    from synthformer.training.plan import open_trained

    data = open_trained(results["variants"][0]["run"], with_data=True).data
    assert results["floor"]["metrics"]["ppl"] == pytest.approx(floor_row("lm", data, "test")["metrics"]["ppl"])
    assert results["floor"]["metrics"]["ppl"] != pytest.approx(floor_row("lm", data, "valid")["metrics"]["ppl"])
    assert "| test PPL: mean |" in (out / "table.md").read_text()  # compare's own table; reproduce keeps "| test PPL |"


def test_gate_note_stops_only_where_v_learns_no_claim_the_floor_gates():
    """`judge.gate_note`: V below the floor on every floor-gated claim of the kind stops the grid; V beating it on
    one (or on a claim's proxy: MT's teacher-forced ppl while BLEU is not learned) does not."""
    from synthformer.evidence.judge import gate_note

    lm_floor = {"variant": "floor", "floor": True, "name": "KN bigram", "metrics": {"ppl": 80.0, "loss": 4.38}}
    assert gate_note({"variant": "V", "metrics": {"ppl": 90.0}}, [lm_floor], "lm").startswith("not learned: V 90")
    assert gate_note({"variant": "V", "metrics": {"ppl": 78.0}}, [lm_floor], "lm") is not None  # not 5% below
    assert gate_note({"variant": "V", "metrics": {"ppl": 70.0}}, [lm_floor], "lm") is None
    assert gate_note({"variant": "V", "metrics": {"ppl": 90.0}}, [], "lm") is None  # no floor: nothing to gate on
    mt_floor = {"variant": "floor", "floor": True, "metrics": {"bleu": 0.1, "ppl": 48.0},
                "names": {"bleu": "copy source", "ppl": "target-side KN bigram"}}
    no_bleu = {"bleu": 0.5}
    assert gate_note({"variant": "V", "metrics": {**no_bleu, "ppl": 20.0}}, [mt_floor], "seq2seq-mt") is None
    assert "not learned: V 0.5" in gate_note({"variant": "V", "metrics": {**no_bleu, "ppl": 60.0}}, [mt_floor],
                                             "seq2seq-mt")
    assert gate_note({"variant": "V", "metrics": {"bleu": 9.0, "ppl": 60.0}}, [mt_floor], "seq2seq-mt") is None


def test_a_gate_v_does_not_clear_stops_the_grid_and_marks_the_claims_of_the_rest(dialogue, tmp_path):
    """A grid with a gate trains V first; below the floor (3 steps), the other variants are not trained, the
    results say so, and every claim naming them is inconclusive with the reason, in the report, the interim
    and the claims' lines; the gate must be the first variant."""
    from synthformer.evidence.judge import finding_line
    from synthformer.evidence.compare import CompareError, compare

    out, logs = tmp_path / "cmp", []
    over = {"data": str(dialogue), "steps": 3, "seq_len": 24, "vocab_size": 300, "batch_size": 4, "eval_every": 2,
            "eval_batches": 2, "threads": 1, "progress": False, "warmup_steps": 1}
    results = compare(["V", "Fix", "R"], over, {}, out, log=logs.append, seeds=1, kind="lm", gate="V")
    assert [r["variant"] for r in results["variants"]] == ["V"]
    gated = results["gated"]
    assert gated["by"] == "V" and gated["skipped"] == ["Fix", "R"] and gated["note"].startswith("not learned: V")
    assert not (out / "Fix").exists() and not (out / "R").exists() and any("not trained (the grid's gate)" in m
                                                                       for m in logs)
    found = {f["claim"]: f for f in results["findings"]}
    fix_vs_r, r_close = found["t2-lm1b-fix-vs-r"], found["t2-lm1b-r-close-v"]
    assert fix_vs_r["status"] == r_close["status"] == "inconclusive"
    assert fix_vs_r["ours"] == {} and set(r_close["ours"]) == {"V"}
    assert "Fix, R were not trained at this budget" in fix_vs_r["note"] and "R were not trained" in r_close["note"]
    assert "Ours (ppl): none trained. Rule:" in finding_line(fix_vs_r)
    assert "t4-speed-r-vs-v" not in found  # speed is not learned: a claim of it waits for its variants
    assert "Stopped after V, the grid's gate: not learned: V" in (out / "table.md").read_text()
    assert json.loads((out / "settings.json").read_text())["gate"] == "V"
    again = compare(["V", "Fix", "R"], over, {}, out, seeds=1, kind="lm", gate="V", interim=True)
    assert again["gated"] == gated  # finished: the same results
    with pytest.raises(CompareError, match="make it the first"):
        compare(["R", "V"], over, {}, tmp_path / "x", seeds=1, gate="V")
    code, stdout, err = compare_main("--variants", "V,Fix", "--data", dialogue, "--gate", "--out", tmp_path / "cli",
                                     *TINY)  # the CLI's --gate: the first variant named
    assert code == 0 and "Fix not trained (the grid's gate)" in stdout and not (tmp_path / "cli" / "Fix").exists()


def _acc_row(variant, accs, interval, examples=70):
    seeds = [{"seed": i, "metrics": {"accuracy": a, "examples": examples}, "tokens_per_s": 1000.0}
             for i, a in enumerate(accs)]
    return {"variant": variant, "params": 1000, "metrics": {"accuracy": sum(accs) / len(accs), "examples": examples},
            "interval": {"accuracy": interval}, "tokens_per_s": 1000.0, "seeds": seeds}


def test_compare_table_clips_intervals_labels_columns_and_speaks_in_points():
    """Issue 50, item 2: `compare --task classify --seeds 2` printed `V 71.43 [9.93, 132.93]`, an accuracy
    interval above 100, unlabelled ± beside [interval], and a relative Δ under a rule in points."""
    from synthformer.evidence.tables import compare_table_markdown

    rows = [_acc_row("V", [64.29, 78.57], [9.93, 132.93]), _acc_row("R", [70.0, 74.0], [40.0, 104.0])]
    table = compare_table_markdown(rows, "classify", kind="classify-topic")
    head = table.splitlines()[0]
    assert "accuracy %: mean | seed spread (std) | 95% interval | Δ accuracy % vs V, points (relative)" in head
    assert "132.93" not in table and "104.00" not in table
    for line in table.splitlines()[2:4]:
        lo, hi = (float(x) for x in re.search(r"\[([\d.]+), ([\d.]+)\]ʷ", line).groups())
        assert 0 <= lo < hi <= 100  # 2 seeds: Wilson over the items, inside the metric's range
    assert "| +0.57 pt (+0.8%) |" in table  # R 72.0 vs V 71.43: points first, relative beside
    assert "ʷ 2 seeds: Wilson interval" in table and "Warning: 2 seed(s) per variant" in table
    # 3 seeds: the row's interval, cut to [0, 100]; no warning
    rows = [_acc_row("V", [90.0, 95.0, 99.0], [85.0, 103.0])]
    table = compare_table_markdown(rows, "classify")
    assert "[85.00, 100.00] |" in table and "Warning" not in table


def test_compare_findings_word_gaps_by_the_metrics_direction():
    """A speed win read "shortfall R vs V -15.5%"; compare's report says "15.5% faster"."""
    from synthformer.evidence.judge import finding_line

    f = {"status": "reproduced", "text": "R faster than V", "table": "Table 4", "benchmark": "steps/s",
         "claim": "t4-speed-r-vs-v", "metric": "tokens_per_s", "paper": {"R": 4.26, "V": 3.9},
         "ours": {"R": {"mean": 5635.0, "std": None, "n": 1}, "V": {"mean": 4833.0, "std": None, "n": 1}},
         "pairs": [{"other": "V", "gap": -0.155, "interval": [-0.21, -0.10]}], "rule": "R better than each"}
    line = finding_line(f, words=True)
    assert "R 15.5% faster than V (95% interval: 21.0% faster to 10.0% faster)" in line and "shortfall" not in line
    assert "shortfall R vs V -15.5% [-21.0%, -10.0%]" in finding_line(f)  # reproduce's reports keep their wording
    f.update(metric="accuracy", ours={"FR": {"mean": 50.09, "std": 6.6, "n": 2, "interval": [-8.997, 109.2]}}, pairs=[])
    assert "FR 50.09 (seed std 6.6; 95% interval [0, 100])" in finding_line(f, words=True)  # labelled, in range
    f.update(metric="ppl", pairs=[{"other": "R", "gap": 0.184, "interval": [0.134, 0.234]}])
    assert "R 18.4% worse than R (95% interval: 13.4% worse to 23.4% worse)" in finding_line(f, words=True)


def test_wilson_interval():
    from synthformer.utils.stats import wilson

    lo, hi = wilson(0.5, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert wilson(1.0, 10)[1] == 1.0 and wilson(0.0, 10)[0] == pytest.approx(0.0, abs=1e-12)


def test_a_finished_comparison_grows_with_more_variants_or_seeds_training_only_new_cells(dialogue, tmp_path):
    """Issue 50, item 4: adding a variant was refused as "other settings" instead of reusing the kept cells."""
    out = tmp_path / "grow"
    args = ["--data", dialogue, "--out", out, *TINY]
    code, _, err = compare_main("--variants", "V,R", *args, "--seeds", "2")
    assert code == 0, err
    stamps = {p.name: (p / "done.json").stat().st_mtime_ns for p in out.iterdir() if (p / "done.json").exists()}
    assert sorted(stamps) == ["R-seed0", "R-seed1", "V-seed0", "V-seed1"]
    code, log, err = compare_main("--variants", "V,R,Fix", *args, "--seeds", "3")
    assert code == 0, err
    assert "extending the comparison (V, R x 2 seed(s)) with variant(s) Fix, 3 seeds" in log
    for name, stamp in stamps.items():  # the kept runs were not trained again
        assert (out / name / "done.json").stat().st_mtime_ns == stamp
    results = json.loads((out / "results.json").read_text())
    assert [r["variant"] for r in results["variants"]] == ["V", "R", "Fix"] and results["seeds"] == [0, 1, 2]
    assert {f["claim"] for f in results["findings"]} >= {"t2-lm1b-fix-vs-r"}
    assert (out / "results.previous.json").exists() and "| Fix |" in (out / "table.md").read_text()
    speed = json.loads((out / "speed.json").read_text())  # every variant timed alike again, the new one included
    assert sorted(speed["rows"]) == ["Fix", "R", "V"]
    # what would change a kept cell is still refused, naming it
    code, _, err = compare_main("--variants", "V,R,Fix", *args, "--seeds", "3", "--lr", "0.01")
    assert code == 2 and "was run with other settings: train.lr" in err
