"""`synthformer plot`: the data behind the attention figures (paper Figures 2-7) and the plots of runs and
benchmarks (one colour per variant, distinct labels, readable ticks)."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import run_cli
from synthformer.attention import SyntheticAttention
from synthformer.errors import InputError
from synthformer.model import ModelConfig, build_model
from synthformer.plots import find_runs
from synthformer.plots.attention import attention_maps, weight_histograms
from synthformer.plots.bench import bench_figure, label_rows
from synthformer.plots.curves import curves_figure
from synthformer.plots.weights import (ModelInput, allowed, capture, histogram, initial_model, learned_table,
                                       load_run, select_layers, sites, validation_input, weight_values)

WORDS = "the cat sat on a mat and dog ran far away from home today".split()
PNG = b"\x89PNG\r\n\x1a\n"


def plot(*args) -> tuple[int, str, str]:
    return run_cli("plot", *args)


# ----------------------------------------------------------------------------- tiny trained runs
@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    from synthformer.training.loop import TrainConfig, train

    root = tmp_path_factory.mktemp("runs")
    rng = random.Random(0)
    (root / "lm.txt").write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
                                           for _ in range(120)) + "\n")
    (root / "cls.tsv").write_text("".join(f"{i % 2}\t{' '.join(rng.choice(WORDS) for _ in range(rng.randint(1, 2)))}\n"
                                          for i in range(120)))
    common = dict(steps=2, seq_len=16, batch_size=4, eval_every=0, final_eval_batches=1, threads=1, progress=False,
                  warmup_steps=1, checkpoint_every=0, tokenizer="char", seed=3)
    out = {}
    for name, task, data, attention, extra in [("R", "lm", "lm.txt", "R", {"lr": 0.05}),
                                                ("V", "lm", "lm.txt", "V", {}),
                                                ("still", "lm", "lm.txt", "D+V", {"lr": 1e-12, "steps": 1}),
                                                ("cls", "classify", "cls.tsv", "V", {})]:
        cfg = TrainConfig(task=task, data=str(root / data), out=str(root / name), **{**common, **extra})
        train(cfg, {"attention": attention, "max_seq_len": 20}, log=lambda m: None)
        out[name] = root / name
    return out


def tiny(kind: str, attention: str, **extra) -> torch.nn.Module:
    cfg = ModelConfig.preset("tiny", kind=kind, attention=attention, vocab_size=40, max_seq_len=12, num_heads=2,
                             num_classes=3, **extra)
    return build_model(cfg).eval()


def padded_input(model) -> ModelInput:
    """Random ids with padding at the end of the second example (every stack)."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 40, (2, 9), generator=g)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[1, 6:] = True
    kind = model.config.kind
    if kind == "seq2seq":
        tgt = torch.randint(5, 40, (2, 7), generator=g)
        tpad = torch.zeros(2, 7, dtype=torch.bool)
        tpad[0, 5:] = True
        return ModelInput((ids, tgt), {"src_padding_mask": pad, "tgt_padding_mask": tpad},
                          {"encoder": ids, "decoder": tgt}, {"encoder": pad, "decoder": tpad})
    stack = "decoder" if kind == "lm" else "encoder"
    return ModelInput((ids,), {"key_padding_mask": pad}, {stack: ids}, {stack: pad})


# ----------------------------------------------------------------------------- the weights
@pytest.mark.parametrize("kind,attention", [("lm", "R+V"), ("classifier", "D"), ("seq2seq", "FD+V"),
                                            ("mlm", "R"), ("classifier", "dynamicconv")])
def test_captured_weights_are_what_each_layer_returns_with_need_weights(kind, attention):
    model = tiny(kind, attention)
    inp = padded_input(model)
    every = sites(model, cross=True)
    assert len(every) == (6 if kind == "seq2seq" else 2)  # encoder, decoder self + cross per layer
    calls = {}  # each mixer's own inputs, recorded independently of `capture`
    hooks = [s.module.register_forward_hook(lambda m, a, kw, o, key=s.key: calls.__setitem__(key, (a, kw)),
                                            with_kwargs=True) for s in every]
    with torch.no_grad():
        plain = model(*inp.args, **inp.kwargs)
        got = capture(model, inp, every)
    for h in hooks:
        h.remove()
    assert set(got) == {s.key for s in every}
    for s in every:
        args, kwargs = calls[s.key]
        with torch.no_grad():
            _, expected = s.module(*args, **{**kwargs, "need_weights": True})
        assert torch.equal(got[s.key], expected.float()), s.key
        if isinstance(s.module, SyntheticAttention):  # a real query gives padded and future keys no weight
            w, keep = got[s.key], allowed(s, inp, got[s.key].shape).expand_as(got[s.key])
            real_query = keep.any(-1, keepdim=True).expand_as(w)
            assert (w[real_query & ~keep] == 0).all(), s.label
    with torch.no_grad():
        again = model(*inp.args, **inp.kwargs)
    assert torch.allclose(plain, again, atol=1e-5)  # the hooks are gone; the model is unchanged
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_weights_rows_sum_to_one_over_the_keys_a_real_query_may_see():
    model = tiny("seq2seq", "R")
    inp = padded_input(model)
    every = sites(model, cross=True)
    got = capture(model, inp, every)
    for s in every:
        w, keep = got[s.key], allowed(s, inp, got[s.key].shape).expand_as(got[s.key])
        real_rows = keep.any(-1)  # (B, H, Lq)
        sums = (w * keep).sum(-1)
        assert torch.allclose(sums[real_rows], torch.ones(()), atol=1e-5), s.label


@pytest.mark.parametrize("causal", [True, False])
def test_learned_table_is_the_softmax_of_the_stored_R_rows(causal):
    kind = "lm" if causal else "classifier"
    model = tiny(kind, "R")
    attn = sites(model)[0].module
    with torch.no_grad():
        attn.members[0].r.normal_(0, 3)  # trained-looking logits, far from uniform
    table = learned_table(attn, 8)
    r = attn.members[0].r[:, :8, :8].detach()  # (H, 8, 8): the stored table
    if causal:
        future = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
        expected = torch.softmax(r.masked_fill(future, float("-inf")), dim=-1)
        assert (table[:, future] == 0).all()
    else:
        expected = torch.softmax(r, dim=-1)
    assert torch.allclose(table, expected, atol=1e-6)
    # and it is what the layer applies to any input of that length
    ids, stack = torch.randint(5, 40, (1, 8)), "decoder" if causal else "encoder"
    inp = ModelInput((ids,), {}, {stack: ids}, {stack: None})
    assert torch.allclose(capture(model, inp, sites(model))[sites(model)[0].key][0], table, atol=1e-5)


def test_learned_table_of_factorized_and_mixed_random_layers():
    attn = SyntheticAttention(16, 2, 10, "Fix+FR", causal=False)
    with torch.no_grad():
        attn.mix_logits.copy_(torch.tensor([[0.3, -0.2], [1.0, 0.0]]))
    alpha = torch.softmax(attn.mix_logits, -1)
    fix, fr = attn.members
    logits = alpha[:, 0, None, None] * fix.r[:, :6, :6] + alpha[:, 1, None, None] * (fr.r1[:, :6] @ fr.r2[:, :6].transpose(1, 2))
    assert torch.allclose(learned_table(attn, 6), torch.softmax(logits, -1).detach(), atol=1e-6)
    with pytest.raises(InputError, match="do not depend on the input"):
        learned_table(SyntheticAttention(16, 2, 10, "R+V"), 6)


def test_histogram_counts_every_allowed_weight_once():
    model = tiny("seq2seq", "D")
    inp = padded_input(model)
    every = sites(model, cross=True)
    got = capture(model, inp, every)
    enc_real, dec_real = (~inp.padding["encoder"]).sum(1), (~inp.padding["decoder"]).sum(1)  # per example
    for s in every:
        v = weight_values(s, inp, got[s.key])
        q = dec_real if s.stack == "decoder" else enc_real
        if s.part == "cross":
            expected = int((q * enc_real).sum())
        elif s.causal:  # real queries see the real keys up to themselves: 1 + 2 + ... + n
            expected = int((q * (q + 1) // 2).sum())
        else:
            expected = int((q * q).sum())
        assert v.numel() == expected * 2, s.label  # two heads
        for log in (False, True):
            counts, edges = histogram(v, bins=7, log=log)
            assert counts.shape == (7,) and edges.shape == (8,)
            assert int(counts.sum()) == v.numel()  # the largest weight in the last bin, zeros in the first
            assert float(edges[-1]) == pytest.approx(float(v.max()))


def test_select_layers_picks_first_middle_last_and_refuses_missing_layers():
    model = tiny("seq2seq", "V", num_layers=5, num_decoder_layers=3)
    every = sites(model)
    assert [s.label for s in select_layers(every, None, "spread")] == ["enc L1", "enc L3", "enc L5", "dec L1",
                                                                         "dec L2", "dec L3"]
    assert [s.label for s in select_layers(every, "1,-1")] == ["enc L1", "enc L5", "dec L1", "dec L3"]
    with pytest.raises(InputError, match="layer 4 does not exist; the decoder has layers 1..3"):
        select_layers(every, "4")
    with pytest.raises(InputError, match="give 'all', 'spread' or layer numbers"):
        select_layers(every, "first")


# ----------------------------------------------------------------------------- runs: input, initial model
def test_initial_model_is_the_one_training_started_from(runs):
    run = load_run(runs["still"])  # trained one step at lr 1e-12: still its initial weights
    state = torch.random.get_rng_state()
    init = initial_model(run)
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's random stream is untouched
    trained = dict(run.model.named_parameters())
    for name, p in init.named_parameters():
        assert torch.allclose(p, trained[name], atol=1e-6), name
    moved = load_run(runs["R"])
    r_now, r_init = (m.decoder.layers[0].mixer.members[0].r for m in (moved.model, initial_model(moved)))
    assert not torch.allclose(r_now, r_init, atol=1e-3)  # R did train


def test_validation_input_is_the_run_s_own_data(runs):
    run = load_run(runs["cls"])
    inp = validation_input(run, examples=3)
    ids, pad = inp.tokens["encoder"], inp.padding["encoder"]
    assert ids.shape[0] == 3 and pad.shape == ids.shape and inp.kwargs["key_padding_mask"] is pad
    text = run.tokenizer.decode(ids[0][~pad[0]].tolist())
    assert text.strip() and set(text) <= set("".join(WORDS) + " ")  # a sentence of the data, maybe cut
    maps = attention_maps(run, inp, example=1)
    real = int((~pad[1]).sum())
    assert [m.weights.shape for m in maps] == [(2, real, real)] * 2  # padding cropped
    assert len(maps[0].query_tokens) == real


def test_histograms_compare_trained_and_initial(runs):
    run = load_run(runs["R"])
    hists = weight_histograms(run, validation_input(run, 4), "R", layers="all", bins=10)
    assert [(h.site.label, h.state) for h in hists] == [("L1", "trained"), ("L1", "initial"), ("L2", "trained"),
                                                        ("L2", "initial")]
    for h in hists:
        assert int(h.counts.sum()) == h.values == 4 * 2 * 16 * 17 // 2  # blocks x heads x causal pairs
    assert hists[0].std != pytest.approx(hists[1].std, abs=1e-6)


# ----------------------------------------------------------------------------- the commands
def test_plot_attention_and_histograms_write_figures(runs, tmp_path):
    code, out, err = plot("attention", "--run", runs["R"], "--out", tmp_path / "a.png")
    assert code == 0, err
    assert "R: L1 R (learned table), L2 R (learned table)" in out
    assert (tmp_path / "a.png").read_bytes()[:8] == PNG
    code, out, err = plot("attention", "--run", runs["R"], "--run", runs["V"], "--layers", "1", "--out",
                          tmp_path / "rv.png")  # Figure 4-5 style: one row per run
    assert code == 0 and "R: L1 R (learned table)\n" in out and "V: L1 V\n" in out, err
    code, out, err = plot("attention", "--run", runs["V"], "--text", "the cat sat", "--layers", "2")
    assert code == 0, err
    assert (runs["V"] / "attention.png").stat().st_size > 1000 and "L2 V" in out and "L1" not in out
    code, out, err = plot("histograms", "--run", runs["R"], "--run", runs["V"], "--out", tmp_path / "h.svg",
                          "--examples", "2", "--log-bins")
    assert code == 0, err
    assert (tmp_path / "h.svg").read_text().lstrip().startswith("<?xml")
    assert "R L1 trained: 544 weights" in out and "V L2 initial" in out  # 2 blocks x 2 heads x 16*17/2
    # two runs of the same variant get two labels; a run's model/ (or a checkpoint) works as --run
    shutil.copytree(runs["V"], tmp_path / "again" / "V")
    code, out, err = plot("histograms", "--run", runs["V"], "--run", tmp_path / "again" / "V" / "model",
                          "--no-init", "--examples", "1", "--out", tmp_path / "twice.png")
    assert code == 0, err
    assert "V (again) L1 trained" in out and f"V ({runs['V'].parent.name}) L1 trained" in out
    code, _, err = plot("histograms", "--run", runs["V"], "--run", runs["V"] / "model", "--examples", "1",
                        "--out", tmp_path / "same.png")
    assert code == 2 and "cannot be told apart" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args,message", [
    (["attention", "--run", "RUN", "--layers", "9"], "layer 9 does not exist"),
    (["attention", "--run", "RUN", "--out", "x.jpg"], "give a file ending in .png, .svg, .pdf"),
    (["attention", "--run", "RUN", "--example", "99"], "--example 99"),
    (["histograms", "--run", "nowhere"], "no such folder"),
    (["histograms", "--run", "RUN", "--bins", "0"], "--bins 0"),
])
def test_plot_bad_input_is_one_line(runs, args, message):
    code, _, err = plot(*[str(runs["R"]) if a == "RUN" else a for a in args])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_baseline_without_attention_weights_says_so(runs, tmp_path):
    folder = tmp_path / "lin"
    shutil.copytree(runs["cls"], folder)
    cfg = json.loads((folder / "config.json").read_text())["model"]
    build_model(ModelConfig.from_dict({**cfg, "attention": "linformer"})).save(folder / "model")
    code, _, err = plot("attention", "--run", folder)
    assert code == 2 and "(linformer) have no attention weights" in err and len(err.strip().splitlines()) == 1


def test_python_dash_m_synthformer_plots():
    proc = subprocess.run([sys.executable, "-m", "synthformer.plots", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and all(w in proc.stdout for w in ("bench", "runs", "attention", "histograms"))


# ----------------------------------------------------------------------------- plot runs / plot bench
def _colours(fig) -> dict[str, set]:
    out: dict[str, set] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            out.setdefault(line.get_label(), set()).add(tuple(line.get_color()) if not isinstance(line.get_color(), str)
                                                         else line.get_color())
    return out


def test_plot_runs_same_named_runs_get_distinct_labels_and_one_colour(runs, tmp_path):
    for group in ("cmp-a", "cmp-b"):
        shutil.copytree(runs["V"], tmp_path / group / "V")
    shutil.copytree(runs["R"], tmp_path / "cmp-a" / "R")
    rows = [json.loads(x) for x in (tmp_path / "cmp-b" / "V" / "metrics.jsonl").read_text().splitlines()]
    (tmp_path / "cmp-b" / "V" / "metrics.jsonl").write_text(  # only validation rows: its first line is in one panel
        "".join(json.dumps(r) + "\n" for r in rows if r["split"] == "valid"))
    found, task = find_runs([str(tmp_path / "cmp-a"), str(tmp_path / "cmp-b" / "V"), str(tmp_path / "cmp-a" / "V")])
    assert sorted(found) == ["R", "V (cmp-a)", "V (cmp-b)"] and task == "lm"  # cmp-a/V named twice: once
    fig = curves_figure(found, task)
    colours = _colours(fig)
    assert set(colours) == set(found) and all(len(c) == 1 for c in colours.values())
    assert len({next(iter(c)) for c in colours.values()}) == 3
    code, out, err = plot("runs", tmp_path / "cmp-a", tmp_path / "cmp-b", "--out", tmp_path / "c.png")
    assert code == 0 and "3 runs" in out and (tmp_path / "c.png").read_bytes()[:8] == PNG, err


def _row(variant, length, tps, **extra):
    return {"variant": variant, "scope": "layer", "mode": "train", "length": length, "tokens_per_s": tps,
            "peak_bytes": 2**20 * length / 64, **extra}


def test_plot_bench_labels_a_case_measured_in_two_files_and_writes_lengths(tmp_path):
    rows = ([dict(_row("V", n, 1e5 / n), _file="a/bench.jsonl") for n in (256, 1024)]
            + [dict(_row("R", n, 2e5 / n), _file="a/bench.jsonl") for n in (256, 1024)]
            + [dict(_row("V", n, 3e5 / n), _file="b/bench.jsonl") for n in (256, 1024)]  # the same cases again
            + [dict(_row("R", 4096, 50.0), _file="b/bench.jsonl")])  # a new length: joins a/'s R line
    labels = {r["label"] for r in label_rows(rows)}
    assert labels == {"V (a/bench.jsonl)", "V (b/bench.jsonl)", "R"}
    fig = bench_figure(rows)
    colours = _colours(fig)
    assert set(colours) == labels and all(len(c) == 1 for c in colours.values())
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["256", "1024", "4096"]  # the lengths themselves, not 2^8
    assert all("e+" not in t.get_text() for t in fig.axes[0].get_yticklabels())
    files = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        files.append(tmp_path / name / "bench.jsonl")
        files[-1].write_text("".join(json.dumps({k: v for k, v in r.items() if k != "_file"}) + "\n"
                                     for r in rows if r["_file"].startswith(name)))
    code, out, err = plot("bench", *files, "--out", tmp_path / "b.pdf")
    assert code == 0 and (tmp_path / "b.pdf").read_bytes()[:4] == b"%PDF", err


def _rows(values, every=100):
    rows = [{"split": "train", "step": s, "tokens": s * 10, "loss": 5.0 - s / 100} for s in range(10, 301, 10)]
    return rows + [{"split": "valid", "step": (i + 1) * every, "tokens": (i + 1) * every * 10, "ppl": v}
                   for i, v in enumerate(values)]


def test_curves_draw_every_seed_and_the_floor_line():
    """Issue 50: curves.png drew seed 0 only, no floor line, and one unexplained dot per variant when the
    validation ran at the end only."""
    fig = curves_figure({"V": (_rows([200, 150, 120]), _rows([210, 160, 125])), "R": (_rows([190, 140, 110]),)},
                        "lm", floor={"name": "KN bigram", "metrics": {"ppl": 81.0}})
    valid = fig.axes[1]
    assert len(valid.lines) == 3 + 1  # V's two seeds, R's one, the floor
    floor = [line for line in valid.lines if line.get_linestyle() == "--"]
    assert len(floor) == 1 and list(floor[0].get_ydata()) == [81.0, 81.0]
    assert sorted(t.get_text() for t in valid.get_legend().get_texts()) == ["R", "V", "floor: KN bigram"]
    assert "2 seeds each" in fig.axes[0].get_title()
    fig = curves_figure({"V": _rows([120], every=300)}, "lm")
    assert "evaluated at the end only" in fig.axes[1].get_title()


def test_plot_runs_notes_runs_tokenized_differently(tmp_path):
    from synthformer.plots.curves import tokenizer_note

    folders = {}
    for name, vocab in (("a", 4000), ("b", 2000), ("c", 2000)):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "config.json").write_text(json.dumps({"train": {"data": "chitchat", "tokenizer": "bpe",
                                                                         "vocab_size": vocab}}))
    note = tokenizer_note(folders)
    assert "not tokenized alike" in note and "a: chitchat, bpe 4000" in note and "b, c: chitchat, bpe 2000" in note
    assert tokenizer_note({k: folders[k] for k in ("b", "c")}) is None
