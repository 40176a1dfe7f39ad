"""Which path each call takes (DESIGN.md section 3 rule 9): the route of every registry variant and mixture
in every mode, down to the kernel below the path, the CUDA-only branch, and the dropout-in-training fast paths.

The table is written out by hand from the rules in synthformer/attention/kernels/paths.py (choose_path,
choose_shared_product) and blocked.py (choose_kernel), so a changed route shows up here by name, not only as a
slower or (worse) silently different result.
"""
import dataclasses
import warnings

import pytest
import torch

import synthformer.attention.kernels.blocked as blocked_mod
from conftest import ALL_SPECS
from synthformer import SyntheticAttention
from synthformer.attention.kernels import mixture
from synthformer.attention.kernels import aten, paths
from synthformer.attention.kernels.blocked import Kernel
from synthformer.attention.kernels.paths import Path, SharedProduct, choose_path

D, H, N, B, L = 8, 2, 8, 2, 6
BLOCK_ELEMENTS, FEW_QUERIES = blocked_mod.BLOCK_ELEMENTS, paths.FEW_QUERIES
# path, then the choice below it: shared_softmax's product, or the kernel of blocked / shared_blocked
CODES = {"L": (Path.LITERAL,), "SF": (Path.SHARED_FUSED,), "F": (Path.FUSED,), "X": (Path.FLEX,),
         "S.e": (Path.SHARED_SOFTMAX, SharedProduct.PER_EXAMPLE), "S.f": (Path.SHARED_SOFTMAX, SharedProduct.FOLDED),
         "S.n": (Path.SHARED_SOFTMAX, SharedProduct.NORMALISED),
         "SB.s": (Path.SHARED_BLOCKED, Kernel.SHARED), "SB.l": (Path.SHARED_BLOCKED, Kernel.LOOP_FORWARD),
         "B.f": (Path.BLOCKED, Kernel.FUSED_FORWARD), "B.l": (Path.BLOCKED, Kernel.LOOP_FORWARD),
         "S": (Path.SHARED_SOFTMAX,), "B": (Path.BLOCKED,),  # these two: the cuda column names the path only
         "M": (Path.MIXTURE,)}
# "M|B.f": the mixture path where its compiled kernel is built (mixture.available()), else the one after "|"
MIXTURE_BUILT = mixture.available()
MODES = ["train", "causal", "pad", "mask4d", "float", "eval", "eval-rows", "eval-pad", "eval-grad", "dropout",
         "dropout-pad", "long", "weights", "trace", "cuda"]
# paths: L literal, S shared_softmax, SF shared_fused, SB shared_blocked, F fused, B blocked, X flex, M mixture;
# shared_softmax products: .e per_example, .f folded, .n normalised;
# kernels of blocked_attention: .s shared, .f fused_forward, .l loop_forward
ROUTES = {
    # columns: train causal pad mask4d float eval eval-rows eval-pad eval-grad dropout dropout-pad long weights
    # trace cuda (the MODES above)
    "vanilla":           "F    F    F    F    F    F    F    F    F    F    F    F    L    L    F",
    "dense":             "F    F    F    F    F    F    F    F    F    F    F    F    L    L    F",
    "random":            "SB.s SB.s S.n  B.l  SB.s S.e  S.f  S.n  SB.s S.e  S.n  SB.s L    L    S",
    "fixed_random":      "SB.s SB.s S.n  B.l  SB.s S.e  S.f  S.n  SB.s S.e  S.n  SB.s L    L    S",
    "factorized_random": "SB.l SB.l S.n  F    SB.l S.e  S.f  S.n  SB.l S.e  S.n  SF   L    L    S",
    "factorized_dense":  "B.l  B.l  B.l  B.l  B.l  B.l  B.l  B.l  B.l  L    L    B.l  L    L    L",
    "R+V":               "M|B.f M|B.f M|B.f B.f B.f F    F    F    M|B.f F    F    M|B.f L    L    L",
    "D+V":               "M|F  M|F  M|F  F    F    F    F    F    F    F    F    M|F  L    L    F",
    "R+D":               "M|B.f M|B.f M|B.f B.f B.f F    F    F    M|B.f F    F    M|B.f L    L    L",
    "FR+V":              "M|F  M|F  M|F  F    F    F    F    F    F    F    F    M|F  L    L    F",
    "FD+V":              "M|B.f M|B.f M|B.f B.f B.f F    F    F    M|B.f F    F    M|B.f L    L    L",
    "Fix+FR":            "SB.l SB.l S.n  B.l  SB.l S.e  S.f  S.n  SB.l S.e  S.n  SB.l L    L    S",
    "R+D+V":             "M|B.l M|B.l M|B.l B.l B.l F    F    F    M|B.l F    F    M|B.l L    L    L",
}


def code(c: str) -> tuple:
    """The route a table entry names ("M|B.f": mixture where its kernel is built, else B.f)."""
    first, _, other = c.partition("|")
    return CODES[first if MIXTURE_BUILT or not other else other]


def test_table_covers_the_registry():
    assert sorted(ROUTES) == sorted(ALL_SPECS)


@pytest.fixture
def spy(monkeypatch):
    """Records the paths, shared products and kernels run (through PATHS, SHARED_PRODUCTS and KERNELS, in call
    order) and the routes chosen (through choose_path)."""
    taken, routes = [], []
    for table in (paths.PATHS, paths.SHARED_PRODUCTS, blocked_mod.KERNELS):
        for name, fn in list(table.items()):
            def wrapped(*args, fn=fn, name=name):
                taken.append(name)
                return fn(*args)
            monkeypatch.setitem(table, name, wrapped)

    def choose(route):
        routes.append(route)
        return choose_path(route)
    monkeypatch.setattr(paths, "choose_path", choose)
    return taken, routes


class FirstOutput(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)[0]


def call(spec, mode, monkeypatch):
    """Run one forward of a small layer in ``mode``; returns the layer."""
    layer = SyntheticAttention(D, H, N, spec, causal=mode in ("causal", "pad"), dense_factors=(2, 4), factorized_k=3,
                               dropout=0.1 if mode.startswith("dropout") else 0.0)
    layer.train(not mode.startswith("eval"))
    if mode == "eval-rows":  # more query rows than decoding has: the shared softmax folds the batch
        monkeypatch.setattr(paths, "FEW_QUERIES", L - 1)
    x = torch.randn(B, L, D)
    kw = {}
    if mode.endswith("pad"):
        kw["key_padding_mask"] = torch.zeros(B, L, dtype=torch.bool)
        kw["key_padding_mask"][1, 4:] = True
    if mode == "mask4d":
        kw["attn_mask"] = torch.zeros(B, 1, L, L, dtype=torch.bool)
        kw["attn_mask"][1, :, :, 3] = True
    if mode == "float":
        kw["attn_mask"] = torch.randn(L, L)
    if mode == "long":
        monkeypatch.setattr(blocked_mod, "BLOCK_ELEMENTS", 7)
    if mode == "trace":
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation warnings
            torch.jit.trace(FirstOutput(layer), (x,), check_trace=False)
        return
    with torch.set_grad_enabled(mode not in ("eval", "eval-rows", "eval-pad")):
        layer(x, need_weights=mode == "weights", **kw)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_route_of_every_spec_in_every_mode(spec, spy, monkeypatch):
    taken, routes = spy
    want = dict(zip(MODES, (code(c) for c in ROUTES[spec].split())))
    got = {}
    for mode in MODES:
        taken.clear()
        routes.clear()
        if mode == "cuda":  # the same call as "train", routed as if its tensors lived on a GPU
            call(spec, "train", monkeypatch)
            got[mode] = (choose_path(dataclasses.replace(routes[0], device="cuda")),)
            continue
        call(spec, mode, monkeypatch)
        got[mode] = tuple(taken)  # the whole chain: no hidden second path (the shared softmax did not underflow)
        monkeypatch.setattr(blocked_mod, "BLOCK_ELEMENTS", BLOCK_ELEMENTS)  # undo "long" and "eval-rows"
        monkeypatch.setattr(paths, "FEW_QUERIES", FEW_QUERIES)
    assert got == want


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("device", ["cpu", "cuda", "mps", "xpu"])
def test_cuda_routes_learned_bias_to_literal_or_flex_and_shared_logits_to_one_softmax(spec, device, spy, monkeypatch):
    """On CUDA, learned full logits (FD, or beside a dot product) take the literal path while the batch's logits
    are few, else FlexAttention beside a dot product (its score_mod differentiates a captured bias; PyTorch's CPU
    kernels do not, so elsewhere they take the compiled mixture kernel on CPU where it is built, else the blocked
    kernel) and the blocked kernel for FD. Logits shared by the batch take the one shared softmax on CUDA (the
    blocked kernels' loops are launch-bound there)."""
    _, routes = spy
    call(spec, "train", monkeypatch)
    route = dataclasses.replace(routes[0], device=device)
    learned_bias = route.full_needs_grad and route.input_dependent
    path = choose_path(route)
    dot = "dot" in route.forms
    cpu_path = Path.MIXTURE if MIXTURE_BUILT and device == "cpu" and dot else Path.BLOCKED
    if learned_bias:
        assert path == (Path.LITERAL if device == "cuda" else cpu_path)  # few logits: literal beats flex and blocked
        many = dataclasses.replace(route, batch=paths.CUDA_LITERAL_ELEMENTS // route.logits_per_example + 1)
        assert choose_path(many) == (Path.FLEX if device == "cuda" and dot else cpu_path)
    elif not route.input_dependent and device == "cuda":
        assert path == Path.SHARED_SOFTMAX
    else:  # as on CPU, but the compiled mixture kernel is CPU-only (elsewhere: the fused path)
        cpu = choose_path(dataclasses.replace(route, device="cpu"))
        assert path == (Path.FUSED if cpu == Path.MIXTURE and device != "cpu" else cpu)


@pytest.mark.parametrize("spec", ["R+V", "FD+V", "factorized_dense"])
def test_cuda_literal_limit_grows_with_the_devices_memory(spec, spy, monkeypatch):
    """The literal path's limit on CUDA: B=2, H=4, L=4096 (2^27 logits) is literal on an H200 (143,771 MiB),
    past the limit on a 16 GiB device or where the memory is unknown (0), which keep CUDA_LITERAL_ELEMENTS."""
    _, routes = spy
    call(spec, "train", monkeypatch)
    big = dataclasses.replace(routes[0], device="cuda", batch=2, logits_per_example=4 * 4096 * 4096)
    past = Path.FLEX if "dot" in big.forms else Path.BLOCKED
    assert choose_path(dataclasses.replace(big, device_memory=143771 << 20)) == Path.LITERAL
    assert choose_path(dataclasses.replace(big, device_memory=16 << 30)) == past
    assert choose_path(big) == past
    assert paths.cuda_literal_elements(0) == paths.cuda_literal_elements(16 << 30) == paths.CUDA_LITERAL_ELEMENTS
    assert paths.device_memory(torch.device("cpu")) == 0


@pytest.mark.parametrize("spec,long_path", [("factorized_random", Path.SHARED_FUSED), ("random", Path.SHARED_SOFTMAX),
                                            ("Fix+FR", Path.SHARED_SOFTMAX)])
def test_cuda_shared_logits_take_the_flash_kernel_when_long(spec, long_path, spy, monkeypatch):
    """On CUDA, FR's shared logits train through one shared softmax while short and through shared_fused (O(L)
    memory) past CUDA_SHARED_FUSED_ELEMENTS logits per example; full tables (R, Fix+FR) keep the shared softmax."""
    _, routes = spy
    call(spec, "train", monkeypatch)
    route = dataclasses.replace(routes[0], device="cuda")
    assert choose_path(route) == Path.SHARED_SOFTMAX
    long = dataclasses.replace(route, logits_per_example=paths.CUDA_SHARED_FUSED_ELEMENTS + 1)
    assert choose_path(long) == long_path
    assert choose_path(dataclasses.replace(long, training=False, grad=False)) == Path.SHARED_SOFTMAX  # eval


def test_route_is_pure_and_hashable():
    route = paths.Route(forms=("full", "dot"), input_dependent=True, full_needs_grad=True, training=True, grad=True,
                        dropout=0.0, key_padding=False, attn_mask=None, masks_batch_free=True, device="cpu",
                        logits_per_example=72, exporting=False, literal=False)
    assert choose_path(route) == choose_path(route) == (Path.MIXTURE if MIXTURE_BUILT else Path.BLOCKED)
    assert choose_path(dataclasses.replace(route, dtype="float64")) == Path.BLOCKED  # the kernel computes in fp32
    assert choose_path(dataclasses.replace(route, attn_mask="bool")) == Path.BLOCKED  # a user mask: blocked
    assert {route: 1}[dataclasses.replace(route)] == 1
    assert paths.fallback_path(dataclasses.replace(route, input_dependent=False)) == choose_path(route)


def test_shared_softmax_underflow_defers_to_the_named_fallback(spy):
    """Key padding leaving a row's visible keys with (almost) no shared weight: the exact per-example path runs."""
    taken, routes = spy
    layer = SyntheticAttention(D, H, N, "R", dense_factors=(2, 4))
    with torch.no_grad():
        layer.members[0].r[:, :, :3] = 40.0  # keys 0-2 take all the weight ...
    kpm = torch.zeros(B, L, dtype=torch.bool)
    kpm[0, :3] = True  # ... and are padding for example 0
    x = torch.randn(B, L, D)
    layer.eval()
    with torch.no_grad():
        got, _ = layer(x, key_padding_mask=kpm)
        assert taken == [Path.SHARED_SOFTMAX, SharedProduct.NORMALISED, Path.BLOCKED, Kernel.LOOP_FORWARD]
        assert taken[::2] == [choose_path(routes[0]), paths.fallback_path(routes[0])]
        layer.fast = False
        want, _ = layer(x, key_padding_mask=kpm)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def fixed_mask_dropout(w, p, training=True, inplace=False):
    """Inverted dropout with one fixed mask per (H, Lq, Lk), shared by the batch: both paths drop the same weights."""
    if not training or p == 0:
        return w
    g = torch.Generator().manual_seed(5)
    keep = (torch.rand(w.shape[-3:], generator=g) >= p).to(w.dtype)
    return w * keep / (1 - p)


@pytest.mark.parametrize("spec", ["R", "Fix", "FR", "Fix+FR"])
@pytest.mark.parametrize("padding", [False, True])
def test_dropout_on_the_shared_softmax_equals_the_literal_path(spec, padding, spy, monkeypatch):
    """With the same dropout mask, the shared softmax (the batch folded, padding by a masked normaliser)
    equals the literal path: dropout after normalising over the real keys, outputs and gradients."""
    taken, _ = spy
    monkeypatch.setattr(paths.F, "dropout", fixed_mask_dropout)
    torch.manual_seed(11)
    layer = SyntheticAttention(D, H, N, spec, dropout=0.5, dense_factors=(2, 4), factorized_k=3)
    x = torch.randn(B, 4, D)
    kw = {"key_padding_mask": torch.tensor([[False, False, True, True], [False, False, False, True]])} if padding else {}
    results = []
    for fast in (True, False):
        layer.fast = fast
        layer.zero_grad()
        out, _ = layer(x, **kw)
        out.sum().backward()
        results.append([out.detach()] + [p.grad.clone() for p in layer.parameters() if p.grad is not None])
    assert taken[::2] == [Path.SHARED_SOFTMAX, Path.LITERAL]
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("spec,path", [("V", Path.FUSED), ("R+V", Path.FUSED), ("FD", Path.LITERAL)])
def test_dropout_in_training_is_unbiased_on_its_path(spec, path, spy):
    """Attention dropout in training on the per-example paths: the mean over many draws (independent masks
    per example: n copies of the batch in one call) equals the output without dropout; gradients reach
    every trainable parameter."""
    taken, _ = spy
    torch.manual_seed(11)
    layer = SyntheticAttention(D, H, N, spec, dropout=0.5, dense_factors=(2, 4), factorized_k=3)
    x = torch.randn(B, 4, D)
    kpm = torch.tensor([[False, False, True, True], [False, False, False, True]])
    n = 2000
    with torch.no_grad():
        layer.eval()
        want = layer(x, key_padding_mask=kpm)[0]
        layer.train()
        taken.clear()
        draws = layer(x.repeat(n, 1, 1), key_padding_mask=kpm.repeat(n, 1))[0].view(n, *want.shape)
    assert taken[0] == path
    assert not torch.allclose(draws[0], draws[1])  # dropout is on
    err = (draws.mean(0) - want).abs().max().item()
    assert err < 5 * draws.std(0).max().item() / n ** 0.5
    layer(x, key_padding_mask=kpm)[0].sum().backward()
    assert all(p.grad is not None for p in layer.parameters() if p.requires_grad)


# ------------------------------------------------------------ private ATen ops: version-checked, with fallbacks
def test_private_ops_are_found_on_this_torch_and_a_changed_schema_is_refused():
    """On a torch new enough, the fast kernels use the private ops (a torch that drops or re-signs one fails
    here by name, instead of running slower unnoticed); an op whose schema lacks an argument used is refused."""
    if aten.torch_version() >= aten.CPU_FLASH[2]:
        assert aten.private_op(*aten.CPU_FLASH) is not None
        assert aten.cpu_flash_available(torch.zeros(1)) and not aten.cpu_flash_available(torch.zeros(1).half())
    assert aten.private_op(*aten.SOFTMAX_OUT) is not None
    name, overload, since, _ = aten.CPU_FLASH
    assert aten.private_op(name, overload, since, ("attn_mask", "no_such_argument")) is None
    assert aten.private_op("_no_such_op", "default", (2, 0), ()) is None
    assert aten.private_op(name, overload, (99, 0), ()) is None  # the version check


def too_new(op):
    return (*op[:2], (99, 0), op[3])  # a minimum torch version no install has: the fallback runs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_softmax_into_a_strided_block_writes_each_row_in_place(dtype):
    """The causal shared kernel writes each row block's softmax into the first kend columns of its rows: a
    strided block, which aten._softmax.out fills as if it were contiguous on torch 2.13 (the tail of each
    row stays untouched and every row equals its own softmax)."""
    torch.manual_seed(0)
    s = torch.randn(5, 6, dtype=dtype)
    buf = torch.full((5, 9), 7.0, dtype=dtype)
    aten.softmax_into(s, buf[:, :6])
    torch.testing.assert_close(buf[:, :6], torch.softmax(s, dim=-1))
    assert (buf[:, 6:] == 7).all()


@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_lse_fallback_equals_the_flash_kernel(causal, monkeypatch):
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 3, 7, 4, dtype=torch.float64) for _ in range(3))
    mask = torch.randn(1, 3, 7, 7, dtype=torch.float64)
    out, lse = aten.attention_with_lse(q, k, v, mask, is_causal=causal)
    assert lse is not None and lse.shape == (2, 3, 7)
    s = q @ k.transpose(-2, -1) + mask
    if causal:
        s = s.masked_fill(torch.ones(7, 7, dtype=torch.bool).triu(1), -torch.inf)
    torch.testing.assert_close(out, torch.softmax(s, -1) @ v)
    torch.testing.assert_close(lse, s.logsumexp(-1))
    monkeypatch.setattr(aten, "CPU_FLASH", too_new(aten.CPU_FLASH))
    got, no_lse = aten.attention_with_lse(q, k, v, mask, is_causal=causal)
    assert no_lse is None
    torch.testing.assert_close(got, out)


@pytest.mark.parametrize("spec,causal,kernel", [("R+V", False, Kernel.FUSED_FORWARD), ("R", False, Kernel.SHARED),
                                                ("R+V", True, Kernel.FUSED_FORWARD), ("R", True, Kernel.SHARED)])
def test_layer_with_the_public_fallbacks_equals_the_private_ops(spec, causal, kernel, spy, monkeypatch):
    """The whole training step of the kernels that use the private ops, once with them and once with both
    forced to their public fallbacks: equal outputs and gradients. (R+V on the blocked path: as without the
    compiled mixture kernel.)"""
    taken, _ = spy
    monkeypatch.setattr(mixture, "available", lambda: False)
    torch.manual_seed(4)
    layer = SyntheticAttention(D, H, N, spec, causal=causal)
    x = torch.randn(B, L, D)
    results = []
    for fallback in (False, True):
        if fallback:
            monkeypatch.setattr(aten, "CPU_FLASH", too_new(aten.CPU_FLASH))
            monkeypatch.setattr(aten, "SOFTMAX_OUT", too_new(aten.SOFTMAX_OUT))
            assert not aten.cpu_flash_available(x) and aten.private_op(*aten.SOFTMAX_OUT) is None
        layer.zero_grad()
        taken.clear()
        out, _ = layer(x)
        out.square().sum().backward()
        assert taken[1] == kernel
        results.append([out.detach()] + [p.grad.clone() for p in layer.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_the_literal_path_returns_weights_only_when_asked(spec):
    """The literal path (fast=False here; CUDA training of learned logits beside a dot product) computes the
    weights in any case; like every other path it hands them back only for need_weights=True."""
    layer = SyntheticAttention(D, H, N, spec, fast=False).train()
    x = torch.randn(B, L, D)
    assert layer(x)[1] is None
    assert layer(x, need_weights=True, average_attn_weights=False)[1].shape == (B, H, L, L)
