"""Determinism (DESIGN.md section 7): the same settings and seed on the same machine give the same run, bit for
bit: every logged loss and metric and every final weight. For every task kind, with dropout (the RNG in play)."""
from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from test_train import SMALL, data, main  # noqa: F401 (data: the tiny files fixture)

VOLATILE = ("time_s", "_per_s", "eval_s")


def trained(task: str, attention: str, files: dict, out) -> tuple[list[dict], dict]:
    code, _, err = main("train", "--task", task, "--data", files[task], "--attention", attention, "--out", out,
                        *SMALL, "--steps", "4", "--dropout", "0.1", "--seed", "3")
    assert code == 0, err[-2000:]
    rows = [{k: v for k, v in json.loads(line).items() if not any(s in k for s in VOLATILE)}
            for line in (out / "metrics.jsonl").read_text().splitlines()]
    return rows, load_file(out / "model" / "model.safetensors")


# classify and seq2seq in `make test` (the table7 run that did not repeat was a classifier); lm and mlm slow
@pytest.mark.parametrize("task,attention", [("classify", "V"), ("seq2seq", "R+V"),
                                            pytest.param("lm", "D+V", marks=pytest.mark.slow),
                                            pytest.param("mlm", "FR", marks=pytest.mark.slow)])
def test_the_same_settings_and_seed_give_the_same_run_bit_for_bit(task, attention, data, tmp_path):  # noqa: F811
    rows_a, weights_a = trained(task, attention, data, tmp_path / "a")
    rows_b, weights_b = trained(task, attention, data, tmp_path / "b")
    assert len(rows_a) > 4 and rows_a == rows_b
    assert weights_a.keys() == weights_b.keys()
    assert all(weights_a[k].equal(weights_b[k]) for k in weights_a)
