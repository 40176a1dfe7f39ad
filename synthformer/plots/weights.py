"""Attention weights of a trained model: the data behind the paper's Figures 2-7 (Section 5).

Three sources, each per layer and head, none of which changes model code:

* :func:`capture` -- the weights every token mixer computes on a real input, (B, H, Lq, Lk): forward
  hooks ask each attention layer for its weights (``need_weights=True``, the layer's literal path,
  equal to its fast paths to float tolerance) during one ordinary forward pass of the model;
* :func:`learned_table` -- the input-independent weights of R, Fix and FR layers (and their mixtures)
  straight from the parameters: the softmax of the mixed logits over the first L positions,
  causal-masked for decoders;
* :func:`initial_model` -- the model as training initialised it (``torch.manual_seed(seed)`` then
  ``build_model(config)``, as ``synthformer.training.loop`` does), for the "initial" histograms of Figure 2.

A run's input is one batch of its validation data (:func:`validation_input`) or a text of the user's
(:func:`text_input`), turned into the model's arguments by the model kind (``INPUTS``).
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from ..attention import SyntheticAttention
from ..training.checkpoint import RunError
from ..errors import InputError, SynthformerError
from ..mixers import DynamicConv, LightConv
from ..training.plan import TrainedRun, open_trained

# Token mixers whose need_weights=True gives an (B, H, Lq, Lk) matrix over the keys. LightConv and
# DynamicConv give their convolution as a banded matrix; Linformer's weights cover k projected keys,
# not the tokens, so it has no such matrix (neither has any mixer not listed here).
MATRIX_MIXERS: tuple[type[nn.Module], ...] = (SyntheticAttention, LightConv, DynamicConv)
STACKS = ("encoder", "decoder")  # the attribute names of a model's Stacks


# ----------------------------------------------------------------------------- where the weights live
@dataclass(eq=False)
class Site:
    """One token-mixing slot of a model: layer ``index`` (0-based) of a stack, self- or cross-attention."""

    stack: str  # "encoder" | "decoder"
    index: int  # layer number in the stack, from 0
    part: str  # "self" | "cross"
    module: nn.Module  # the slot's token mixer
    two_stacks: bool = False  # the model has an encoder and a decoder (labels say which)

    @property
    def key(self) -> tuple[str, int, str]:
        return self.stack, self.index, self.part

    @property
    def spec(self) -> str:
        """The mixer in the paper's notation (``R+V``) or a baseline's name (``lightconv``)."""
        return getattr(self.module, "spec", None) or type(self.module).__name__.lower()

    @property
    def has_weights(self) -> bool:
        return isinstance(self.module, MATRIX_MIXERS)

    @property
    def input_dependent(self) -> bool:
        """False for R, Fix, FR and their mixtures: the same weights for every input."""
        return bool(getattr(self.module, "input_dependent", True))

    @property
    def causal(self) -> bool:
        return self.part == "self" and bool(getattr(self.module, "causal", False))

    @property
    def label(self) -> str:
        """``L1``; ``enc L1``, ``dec L1``, ``cross L1`` in an encoder-decoder (layers counted from 1)."""
        if not self.two_stacks:
            return f"L{self.index + 1}"
        return f"{'cross' if self.part == 'cross' else self.stack[:3]} L{self.index + 1}"


def sites(model: nn.Module, cross: bool = False) -> list[Site]:
    """Every token-mixing slot of ``model`` in order (encoder layers, then decoder layers); the
    encoder-decoder attention of seq2seq decoders too when ``cross``."""
    stacks = [s for s in STACKS if getattr(model, s, None) is not None]
    out = []
    for stack in stacks:
        for i, block in enumerate(getattr(model, stack).layers):
            out.append(Site(stack, i, "self", block.mixer, len(stacks) > 1))
            if cross and getattr(block, "cross", None) is not None:
                out.append(Site(stack, i, "cross", block.cross, len(stacks) > 1))
    return out


def select_layers(all_sites: list[Site], layers: str | None, default: str = "all") -> list[Site]:
    """The sites of the chosen layers of each stack. ``layers``: ``"all"``, ``"spread"`` (first,
    middle and last, as the paper's layers 1, 3, 5 of 6) or 1-based numbers ``"1,3,-1"`` (-1 = last)."""
    choice = (layers or default).strip().lower()
    out = []
    for stack in dict.fromkeys(s.stack for s in all_sites):
        mine = [s for s in all_sites if s.stack == stack]
        n = max(s.index for s in mine) + 1
        if choice == "all":
            wanted = set(range(n))
        elif choice == "spread":
            wanted = {0, (n - 1) // 2, n - 1}
        else:
            wanted = set()
            for part in choice.split(","):
                try:
                    k = int(part)
                except ValueError:
                    raise InputError(f"--layers {layers!r}: give 'all', 'spread' or layer numbers such as 1,3,-1") from None
                if not (1 <= k <= n or -n <= k <= -1):
                    raise InputError(f"--layers {layers!r}: layer {k} does not exist; the {stack} has layers 1..{n}")
                wanted.add(k - 1 if k > 0 else n + k)
        out += [s for s in mine if s.index in wanted]
    return out


# ----------------------------------------------------------------------------- a run's model and input
Run = TrainedRun  # a trained run as synthformer.training.plan.open_trained opens it (model in eval mode, tokenizer, configs)


def load_run(path: str | Path, device: str = "cpu") -> Run:
    """The run at ``path`` (a run folder, or one of its checkpoints or its ``model/``) for figures:
    :func:`synthformer.training.plan.open_trained`, its errors as one-line InputErrors naming ``--run``."""
    try:
        return open_trained(path, device=device)
    except RunError as e:
        raise InputError(f"--run {e}") from None


def initial_model(run: Run) -> nn.Module:
    """The run's model as its training started: seeded with the run's seed, built from its config
    (the same draws as ``synthformer.training.loop``), in eval mode. The global RNG is restored afterwards."""
    from ..model import build_model

    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(run.train.seed)
        model = build_model(run.model.config)
    finally:
        torch.random.set_rng_state(state)
    return model.to(next(run.model.parameters()).device).eval()


@dataclass
class ModelInput:
    """One batch as the model takes it, with the token ids and padding of each stack."""

    args: tuple  # positional arguments of model(...)
    kwargs: dict = field(default_factory=dict)
    tokens: dict[str, Tensor] = field(default_factory=dict)  # stack -> ids (B, L) that stack reads
    padding: dict[str, Tensor | None] = field(default_factory=dict)  # stack -> bool (B, L), True = padding

    def to(self, device) -> "ModelInput":
        move = lambda t: t.to(device) if isinstance(t, Tensor) else t  # noqa: E731
        return ModelInput(tuple(map(move, self.args)), {k: move(v) for k, v in self.kwargs.items()},
                          {k: move(v) for k, v in self.tokens.items()}, {k: move(v) for k, v in self.padding.items()})


def _one_stack(stack: str, ids: Tensor, padding: Tensor | None) -> ModelInput:
    kwargs = {} if padding is None else {"key_padding_mask": padding}
    return ModelInput((ids,), kwargs, {stack: ids}, {stack: padding})


def _classifier_input(batch: dict) -> ModelInput:
    return _one_stack("encoder", batch["tokens"], batch["padding_mask"])


def _seq2seq_input(batch: dict) -> ModelInput:
    src, tgt = batch["src"], batch["tgt"][:, :-1]  # the decoder reads <bos> + target[:-1]
    src_pad, tgt_pad = batch["src_padding_mask"], batch["tgt_padding_mask"][:, :-1]
    return ModelInput((src, tgt), {"src_padding_mask": src_pad, "tgt_padding_mask": tgt_pad},
                      {"encoder": src, "decoder": tgt}, {"encoder": src_pad, "decoder": tgt_pad})


# model kind -> the model's arguments from a batch of the run's task
INPUTS = {
    "lm": lambda batch: _one_stack("decoder", batch["tokens"][:, :-1], None),  # blocks (B, L+1): reads [:, :-1]
    "mlm": lambda batch: _one_stack("encoder", batch["tokens"][:, :-1], None),  # unmasked text
    "classifier": _classifier_input,
    "seq2seq": _seq2seq_input,
}


def validation_input(run: Run, examples: int = 8) -> ModelInput:
    """The first ``examples`` validation examples of the run's data (the first blocks for LM / MLM),
    as its task encodes and batches them for evaluation."""
    from ..data import load_source
    from ..tasks import build_task

    train = run.train
    options = {"pooling": run.model.config.pooling} if train.task == "classify" else {}
    task = build_task(train.task, **options)
    try:
        splits = load_source(train.data, task.data_task, max_examples=train.max_examples, seed=train.seed)
    except SynthformerError as e:
        raise InputError(f"the run's data is not available ({e}); give --text to use your own input") from None
    split = "valid" if splits.valid else "test"
    if not getattr(splits, split):
        raise InputError(f"the run's data {train.data!r} has no validation examples; give --text")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # truncation to the trained length is expected here
        encoded = task.encode(getattr(splits, split), run.tokenizer, run.seq_len)
    batches = task.batches(encoded, run.tokenizer, run.seq_len, examples, shuffle=False)
    batch = next(iter(batches), None)
    if batch is None:
        raise InputError(f"the run's {split} split is shorter than one sequence of {run.seq_len} tokens; give --text")
    return INPUTS[run.model.config.kind](batch).to(next(run.model.parameters()).device)


def text_input(run: Run, text: str) -> ModelInput:
    """``text`` as the run's model reads it (encoded as its task encodes; a seq2seq model reads the
    text as source and its own greedy output as target)."""
    tok, cfg = run.tokenizer, run.model.config
    device = next(run.model.parameters()).device
    ids = tok.encode(text)
    if not ids:
        raise InputError(f"--text {text!r} encodes to no tokens")
    as_tensor = lambda x: torch.tensor([x], dtype=torch.long, device=device)  # noqa: E731
    if cfg.kind == "lm":  # documents follow an <eos> in training
        return _one_stack("decoder", as_tensor(([tok.eos_id] + ids)[:cfg.max_seq_len]), None)
    if cfg.kind == "mlm":
        return _one_stack("encoder", as_tensor(ids[:cfg.max_seq_len]), None)
    if cfg.kind == "classifier":
        from ..tasks import classifier_input

        return _one_stack("encoder", as_tensor(classifier_input(text, tok, cfg.max_seq_len, cfg.pooling)), None)
    src = as_tensor((ids + [tok.eos_id])[-cfg.max_seq_len:])
    out = run.model.generate(src, max_new_tokens=cfg.max_seq_len - 1)[0].tolist()
    out = out[:out.index(tok.eos_id)] if tok.eos_id in out else out
    tgt = as_tensor(([tok.bos_id] + out)[:cfg.max_seq_len])
    return ModelInput((src, tgt), {}, {"encoder": src, "decoder": tgt}, {"encoder": None, "decoder": None})


# ----------------------------------------------------------------------------- the weights
@torch.no_grad()
def capture(model: nn.Module, inp: ModelInput, wanted: list[Site]) -> dict[tuple, Tensor]:
    """Run ``model`` on ``inp`` once; returns {site.key: weights (B, H, Lq, Lk), float32} for every
    wanted site that has an attention matrix (see MATRIX_MIXERS), on the CPU. The model is left as it was."""
    found: dict[tuple, Tensor] = {}
    handles = []
    try:
        for s in wanted:
            if s.has_weights:
                handles.append(s.module.register_forward_pre_hook(_ask_for_weights, with_kwargs=True))
                handles.append(s.module.register_forward_hook(functools.partial(_keep, found, s.key),
                                                              with_kwargs=True))
        model(*inp.args, **inp.kwargs)
    finally:
        for h in handles:
            h.remove()
    return found


def _ask_for_weights(module, args, kwargs):
    return args, {**kwargs, "need_weights": True}


def _keep(found: dict, key: tuple, module, args, kwargs, output) -> None:
    found[key] = output[1].detach().float().cpu()


def allowed(site: Site, inp: ModelInput, shape: torch.Size) -> Tensor:
    """bool (B, 1, Lq, Lk): the weights a query may have -- real query and key tokens, and for causal
    self-attention the keys up to the query (masked entries are 0 by construction, not data)."""
    b, _, lq, lk = shape
    keep = torch.ones(b, 1, lq, lk, dtype=torch.bool)
    q_pad = inp.padding.get(site.stack)
    k_pad = q_pad if site.part == "self" else inp.padding.get("encoder")
    if q_pad is not None:
        keep &= ~q_pad.cpu()[:, None, :, None]
    if k_pad is not None:
        keep &= ~k_pad.cpu()[:, None, None, :]
    if site.causal:
        keep &= torch.ones(lq, lk, dtype=torch.bool).tril()
    return keep


def weight_values(site: Site, inp: ModelInput, weights: Tensor) -> Tensor:
    """The weights of one site as a flat tensor: every head, query and key that may attend (`allowed`)."""
    w = weights.cpu()
    return w.masked_select(allowed(site, inp, w.shape).expand_as(w))


def histogram(values: Tensor, bins: int = 50, log: bool = False) -> tuple[Tensor, Tensor]:
    """(counts (bins,), edges (bins + 1,)) of weights over [0, their max] (``log``: logarithmic bins
    from the smallest positive weight, at least 1e-8, the weights below it in the first bin). Every
    value is counted, the max in the last bin: counts sum to ``values.numel()``."""
    v = values.double().flatten()
    hi = float(v.max()) if v.numel() else 1.0
    if hi <= 0:
        hi = 1.0
    if log:
        positive = v[v > 0]
        lo = max(float(positive.min()) if positive.numel() else hi, 1e-8)
        lo = min(lo, hi / 10)  # at least a decade, so one weight value still gives a bin to draw
        edges = torch.logspace(torch.log10(torch.tensor(lo)), torch.log10(torch.tensor(hi)), bins + 1,
                               dtype=torch.float64)
    else:
        edges = torch.linspace(0.0, hi, bins + 1, dtype=torch.float64)
    idx = (torch.bucketize(v, edges, right=True) - 1).clamp(0, bins - 1)  # [e_i, e_i+1); the max in the last bin
    return torch.bincount(idx, minlength=bins), edges


@torch.no_grad()
def learned_table(attn: SyntheticAttention, length: int) -> Tensor:
    """(H, L, L) weights of an input-independent layer (R, Fix, FR and mixtures of them) from its
    parameters alone: softmax over keys of ``sum_m alpha_m S_m`` for the first ``length`` positions,
    rows = queries; for a causal layer the future is masked before the softmax (and 0 after it)."""
    if not isinstance(attn, SyntheticAttention) or attn.input_dependent:
        raise InputError(f"learned_table needs a layer whose weights do not depend on the input (R, Fix, FR); "
                         f"got {getattr(attn, 'spec', type(attn).__name__)}")
    if not 1 <= length <= attn.max_seq_len:
        raise InputError(f"length {length} must be between 1 and the layer's max_seq_len={attn.max_seq_len}")
    dummy = attn.v_proj.weight.new_zeros(1, length, attn.embed_dim)  # never read: the logits ignore X
    alpha = attn.mixture_weights()  # (H, M)
    s = sum(m.logits(dummy, None, 0, length).materialize()[0] * alpha[:, i, None, None]
            for i, m in enumerate(attn.members)).float()  # (H, L, L)
    if attn.causal:
        future = ~torch.ones(length, length, dtype=torch.bool, device=s.device).tril()
        return torch.softmax(s.masked_fill(future, float("-inf")), dim=-1)  # exp(-inf) = 0: masked entries 0
    return torch.softmax(s, dim=-1)


def token_labels(run: Run, ids: Tensor) -> list[str]:
    """One short, printable string per token id (for heatmap ticks)."""
    out = []
    for i in ids.tolist():
        special = run.tokenizer.specials[i] if i < len(run.tokenizer.specials) else None
        text = special or run.tokenizer.decode([i], skip_special=False)
        text = text.replace("\n", "\\n").replace("\t", "\\t").strip() or "␣"
        out.append(text if len(text) <= 10 else text[:9] + "…")
    return out
