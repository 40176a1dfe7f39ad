"""The SyntheticAttention contract, for every synthesizer and several mixtures."""
import pytest
import torch

import reference
from conftest import ALL_SPECS, MIXTURES, SINGLE
from synthformer import SyntheticAttention
from synthformer.attention import SYNTHESIZERS, parse_synthesizers
from synthformer.errors import ConfigError, InputError

D, H, N = 16, 2, 12


def make(spec, causal=False, n=N, **kw):
    layer = SyntheticAttention(D, H, n, spec, causal=causal, dense_factors=(3, 4), **kw)
    if layer.mix_logits is not None:  # start away from uniform so the mixture weights matter
        torch.nn.init.normal_(layer.mix_logits)
    return layer


def padding_mask(b, length):
    m = torch.zeros(b, length, dtype=torch.bool)
    m[0, length - 3:] = True  # right padding
    return m


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("length", [5, N])
def test_matches_literal_equations(spec, causal, length):
    layer = make(spec, causal)
    x = torch.randn(2, length, D)
    kpm = padding_mask(2, length)
    want, want_w = reference.attention(layer, x, key_padding_mask=kpm)
    for fast in (True, False):
        layer.fast = fast
        got, _ = layer(x, key_padding_mask=kpm)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    _, w = layer(x, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(w, want_w, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_cross_attention_matches_literal(spec):
    layer = make(spec)
    x, mem = torch.randn(2, 4, D), torch.randn(2, 9, D)
    kpm = padding_mask(2, 9)
    want, _ = reference.attention(layer, x, key_padding_mask=kpm, memory=mem)
    got, _ = layer(x, memory=mem, key_padding_mask=kpm)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_fast_and_reference_paths_agree_with_gradients(spec):
    torch.manual_seed(1)
    layer = make(spec, causal=True)
    x = torch.randn(3, N, D, requires_grad=True)
    kpm = torch.zeros(3, N, dtype=torch.bool)
    kpm[1, 8:] = True
    grads = []
    for fast in (True, False):
        layer.fast = fast
        layer.zero_grad()
        x.grad = None
        out, _ = layer(x, key_padding_mask=kpm)
        (out * torch.linspace(-1, 1, D)).sum().backward()
        grads.append([out.detach(), x.grad.clone()] + [p.grad.clone() for p in layer.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_no_causal_leak(spec):
    layer = make(spec, causal=True)
    x = torch.randn(2, N, D)
    y = x.clone()
    y[:, 7:] = torch.randn(2, N - 7, D)
    for need_weights in (False, True):
        a, _ = layer(x, need_weights=need_weights)
        b, _ = layer(y, need_weights=need_weights)
        torch.testing.assert_close(a[:, :7], b[:, :7])
        assert not torch.allclose(a[:, 7:], b[:, 7:])


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("causal", [False, True])
def test_padding_contents_do_not_matter(spec, causal):
    layer = make(spec, causal)
    x = torch.randn(2, N, D)
    kpm = torch.zeros(2, N, dtype=torch.bool)
    kpm[0, 8:] = True
    kpm[1, 10:] = True
    y = x.clone()
    y[0, 8:] = 100 * torch.randn(N - 8, D)
    y[1, 10:] = 100 * torch.randn(N - 10, D)
    for need_weights in (False, True):
        a, _ = layer(x, key_padding_mask=kpm, need_weights=need_weights)
        b, _ = layer(y, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(a[0, :8], b[0, :8])
        torch.testing.assert_close(a[1, :10], b[1, :10])
    if not causal:  # and the mask is honoured at all (right padding is never visible to causal queries)
        c, _ = layer(y)
        assert not torch.allclose(a[0, :8], c[0, :8], atol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_incremental_decoding_equals_full_forward(spec):
    layer = make(spec, causal=True).eval()
    x = torch.randn(2, N, D)
    full, _ = layer(x)
    cache = layer.init_cache(2)
    steps = [layer(x[:, :3], cache=cache)[0]]  # a prefill of 3 tokens, then one token at a time
    steps += [layer(x[:, t:t + 1], cache=cache)[0] for t in range(3, N)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-4)
    assert cache.pos == N
    with pytest.raises(ValueError, match="exceeds max_seq_len"):
        layer(x[:, :1], cache=cache)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_incremental_cross_attention_uses_memory_once(spec):
    layer = make(spec).eval()
    x, mem = torch.randn(2, 5, D), torch.randn(2, 7, D)
    full, _ = layer(x, memory=mem)
    cache = layer.init_cache(2, cross=True)
    steps = [layer(x[:, t:t + 1], memory=mem, cache=cache)[0] for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", SINGLE)
def test_cache_keeps_keys_only_for_dot_product(spec):
    cache = make(spec, causal=True).init_cache(2)
    assert bool(cache.keys) == (spec == "vanilla")
    assert cache.values.shape == (2, H, N, D // H)


def table1_extra_params(name, d=D, h=H, n=N, k=8, a=3, b=4, bias=True):
    """Trainable parameters beyond V and O, from Table 1 of the paper."""
    return {
        "vanilla": 2 * d * d + (2 * d if bias else 0),
        "dense": d * d + d * n,
        "random": h * n * n,
        "fixed_random": 0,
        "factorized_random": 2 * h * n * k,
        "factorized_dense": d * d + d * (a + b),
    }[name]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("spec", SINGLE + MIXTURES)
def test_parameter_counts_follow_table1(spec, bias):
    layer = make(spec, bias=bias)
    names = parse_synthesizers(spec)
    v_and_o = 2 * (D * D + (D if bias else 0))
    mixture = H * len(names) if len(names) > 1 else 0
    want = v_and_o + mixture + sum(table1_extra_params(n, bias=bias) for n in names)
    assert sum(p.numel() for p in layer.parameters() if p.requires_grad) == want


@pytest.mark.parametrize("spec", SINGLE)
def test_qk_projections_only_with_dot_product(spec):
    layer = make(spec)
    has_qk = any("q_proj" in n or "k_proj" in n for n, _ in layer.named_parameters())
    assert has_qk == (spec == "vanilla")


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_gradients_reach_every_trainable_parameter(spec):
    layer = make(spec, causal=True)
    out, _ = layer(torch.randn(2, N, D))
    out.pow(2).sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


# ----------------------------------------------------------------- pitfalls of public implementations
def test_factorized_random_rows_differ_across_queries():
    layer = make("FR")
    w = layer(torch.randn(1, N, D), need_weights=True)[1][0]  # (H, N, N)
    for h in range(H):
        assert torch.unique(w[h], dim=0).shape[0] == N


def test_factorized_dense_rows_have_n_distinct_logits():
    layer = SyntheticAttention(D, H, 16, "FD", dense_factors=(4, 4))  # tiling both factors: period lcm(4, 4) = 4
    s = layer.members[0].logits(torch.randn(1, 3, D), None, 0, 16).materialize()  # (1, H, 3, 16)
    for row in s.reshape(-1, 16):
        assert torch.unique(row).numel() == 16


def test_factorized_dense_uses_interleave_and_tile():
    layer = make("FD")
    syn = layer.members[0]
    x = torch.randn(1, 1, D)
    s = syn.logits(x, None, 0, N).materialize()[0, :, 0]  # (H, N)
    hid = torch.relu(syn.split_heads(syn.f1(x)))[0, :, 0]  # (H, d_h)
    a_vec = torch.einsum("he,hea->ha", hid, syn.fa)
    b_vec = torch.einsum("he,heb->hb", hid, syn.fb)
    want = a_vec.repeat_interleave(syn.b, dim=1) * b_vec.repeat(1, syn.a)
    torch.testing.assert_close(s, want)


@pytest.mark.parametrize("spec", ["dense", "factorized_dense"])
def test_dense_rows_depend_on_own_token_and_own_head_only(spec):
    layer = make(spec)
    x = torch.randn(1, N, D)
    s = layer.members[0].logits(x, None, 0, N).materialize()  # (1, H, N, N)
    torch.testing.assert_close(s, reference.member_logits(layer, 0, x))
    y = x.clone()
    y[0, 4] = torch.randn(D)
    s2 = layer.members[0].logits(y, None, 0, N).materialize()
    changed = (s - s2).abs().amax(dim=(0, 1, 3)) > 0  # per query position
    assert changed.tolist() == [i == 4 for i in range(N)]
    # head h's logits come from head h's slice of F1 only (no head/position mixing by a bad reshape)
    with torch.no_grad():
        layer.members[0].f1.weight[: D // H] += 1.0  # rows of head 0
    s3 = layer.members[0].logits(x, None, 0, N).materialize()
    assert not torch.allclose(s3[:, 0], s[:, 0]) and torch.allclose(s3[:, 1], s[:, 1])


def test_dense_keys_are_cut_by_key_length_not_query_length():
    layer = make("dense")
    x, mem = torch.randn(1, 3, D), torch.randn(1, 9, D)
    s = layer.members[0].logits(x, None, 0, 9).materialize()
    assert s.shape == (1, H, 3, 9)
    torch.testing.assert_close(s, reference.member_logits(layer, 0, x, memory=mem))


@pytest.mark.parametrize("spec", ["random", "fixed_random", "factorized_random", "dense"])
def test_padding_is_honoured_without_dot_product(spec):
    layer = make(spec)
    kpm = torch.zeros(1, N, dtype=torch.bool)
    kpm[0, 6:] = True
    w = layer(torch.randn(1, N, D), key_padding_mask=kpm, need_weights=True)[1]
    assert torch.all(w[..., 6:] == 0)


def test_random_is_a_saved_trained_parameter_and_fixed_is_a_saved_buffer():
    r = make("R")
    assert r.members[0].r.requires_grad and "members.0.r" in r.state_dict()
    before = r.members[0].r.detach().clone()
    opt = torch.optim.SGD(r.parameters(), lr=1.0)
    r(torch.randn(2, N, D))[0].pow(2).sum().backward()
    opt.step()
    assert not torch.equal(before, r.members[0].r)
    fix = make("Fix")
    assert "members.0.r" in fix.state_dict()
    assert all(p is not fix.members[0].r for p in fix.parameters())
    other = make("Fix")
    other.load_state_dict(fix.state_dict())
    x = torch.randn(1, N, D)
    torch.testing.assert_close(other(x)[0], fix(x)[0])


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_softmax_is_applied(spec):
    layer = make(spec, causal=True)
    w = layer(torch.randn(2, N, D), need_weights=True)[1]
    assert torch.all(w >= 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, H, N))


def test_mixture_weights_start_uniform_and_are_softmaxed():
    layer = SyntheticAttention(D, H, N, "R+D+V")
    torch.testing.assert_close(layer.mixture_weights(), torch.full((H, 3), 1 / 3))


def _sgd(ps):
    return torch.optim.SGD(ps, lr=0.5)


def _manual(ps):
    class Manual:  # a user editing weights in place, no optimizer at all
        def step(self):
            with torch.no_grad():
                for p in ps:
                    p.data.add_(p.grad, alpha=-0.5)

        def zero_grad(self):
            for p in ps:
                p.grad = None
    return Manual()


OPTIMIZERS = {
    "adamw-fused": lambda ps: torch.optim.AdamW(ps, lr=0.05, fused=True),
    "adamw-foreach": lambda ps: torch.optim.AdamW(ps, lr=0.05, foreach=True),
    "adamw-loop": lambda ps: torch.optim.AdamW(ps, lr=0.05, foreach=False),
    "sgd": _sgd, "manual": _manual,
}


@pytest.mark.parametrize("spec", ["R", "FR", "FD", "R+V"])
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("causal", [False, True])
def test_eval_between_optimizer_steps_sees_the_current_weights(spec, opt, causal):
    """No optimizer (fused ones bump no version counter) or in-place edit leaves a stale eval output:
    after every step the trained layer equals a fresh layer loaded from its state dict."""
    torch.manual_seed(0)
    layer = make(spec, causal)
    optimizer = OPTIMIZERS[opt](list(layer.parameters()))
    x = torch.randn(2, N, D)
    for _ in range(3):
        layer.train()
        layer(x)[0].square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        layer.eval()
        fresh = make(spec, causal).eval()
        fresh.load_state_dict(layer.state_dict())
        with torch.no_grad():
            got, want = layer(x)[0], fresh(x)[0]
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_eval_follows_in_place_edits_load_state_dict_and_dtype_moves():
    layer = make("R").eval()
    x = torch.randn(2, N, D)
    with torch.no_grad():
        a = layer(x)[0]
        layer.members[0].r.mul_(3.0)
        b = layer(x)[0]
        layer.fast = False
        c = layer(x)[0]
        layer.fast = True
        other = make("R").eval()
        layer.load_state_dict(other.state_dict())
        d = layer(x)[0]
        e = layer.double()(x.double())[0]
    assert not torch.allclose(a, b)
    torch.testing.assert_close(b, c)
    torch.testing.assert_close(d, other(x)[0])
    torch.testing.assert_close(e.float(), d, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------- names and bad input
@pytest.mark.parametrize("spec,names", [
    ("R+V", ("random", "vanilla")), ("fix", ("fixed_random",)), ("FD", ("factorized_dense",)),
    ("Dense+vanilla", ("dense", "vanilla")), (["fr", "V"], ("factorized_random", "vanilla")),
])
def test_names_and_short_names(spec, names):
    assert parse_synthesizers(spec) == names
    assert parse_synthesizers(make(spec).spec) == names  # the paper's notation round-trips


def test_every_registry_entry_has_a_short_name():
    from synthformer.attention import SHORT_NAMES
    assert set(SHORT_NAMES.values()) == set(SYNTHESIZERS)


@pytest.mark.parametrize("bad,match", [
    (dict(synthesizers="attention"), "unknown synthesizer 'attention'.*vanilla.*factorized_dense"),
    (dict(synthesizers="R+R"), "twice"),
    (dict(num_heads=3), "num_heads=3 must divide embed_dim=16"),
    (dict(synthesizers="FD", dense_factors=(5, 2)), r"dense_factors=\(5, 2\) must multiply to max_seq_len=12"),
    (dict(synthesizers="FR", factorized_k=0), "factorized_k=0"),
    (dict(dropout=1.5), "dropout=1.5"),
])
def test_bad_constructor_arguments(bad, match):
    kwargs = dict(embed_dim=D, num_heads=H, max_seq_len=N, synthesizers="V") | bad
    with pytest.raises(ConfigError, match=match):  # a SynthformerError: the CLI prints it as one line
        SyntheticAttention(**kwargs)


@pytest.mark.parametrize("spec", SINGLE)
def test_bad_inputs(spec):
    layer = make(spec)
    with pytest.raises(InputError, match=r"shape \(batch, length, embed_dim=16\)"):
        layer(torch.randn(N, D))
    with pytest.raises(InputError, match="embed_dim=16"):
        layer(torch.randn(2, N, D + 1))
    with pytest.raises(InputError, match="length 13 exceeds max_seq_len=12"):
        layer(torch.randn(2, N + 1, D))
    with pytest.raises(InputError, match=r"must be bool \(True = padding\) or float .*got torch.int64"):
        layer(torch.randn(2, N, D), key_padding_mask=torch.zeros(2, N, dtype=torch.long))
    with pytest.raises(InputError, match=r"\(2, 12\)"):
        layer(torch.randn(2, N, D), key_padding_mask=torch.zeros(2, N - 1, dtype=torch.bool))
    with pytest.raises(InputError, match="causal"):
        layer.init_cache(2)


def test_default_factorized_dense_factors():
    layer = SyntheticAttention(D, H, 512, "FD")
    assert (layer.members[0].a, layer.members[0].b) == (16, 32)


def test_readme_quick_start():
    attn = SyntheticAttention(embed_dim=64, num_heads=4, max_seq_len=32, synthesizers="R+V", causal=True, dropout=0.1)
    x = torch.randn(2, 20, 64)
    out, weights = attn(x, key_padding_mask=None, need_weights=True)
    assert out.shape == (2, 20, 64) and weights.shape == (2, 4, 20, 20)
    attn.eval()
    cache = attn.init_cache(2)
    steps = [attn(x[:, t:t + 1], cache=cache)[0] for t in range(20)]
    torch.testing.assert_close(torch.cat(steps, 1), attn(x)[0], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("causal", [False, True])
def test_empty_batch_or_length_gives_empty_output(spec, causal):
    """Issue 8.8: B = 0 or L = 0 returns empty outputs of the right shape, as nn.MultiheadAttention does."""
    layer = make(spec, causal)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True)
    for b, length in [(0, 5), (2, 0), (0, 0)]:
        x = torch.randn(b, length, D, requires_grad=True)
        kpm = torch.zeros(b, length, dtype=torch.bool)
        for fast in (True, False):
            layer.fast = fast
            out, w = layer(x, key_padding_mask=kpm, need_weights=not fast)
            assert out.shape == mha(x, x, x)[0].shape == (b, length, D)
            if not fast:
                assert w.shape == (b, H, length, length)
            out.sum().backward()
    if causal:  # one decoding step of no tokens leaves the cache where it was
        cache = layer.init_cache(2)
        out, _ = layer(torch.randn(2, 0, D), cache=cache)
        assert out.shape == (2, 0, D) and cache.pos == 0
    else:  # cross-attention over an empty memory: no key to see, zeros before the output projection
        out, w = layer(torch.randn(2, 3, D), memory=torch.randn(2, 0, D), need_weights=True)
        torch.testing.assert_close(out, layer.out_proj.bias.expand(2, 3, D))
        assert w.shape == (2, H, 3, 0)
