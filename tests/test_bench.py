"""synthformer bench / plot: end-to-end on a tiny configuration (no timing assertions)."""
import json

import pytest
import torch

from synthformer import bench, plots

ROW_FIELDS = {"variant", "scope", "mode", "length", "batch", "dtype", "device", "threads", "torch", "median_ms",
              "tokens_per_s", "flop", "gflops_per_s", "peak_bytes", "peak_method", "cache_bytes"}
TINY = ["--lengths", "16", "--tokens", "32", "--embed-dim", "16", "--heads", "2", "--model-lengths", "12",
        "--model-tokens", "24", "--decode-batch", "2", "--repeats", "1", "--warmup", "0", "--threads", "1"]


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "runs.jsonl"
    code = bench.main(TINY + ["--variants", "V,R,R+V,dynamicconv", "--model-variants", "V,R",
                              "--out", str(out)])
    assert code == 0
    return out


def test_bench_writes_valid_rows(run_file, capsys):
    rows = [json.loads(line) for line in run_file.read_text().splitlines()]
    # layer: 5 variants x (train, infer); model: 3 variants x (train, infer, decode)
    assert len(rows) == 4 * 2 + 2 * 3
    for r in rows:
        assert ROW_FIELDS <= set(r)
        assert r["median_ms"] > 0 and r["tokens_per_s"] > 0
        assert r["torch"] == torch.__version__ and r["dtype"] == "float32" and r["device"].startswith("cpu")
        assert r["peak_bytes"] is None or r["peak_bytes"] >= 0
    assert {r["variant"] for r in rows if r["scope"] == "layer"} == {"V", "R", "R+V", "dynamicconv"}
    decode = {r["variant"]: r for r in rows if r["mode"] == "decode"}
    assert decode["R"]["cache_bytes"] * 2 == decode["V"]["cache_bytes"]  # values only vs keys + values
    assert all(r["flop"] > 0 for r in rows if r["mode"] != "decode")


def test_bench_prints_ratio_table(tmp_path, capsys):
    threads = torch.get_num_threads()
    assert bench.main(TINY + ["--scope", "layer", "--modes", "infer", "--variants", "R,V", "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert torch.get_num_threads() == threads  # --threads is restored on return
    assert "speed x V" in out and "layer  infer" in out


@pytest.mark.parametrize("argv,msg", [(["--variants", "nope"], "unknown synthesizer"),
                                      (["--modes", "fly"], "unknown scope/mode"),
                                      (["--device", "cuda:0"], "CUDA")])
def test_bench_bad_arguments(argv, msg, capsys):
    if "cuda" in argv[-1] and torch.cuda.is_available():
        pytest.skip("CUDA present")
    assert bench.main(TINY + argv) == 2
    assert msg in capsys.readouterr().err


def test_flop_counts_follow_the_structure():
    f = lambda v: bench.layer_flops(v, 2, 64, 32, 4, 64)  # noqa: E731
    assert f("R") < f("FR") < f("D") < f("V") <= f("R+V") < f("D+V")


def test_plot_reads_jsonl_and_writes_png(run_file, tmp_path):
    png = tmp_path / "fig.png"
    assert plots.main(["bench", str(run_file), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_rejects_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"variant": "V"}\n')
    assert plots.main(["bench", str(bad), "--out", str(tmp_path / "x.png")]) == 2
    assert "lacks" in capsys.readouterr().err
