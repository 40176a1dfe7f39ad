"""Optimizer groups: which parameters get the table learning-rate multiplier, which get no decay."""
from __future__ import annotations

import pytest
import torch

from synthformer.attention import SYNTHESIZERS, FullLogits, Synthesizer
from synthformer.attention.synthesizers.base import positions
from synthformer.errors import ConfigError
from synthformer.model import ModelConfig, build_model
from synthformer.training.optim import build_optimizer, param_groups, position_tables, set_lr


def lm(attention, **kw):
    return build_model(ModelConfig.preset("tiny", kind="lm", attention=attention, vocab_size=50, num_layers=1, **kw))


def names_in(model, group):
    ids = {id(p) for p in group["params"]}
    return {n for n, p in model.named_parameters() if id(p) in ids}


def groups_by_name(model, **kw):
    return {g["name"]: g for g in param_groups(model, weight_decay=0.1, **kw)}


@pytest.mark.parametrize("attention,tables", [
    ("V", set()),
    ("Fix", set()),  # Fixed Random's R is a buffer: nothing to train
    ("R", {"r"}),
    ("FR", {"r1", "r2"}),
    ("D", {"f2"}),
    ("FD", {"fa", "fb"}),
    ("R+V", {"r"}),
    ("R+D", {"r", "f2"}),
])
def test_position_tables_get_the_multiplier_and_no_decay(attention, tables):
    model = lm(attention)
    g = groups_by_name(model, table_lr_mult=30.0, position_lr_mult=2.0)
    got = {n.rsplit(".", 1)[-1] for n in names_in(model, g["tables"])} if "tables" in g else set()
    assert got == tables
    assert names_in(model, g["positions"]) == {"embed.pos.weight"}  # the absolute position table
    assert g["positions"]["lr_mult"] == 2.0 and g["positions"]["weight_decay"] == 0.0
    if tables:
        assert g["tables"]["lr_mult"] == 30.0 and g["tables"]["weight_decay"] == 0.0
    assert g["decay"]["lr_mult"] == g["no_decay"]["lr_mult"] == 1.0
    decay = names_in(model, g["decay"])
    assert all(model.get_parameter(n).dim() >= 2 for n in decay)
    assert not any(n.endswith(("bias", "mix_logits")) or "norm" in n for n in decay)
    if "+" in attention:
        assert any(n.endswith("mix_logits") for n in names_in(model, g["no_decay"]))
    assert "embed.tok.weight" in decay  # token embeddings are not indexed by position
    # every trainable parameter in exactly one group
    listed = [id(p) for grp in g.values() for p in grp["params"]]
    assert len(listed) == len(set(listed)) == sum(1 for p in model.parameters() if p.requires_grad)


def test_table_weight_decay_option_and_bad_values():
    model = lm("R")
    assert groups_by_name(model, table_weight_decay=0.05)["tables"]["weight_decay"] == 0.05
    assert groups_by_name(model, table_weight_decay=0.05)["positions"]["weight_decay"] == 0.05
    with pytest.raises(ValueError, match="table_lr_mult=0"):
        param_groups(model, 0.1, table_lr_mult=0)
    with pytest.raises(ValueError, match="position_lr_mult=-1"):
        param_groups(model, 0.1, position_lr_mult=-1)
    with pytest.raises(ValueError, match="weight decay must be >= 0"):
        param_groups(model, -0.1)


def test_optimizer_lr_follows_the_group_multiplier():
    model = lm("R")
    opt = build_optimizer(model, lr=1e-3, weight_decay=0.01, table_lr_mult=10.0)
    assert {g["name"]: g["lr"] for g in opt.param_groups} == pytest.approx(
        {"decay": 1e-3, "no_decay": 1e-3, "tables": 1e-2, "positions": 1e-3})
    set_lr(opt, 5e-4)
    assert {g["name"]: g["lr"] for g in opt.param_groups}["tables"] == pytest.approx(5e-3)
    # one Adam step moves R about lr_mult times further than with no multiplier
    moved = {}
    for mult in (1.0, 10.0):
        torch.manual_seed(0)
        m = lm("R", dropout=0.0)
        r = dict(position_tables(m))["decoder.layers.0.mixer.members.0.r"]
        before = r.detach().clone()
        opt = build_optimizer(m, lr=1e-3, weight_decay=0.0, table_lr_mult=mult)
        ids = torch.randint(0, 50, (2, 16))
        m(ids).logsumexp(-1).mean().backward()
        opt.step()
        moved[mult] = (r.detach() - before).abs().max().item()
    assert moved[10.0] == pytest.approx(10 * moved[1.0], rel=1e-3)


# ---------------------------------------------------------------- a new variant declares its own tables
class KeyPrior(Synthesizer):
    """A toy synthesizer (docs/ARCHITECTURE.md's worked example): one learned logit per (head, key position)."""

    input_dependent = False
    position_tables = ("prior",)

    def __init__(self, embed_dim, num_heads, max_seq_len, options):
        super().__init__(embed_dim, num_heads, max_seq_len, options)
        self.prior = torch.nn.Parameter(torch.zeros(num_heads, max_seq_len))  # (H, N)

    def logits(self, x_q, keys, offset, k_len):
        prior = positions(self.prior, 1, 0, k_len)  # (H, Lk)
        return FullLogits(prior[:, None].expand(-1, x_q.shape[1], -1).unsqueeze(0))  # (1, H, Lq, Lk)


@pytest.mark.parametrize("attention", ["key_prior", "key_prior+V"])
def test_a_new_variant_with_a_position_table_lands_in_the_tables_group_and_trains(attention, monkeypatch):
    """docs/ARCHITECTURE.md "add a variant": one class and one registry line, no other edit."""
    monkeypatch.setitem(SYNTHESIZERS, "key_prior", KeyPrior)
    torch.manual_seed(0)
    model = lm(attention, dropout=0.0)
    g = groups_by_name(model, table_lr_mult=10.0)
    assert names_in(model, g["tables"]) == {"decoder.layers.0.mixer.members.0.prior"}
    assert g["tables"]["lr_mult"] == 10.0 and g["tables"]["weight_decay"] == 0.0
    prior = model.get_parameter("decoder.layers.0.mixer.members.0.prior")
    opt = build_optimizer(model, lr=3e-3, weight_decay=0.01, table_lr_mult=10.0)
    ids = torch.randint(0, 50, (4, 16))
    losses = []
    for _ in range(15):
        logits = model(ids[:, :-1])  # (B, L, vocab)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 50), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.1
    assert prior.detach().abs().max() > 0.01  # the table moved off its zero start


def test_a_position_table_that_names_nothing_is_refused(monkeypatch):
    class Typo(KeyPrior):
        position_tables = ("priors",)

    monkeypatch.setitem(SYNTHESIZERS, "typo", Typo)
    with pytest.raises(ConfigError, match="Typo.position_tables names 'priors', which is neither a parameter"):
        param_groups(lm("typo"), 0.1)
