"""Property-based fuzzing (issue 8.5): the fast paths equal the literal path in outputs and gradients.

Random variant or mixture (any subset of the registry, any order), causal or not, self- or cross-attention,
lengths, key padding, bool/float masks of shape (Lq, Lk) or (B or 1, H or 1, Lq, Lk), fp32/fp64, training
with gradients or no-grad eval. Bounded and derandomized: the same examples on every run, in seconds.
"""
from pathlib import Path

import pytest
import torch

from synthformer import SyntheticAttention
from synthformer.attention import SYNTHESIZERS

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

D, H, N = 8, 2, 8
NAMES = list(SYNTHESIZERS)


@st.composite
def cases(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    cross = draw(st.booleans())
    case = {
        "names": names, "causal": not cross and draw(st.booleans()), "cross": cross,
        "b": draw(st.integers(1, 3)), "lq": draw(st.integers(1, N)), "dtype": draw(st.sampled_from(["fp32", "fp64"])),
        "train": draw(st.booleans()), "padding": draw(st.booleans()),
        "mask": draw(st.sampled_from([None, "bool", "float"])),
        "mask_shape": draw(st.sampled_from(["2d", "4d", "4d-b1", "4d-h1"])), "seed": draw(st.integers(0, 2 ** 16)),
    }
    case["lk"] = draw(st.integers(1, N)) if cross else case["lq"]
    return case


def build(case):
    g = torch.Generator().manual_seed(case["seed"])
    dtype = torch.float64 if case["dtype"] == "fp64" else torch.float32
    torch.manual_seed(case["seed"])
    layer = SyntheticAttention(D, H, N, case["names"], causal=case["causal"], dense_factors=(2, 4), factorized_k=3)
    if layer.mix_logits is not None:
        torch.nn.init.normal_(layer.mix_logits)
    layer.to(dtype).train(case["train"])
    b, lq, lk = case["b"], case["lq"], case["lk"]
    x = torch.randn(b, lq, D, generator=g, dtype=dtype).requires_grad_(case["train"])
    kw = {"memory": torch.randn(b, lk, D, generator=g, dtype=dtype) if case["cross"] else None}
    if case["padding"]:
        kw["key_padding_mask"] = torch.rand(b, lk, generator=g) < 0.3  # rows may lose every key: zeros
    if case["mask"] is not None:
        shape = {"2d": (lq, lk), "4d": (b, H, lq, lk), "4d-b1": (1, H, lq, lk), "4d-h1": (b, 1, lq, lk)}[case["mask_shape"]]
        if case["mask"] == "bool":
            kw["attn_mask"] = torch.rand(*shape, generator=g) < 0.3
        else:
            kw["attn_mask"] = torch.randn(*shape, generator=g, dtype=dtype)
    return layer, x, kw


def outputs(layer, x, kw, fast):
    layer.fast = fast
    layer.zero_grad(set_to_none=True)
    x.grad = None
    with torch.set_grad_enabled(layer.training):
        out, _ = layer(x, **kw)
    if not layer.training:
        return [out]
    (out * torch.linspace(-1, 1, D, dtype=out.dtype)).sum().backward()
    return [out.detach(), x.grad] + [p.grad if p.grad is not None else torch.zeros_like(p) for p in layer.parameters()]


@hypothesis.settings(max_examples=60, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(cases())
def test_fast_path_equals_literal_path(case):
    layer, x, kw = build(case)
    want = outputs(layer, x, kw, fast=False)
    for _ in range(1 if layer.training else 2):  # eval twice: the second call may reuse the cached softmax
        got = outputs(layer, x, kw, fast=True)
        tol = {"atol": 1e-10, "rtol": 1e-8} if case["dtype"] == "fp64" else {"atol": 3e-5, "rtol": 1e-4}
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, **tol)


# ----------------------------------------------------------------------------- the CLI's file arguments (issue 21)
RUN_FILES = ["config.json", "tokenizer.json", "done.json", "metrics.jsonl", "manifest.json",
             "checkpoints/latest.json", "model/config.json", "model/manifest.json"]
TINY = ["--batch_size", "4", "--seq_len", "16", "--vocab_size", "280", "--eval_every", "0", "--eval_batches", "1",
        "--threads", "1", "--progress", "false", "--warmup_steps", "1", "--max_examples", "60", "--steps", "2",
        "--embed_dim", "16", "--num_layers", "1", "--ffn_dim", "32", "--max_seq_len", "32", "--decode_examples", "0"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from conftest import run_cli

    base = tmp_path_factory.mktemp("fuzz")
    words = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()
    (base / "lm.txt").write_text("".join(" ".join(words[(i * 7 + j) % len(words)] for j in range(9)) + "\n"
                                         for i in range(120)))
    code, _, err = run_cli("train", "--data", base / "lm.txt", "--out", base / "run", *TINY)
    assert code == 0, err[-2000:]
    return base / "run"


def _damaged(data, raw: bytes) -> bytes:
    """Bytes cut, a bit flipped, random bytes, or JSON of another shape."""
    how = data.draw(st.sampled_from(["truncate", "flip", "bytes", "json"]))
    if how == "truncate":
        return raw[:data.draw(st.integers(0, max(0, len(raw) - 1)))]
    if how == "flip" and raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        return raw[:i] + bytes([raw[i] ^ (1 << data.draw(st.integers(0, 7)))]) + raw[i + 1:]
    if how in ("bytes", "flip"):
        return data.draw(st.binary(max_size=64))
    leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8)
    value = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                         max_leaves=8)
    return __import__("json").dumps(data.draw(value)).encode()


@hypothesis.settings(max_examples=30, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow,
                                            hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(data=st.data())
def test_damaged_run_files_give_a_result_or_one_line_never_a_traceback(finished_run, tmp_path_factory, data):
    """Any run file damaged (and, half the time, its manifest rewritten to match, so the parsers behind
    the checksums are reached too): eval, generate and resume exit 0 or 2 with one line, never a traceback."""
    import shutil

    from conftest import run_cli
    from synthformer.utils.integrity import write_manifest
    from synthformer.training.runs import UNFINISHED

    run = Path(shutil.copytree(finished_run, tmp_path_factory.mktemp("case") / "run"))
    name = data.draw(st.sampled_from(RUN_FILES))
    (run / name).write_bytes(_damaged(data, (run / name).read_bytes()))
    if data.draw(st.booleans()) and name.endswith(".json") and "manifest" not in name:
        folder = (run / name).parent
        write_manifest(folder, skip=UNFINISHED - {"done.json", "metrics.jsonl"} if folder == run else ())
    command = data.draw(st.sampled_from([("eval", "--run", run, "--max-batches", "1", "--threads", "1"),
                                         ("generate", "--run", run, "the", "--max-new-tokens", "2"),
                                         ("train", "--resume", "--out", run)]))
    code, _, err = run_cli(*command)
    lines = [line for line in err.splitlines() if line.startswith("synthformer: error")]
    assert "Traceback" not in err and (code == 0 or code == 2 and len(lines) == 1), (name, command, err[-1500:])


@hypothesis.settings(max_examples=12, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(data=st.data())
def test_fuzzed_data_files_train_or_give_one_line(tmp_path_factory, data):
    """A .jsonl / .tsv / .txt data file with fields of any JSON type, or arbitrary bytes."""
    import json

    from conftest import run_cli

    ext = data.draw(st.sampled_from([".jsonl", ".tsv", ".txt"]))
    task = {".jsonl": data.draw(st.sampled_from(["lm", "classify", "seq2seq"])), ".tsv": "classify", ".txt": "lm"}[ext]
    field = st.text(max_size=12) | st.integers() | st.lists(st.text(max_size=3), max_size=2) | st.none() | \
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
    good = " ".join("abcdefgh"[i % 8] * 3 for i in range(6))
    rows = data.draw(st.lists(st.fixed_dictionaries({"text": field, "label": field, "src": field, "tgt": field}),
                              min_size=1, max_size=4))
    if ext == ".jsonl":
        body = "\n".join([json.dumps({"text": good, "label": "a", "src": good, "tgt": good})] * 30
                         + [json.dumps(r) for r in rows])
    else:
        sep = "\t" if ext == ".tsv" else " "
        body = "\n".join([f"a{sep}{good}"] * 30) + "\n" + data.draw(st.binary(max_size=80)).decode("latin-1")
    file = tmp_path_factory.mktemp("data") / f"d{ext}"
    file.write_bytes(body.encode("utf-8") if ext == ".jsonl" else body.encode("latin-1"))
    out = file.parent / "run"
    code, _, err = run_cli("train", "--task", task, "--data", file, "--out", out, *TINY)
    lines = [line for line in err.splitlines() if line.startswith("synthformer: error")]
    assert "Traceback" not in err and (code == 0 or code == 2 and len(lines) == 1), (body[-300:], err[-1500:])
