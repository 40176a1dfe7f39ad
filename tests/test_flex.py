"""The FlexAttention path (learned bias beside a dot product on CUDA): numerics on CPU, where PyTorch runs
FlexAttention's forward eagerly (its CPU backward is not implemented; the GPU run is benchmarks/gpu.sh)."""
import warnings

import pytest
import torch

from synthformer import SyntheticAttention
from synthformer.attention.kernels import mixture
from synthformer.attention.kernels import paths
from synthformer.attention.kernels.paths import Path

pytestmark = pytest.mark.skipif(not paths.flex_available(), reason="this torch has no FlexAttention")


@pytest.mark.parametrize("spec,mode", [("R+V", "plain"), ("R+V", "causal"), ("R+D", "pad"), ("FD+V", "float"),
                                       ("R+D+V", "causal-pad")])
def test_flex_path_equals_the_literal_path(spec, mode, monkeypatch):
    torch.manual_seed(0)
    b, length, d, h = 2, 8, 16, 2
    attn = SyntheticAttention(d, h, length, spec, causal="causal" in mode).eval()
    with torch.no_grad():
        for p in attn.parameters():  # mixture weights away from uniform, R away from its small init
            p.add_(torch.randn_like(p) * 0.3)
    x = torch.randn(b, length, d)
    kw = {}
    if "pad" in mode:
        kw["key_padding_mask"] = torch.tensor([[False] * 5 + [True] * 3, [False] * 8])
    if mode == "float":
        kw["attn_mask"] = torch.randn(length, length)
    taken = []
    monkeypatch.setattr(paths, "choose_path", lambda r: Path.LITERAL if r.literal else taken.append(r) or Path.FLEX)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager FlexAttention warns that it is unfused
        got, _ = attn(x, **kw)
        want, _ = attn(x, need_weights=True, **kw)  # need_weights: the literal path, whatever choose_path says
    assert taken and torch.allclose(got, want, atol=1e-5, rtol=1e-4)


def test_cuda_training_with_a_learned_bias_routes_to_literal_then_flex():
    r = paths.Route(forms=("full", "dot"), input_dependent=True, full_needs_grad=True, training=True, grad=True,
                    dropout=0.0, key_padding=False, attn_mask=None, masks_batch_free=True, device="cuda",
                    logits_per_example=64, exporting=False, literal=False)
    assert paths.choose_path(r) is Path.LITERAL  # few logits: the literal path is faster on a GPU
    assert paths.choose_path(paths.Route(**{**r.__dict__, "batch": paths.CUDA_LITERAL_ELEMENTS})) is Path.FLEX
    cpu = Path.MIXTURE if mixture.available() else Path.BLOCKED  # the compiled CPU kernel where it is built
    assert paths.choose_path(paths.Route(**{**r.__dict__, "device": "cpu"})) is cpu


def run_script(name: str, *args: str):
    """A script of benchmarks/ in a fresh process, one thread, the repository on its path."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(root / "benchmarks" / name), *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow  # 25 s: the whole script on CPU
def test_the_gpu_checks_script_passes_its_cpu_try():
    """benchmarks/gpu_checks.py (part 1 of benchmarks/gpu.sh) runs where a GPU is lent only now and then: its
    CPU try (flex forced, forward only; every variant's step against the literal path) must keep passing."""
    proc = run_script("gpu_checks.py", "--device", "cpu")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    import re
    assert re.search(r"^(\d+) of \1 checks passed", proc.stdout, re.M), proc.stdout[-2000:]


@pytest.mark.slow  # 8 s: the script on CPU
def test_the_gpu_routes_script_agrees_on_every_route_in_its_cpu_try():
    """benchmarks/gpu_routes.py (part 3 of gpu.sh) on CPU, small: every forced route of shared logits and of
    learned full logits gives today's output and gradients (its 'equal' column), and the script runs."""
    proc = run_script("gpu_routes.py", "--device", "cpu", "--lengths", "64", "--tokens", "256", "--repeats", "1",
                      "--shared", "R,FR", "--mixtures", "R+V,FD")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 64 |")]
    assert len(rows) == 2 * 4 and all(line.endswith("| yes |") for line in rows), proc.stdout
