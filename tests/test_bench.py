"""synthformer bench / plot: end-to-end on a tiny configuration (no timing assertions)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from synthformer import bench
from synthformer.cli import main as cli_main

def bench_main(argv: list[str]) -> int:
    return cli_main(["bench", *argv])


ROW_FIELDS = {"variant", "scope", "mode", "length", "batch", "dtype", "device", "threads", "torch", "median_ms",
              "tokens_per_s", "flop", "gflops_per_s", "peak_bytes", "peak_method", "cache_bytes"}
TINY = ["--lengths", "16", "--tokens", "32", "--embed-dim", "16", "--heads", "2", "--model-lengths", "12",
        "--model-tokens", "24", "--decode-batch", "2", "--repeats", "1", "--warmup", "0", "--threads", "1"]


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "runs.jsonl"
    code = bench_main(TINY + ["--variants", "V,R,R+V,dynamicconv", "--model-variants", "V,R",
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
    assert bench_main(TINY + ["--scope", "layer", "--modes", "infer", "--variants", "R,V", "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert torch.get_num_threads() == threads  # --threads is restored on return
    assert "speed x V" in out and "layer  infer" in out


@pytest.mark.parametrize("argv,msg", [(["--variants", "nope"], "unknown synthesizer"),
                                      (["--modes", "fly"], "unknown scope/mode"),
                                      (["--device", "cuda:0"], "CUDA"),
                                      (["--precision", "fp8"], "--precision")])
def test_bench_bad_arguments(argv, msg, capsys):
    if "cuda" in argv[-1] and torch.cuda.is_available():
        pytest.skip("CUDA present")
    assert bench_main(TINY + argv) == 2
    assert msg in capsys.readouterr().err


def test_flop_counts_follow_the_structure():
    f = lambda v: bench.layer_flops(v, 2, 64, 32, 4, 64)  # noqa: E731
    assert f("R") < f("FR") < f("D") < f("V") <= f("R+V") < f("D+V")


def test_plot_reads_jsonl_and_writes_png(run_file, tmp_path):
    png = tmp_path / "fig.png"
    assert cli_main(["plot", "bench", str(run_file), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_rejects_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"variant": "V"}\n')
    assert cli_main(["plot", "bench", str(bad), "--out", str(tmp_path / "x.png")]) == 2
    assert "lacks" in capsys.readouterr().err


# ----------------------------------------------------------------------------- FLOPs of the baselines
@pytest.mark.parametrize("name,option,attr", [("lightconv", "kernel", "kernel_size"),
                                              ("dynamicconv", "kernel", "kernel_size"),
                                              ("linformer", "linformer_k", "k")])
def test_baseline_flops_use_the_options_the_mixers_are_built_with(name, option, attr):
    from synthformer.mixers import build_mixer
    built = getattr(build_mixer(name, 32, 4, 64), attr)  # the mixer's real default (ModelConfig's too)
    assert built == bench.cases.config_default({"kernel": "kernel_size"}.get(option, option))
    f = lambda **kw: bench.layer_flops(name, 2, 64, 32, 4, 64, **kw)  # noqa: E731
    assert f() == f(**{option: built})
    assert f(**{option: built}) != f(**{option: built + 8})  # the option is counted at all


def test_model_flops_follow_the_model_config():
    from synthformer import ModelConfig
    cfg = ModelConfig.preset("tiny", kind="lm", attention="dynamicconv", kernel_size=3, max_seq_len=16)
    wide = ModelConfig.preset("tiny", kind="lm", attention="dynamicconv", kernel_size=15, max_seq_len=16)
    assert bench.model_flops("dynamicconv", cfg, 2, 16) < bench.model_flops("dynamicconv", wide, 2, 16)


# ----------------------------------------------------------------------------- targets (data, not code)
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "cpu-2threads.jsonl"


def test_report_of_recorded_results_is_the_issue5_table(capsys):
    assert bench_main(["--report", str(RESULTS)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == ["| target | L | measured | met |", "|---|---|---|---|", "| **issue 5: layer** | | | |",
                         "| R layer train speed vs V >= 2.0x | 256 | 2.19x | yes |"]
    for expected in ("| R layer train speed vs V >= 1.0x | 4096 | 0.93x | **no** |",
                     "| FR peak memory / materialised (B,H,L,L) weights <= 0.5 | 4096 | 0.16x | yes |",
                     "| D+V layer train time / V time <= 1.3 | 4096 | 1.65x | **no** |",
                     "| model train tokens/s R / dynamicconv >= 1.6 | 256 | 1.05x | **no** |",
                     "| decode cache bytes R / V <= 0.5 | 256 | 0.50x | yes |"):
        assert expected in lines
    issue13 = lines.index("| **issue 13: layer (fp32 unless named)** | | | |")
    assert len(lines[:issue13]) == 25  # the 21 issue-5 lines, the header, two section titles
    assert "| 13.1 R layer train speed vs V >= 1.5x | 4096 | 0.93x | **no** |" in lines


def test_precision_targets_compare_bf16_with_fp32_rows(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("sections:\n  - scope: model\n    targets:\n"
                    "      - {name: 'V bf16 vs fp32', variant: V, vs: V, mode: train, metric: speed, at_least: 2,"
                    " precision: bf16, vs_precision: fp32}\n"
                    "      - {name: 'R vs V in bf16', variant: R, vs: V, mode: train, metric: speed, at_least: 2,"
                    " precision: bf16}\n")
    rows = [_row("V", scope="model", ms=30.0), _row("V", scope="model", ms=10.0, precision="bf16"),
            _row("R", scope="model", ms=8.0, precision="bf16"), _row("R", scope="model", ms=1.0)]
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(json.dumps(r) for r in rows))
    assert bench_main(["--report", str(runs), "--targets", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["| V bf16 vs fp32 | 64 | 3.00x | yes |",
                                                        "| R vs V in bf16 | 64 | 1.25x | **no** |"]


def test_bench_runs_fp32_and_bf16_autocast_in_one_group(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    assert bench_main(["--scope", "layer", "--modes", "train", "--lengths", "16", "--tokens", "32",
                       "--variants", "V,R", "--precision", "fp32,bf16", "--bf16-variants", "R", "--repeats", "1",
                       "--warmup", "0", "--no-memory", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["variant"], r["precision"]) for r in rows] == [("V", "fp32"), ("R", "fp32"), ("R", "bf16")]
    assert set(rows[0]["matmul_gflops"]) == {"fp32", "bf16"}
    text = capsys.readouterr().out
    assert "GFLOP/s fp32" in text and "bf16 units:" in text and "| target | L | measured | met |" in text


def _row(variant, length=64, mode="train", scope="layer", ms=10.0, **kw):
    return dict(variant=variant, scope=scope, mode=mode, length=length, median_ms=ms, batch=2, num_heads=2,
                tokens_per_s=1000.0 / ms, peak_bytes=None, cache_bytes=None, **kw)


def test_targets_table_reads_its_targets_from_a_file(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("sections:\n  - scope: layer\n    targets:\n"
                    "      - {name: 'R twice as fast', variant: R, vs: V, mode: train, metric: speed, at_least: 2}\n"
                    "      - {name: 'Fix present', variant: Fix, vs: V, mode: train, metric: speed, at_least: 1,"
                    " missing: n/a}\n"
                    "      - {name: 'FR skipped when absent', variant: FR, vs: V, mode: train, metric: speed,"
                    " at_least: 1}\n")
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(json.dumps(r) for r in (_row("V", ms=30.0), _row("R", ms=10.0))))
    assert bench_main(["--report", str(runs), "--targets", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["| R twice as fast | 64 | 3.00x | yes |",
                                                        "| Fix present | 64 | n/a | n/a |"]


def test_bad_targets_file_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("sections:\n  - scope: layer\n    targets:\n      - {name: x, variant: R, metric: nope}\n")
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps(_row("V")) + "\n")
    assert bench_main(["--report", str(runs), "--targets", str(path)]) == 2
    assert "bad target" in capsys.readouterr().err


def test_library_code_holds_no_issue_targets():
    src = "".join(p.read_text() for p in Path(bench.__file__).parent.glob("*.py"))
    assert "issue 5" not in src.lower() and "issue-5" not in src.lower() and ">= 1.3" not in src


def test_python_dash_m_runs_the_package():
    proc = subprocess.run([sys.executable, "-m", "synthformer.bench", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "synthformer bench" in proc.stdout and "--targets" in proc.stdout
