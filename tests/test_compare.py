"""`synthformer compare` on a tiny budget, the report table and findings, the paper's numbers."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from conftest import run_in_process
from synthformer.compare import DEFAULT_VARIANTS, variant_name
from synthformer.reference_results import TABLE2, TABLE3, paper_columns
from synthformer.report import findings, table_markdown

PAPER = Path(__file__).resolve().parents[2] / "shared" / "paper" / "synthesizer-icml2021.txt"
WORDS = "hello how are you doing today fine thanks what about the weather is nice here".split()


def compare_main(*args) -> tuple[int, str, str]:
    from synthformer.compare import main

    return run_in_process(main, *args)


@pytest.fixture(scope="module")
def dialogue(tmp_path_factory) -> Path:
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("data") / "dialogue.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20)))
                              for _ in range(300)) + "\n")
    return path


TINY = ["--steps", "3", "--seq_len", "24", "--vocab_size", "300", "--batch_size", "4", "--eval_every", "2",
        "--eval_batches", "2", "--threads", "1", "--progress", "false", "--warmup_steps", "1"]


def test_compare_tiny_budget_writes_table_plot_and_results(dialogue, tmp_path):
    out = tmp_path / "cmp"
    code, stdout, err = compare_main("--variants", "V,r+v", "--data", dialogue, "--preset", "tiny",
                                     "--out", out, "--seed", "1", *TINY)
    assert code == 0, err
    table = (out / "table.md").read_text()
    assert "| V |" in table and "| R+V |" in table  # names canonicalised ("r+v" -> "R+V")
    assert "paper: LM1B PPL" in table and "38.21" in table and "40.05" in table
    assert "paper (full scale, TPU)" in table
    assert "R+V at or better than V" in table
    assert "| V |" in stdout  # the table is printed too
    png = (out / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    results = json.loads((out / "results.json").read_text())
    assert [r["variant"] for r in results["variants"]] == ["V", "R+V"]
    for row in results["variants"]:
        assert row["model"]["attention"] == row["variant"] and row["train"]["seed"] == 1
        assert row["train"]["steps"] == 3 and row["metrics"]["ppl"] > 1 and row["tokens_per_s"] > 0
        assert (Path(row["run"]) / "done.json").exists()
    v, rv = results["variants"]
    assert rv["params"] > v["params"]  # R+V adds the H x N x N tables and the mixing weights
    # the same seed: both variants saw the same tokens
    assert v["tokens"] == rv["tokens"] == 3 * 4 * 24
    # a finished comparison is not overwritten
    code, _, err = compare_main("--variants", "V", "--data", dialogue, "--out", out, *TINY)
    assert code == 2 and "already holds a finished comparison" in err
    # its curves can be redrawn from the run folders alone, for the whole comparison or chosen runs
    from synthformer.plots import find_runs, main as plot_main
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


@pytest.mark.parametrize("fix_ppl,expected", [(150.0, "yes"), (105.0, "no")])
def test_findings_check_the_papers_claims(fix_ppl, expected):
    rows = [row("V", 100.0, 1.0), row("Fix", fix_ppl, 2.0), row("R", 110.0, 2.0), row("R+V", 99.0, 0.9)]
    text = "\n".join(findings(rows, "lm"))
    assert f"Fixed Random clearly worst (paper: yes): {expected}" in text
    assert "R/V = 1.100" in text
    assert "R+V at or better than V (paper: yes, D+V best on LM1B): yes" in text
    assert "R speed vs V (paper, Table 4: 1.09x): 2.00x" in text


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
    for name, values in TABLE3.items():
        for v in values.values():
            assert f"{v:.2f}" in numbers, (name, v)
    assert paper_columns("lm", "Fix")["LM1B PPL"] == 50.52
