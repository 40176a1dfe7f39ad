"""Optimizer parameter groups: weight matrices, no-decay parameters, and position-indexed tables.

Why a group of its own for the tables: a synthesizer's position tables (Random's R, Factorized
Random's R1/R2, Dense's F2 rows, Factorized Dense's factor tables) and the absolute position
embedding are indexed by position, not by token. Every row sees the gradient of one position only,
and R starts near zero (Xavier-uniform, logits of +-0.15 at N=128), so at the learning rate that
suits the weight matrices R barely leaves its initialisation in a few hundred steps and Random ends
where Fixed Random does. Weight decay on them pulls the logits back toward uniform attention.
The group gets its own learning-rate multiplier and, by default, no weight decay
(measurements: docs/recipe.md).

    groups = param_groups(model, weight_decay=0.01, table_lr_mult=10.0)
    opt = build_optimizer(model, lr=2e-3, weight_decay=0.01, table_lr_mult=10.0)
    for g in opt.param_groups:               # each step, with lr from the schedule
        g["lr"] = lr * g.get("lr_mult", 1.0)
"""
from __future__ import annotations

import torch
from torch import nn

from ..attention.synthesizers.base import Synthesizer
from ..errors import ConfigError

# Parameters of any shape that must never decay: the mixture weights theta (alpha = softmax(theta)).
NO_DECAY_NAMES = ("mix_logits",)


def position_tables(model: nn.Module, embeddings: bool = True) -> list[tuple[str, nn.Parameter]]:
    """(qualified name, parameter) of every trainable position-indexed table in `model`.

    A module declares its tables in a ``position_tables`` class attribute of attribute names: every
    :class:`~synthformer.attention.synthesizers.base.Synthesizer` (Random ``("r",)``, Factorized Random ``("r1", "r2")``,
    ...) and the model's ``Embedding`` (``("pos.weight",)``, included with `embeddings`). A declared name
    that is a buffer (Fixed Random's R) has nothing to train and is skipped; one that names nothing raises.
    """
    found, seen = [], set()
    for prefix, module in model.named_modules():
        if not (embeddings or isinstance(module, Synthesizer)):
            continue
        for attr in getattr(type(module), "position_tables", ()):
            p = _declared_parameter(module, attr)
            if p is not None and p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                found.append((f"{prefix}.{attr}" if prefix else attr, p))
    return found


def _declared_parameter(module: nn.Module, attr: str) -> nn.Parameter | None:
    """The parameter ``attr`` of `module`; None when it is a buffer."""
    try:
        return module.get_parameter(attr)
    except AttributeError:
        pass
    try:
        module.get_buffer(attr)
        return None
    except AttributeError:
        raise ConfigError(f"{type(module).__name__}.position_tables names {attr!r}, which is neither a parameter "
                          f"nor a buffer of it; list the attribute names of its position-indexed tables") from None


def param_groups(model: nn.Module, weight_decay: float, table_lr_mult: float = 1.0,
                 table_weight_decay: float = 0.0, position_lr_mult: float = 1.0) -> list[dict]:
    """AdamW parameter groups of `model`.

    * ``decay``: weight matrices (2-D and up) with `weight_decay`;
    * ``no_decay``: biases, norms (1-D) and the mixture weights, no decay;
    * ``tables``: the synthesizers' position-indexed tables, as each class declares them in
      ``position_tables`` (R, R1/R2, Dense's F2, Factorized Dense's factors), with `table_weight_decay`
      and ``lr_mult = table_lr_mult``;
    * ``positions``: the absolute position embedding, `table_weight_decay`, ``lr_mult = position_lr_mult``
      (its own multiplier: measured, the tables' multiplier hurts it; docs/recipe.md).

    The training loop multiplies each group's ``lr_mult`` into the scheduled lr. Every group
    carries ``name`` and ``lr_mult``; empty groups are left out. Each trainable parameter is in
    exactly one group (tied weights once).
    """
    for name, mult in (("table_lr_mult", table_lr_mult), ("position_lr_mult", position_lr_mult)):
        if not mult > 0:
            raise ValueError(f"{name}={mult} must be > 0")
    if weight_decay < 0 or table_weight_decay < 0:
        raise ValueError(f"weight decay must be >= 0, got weight_decay={weight_decay}, "
                         f"table_weight_decay={table_weight_decay}")
    synth = {id(p) for _, p in position_tables(model, embeddings=False)}
    positions = {id(p) for _, p in position_tables(model)} - synth
    groups = {"decay": [], "no_decay": [], "tables": [], "positions": []}
    for name, p in model.named_parameters():  # named_parameters() yields a tied weight once
        if not p.requires_grad:
            continue
        if id(p) in synth:
            groups["tables"].append(p)
        elif id(p) in positions:
            groups["positions"].append(p)
        elif p.dim() < 2 or name.rsplit(".", 1)[-1] in NO_DECAY_NAMES:
            groups["no_decay"].append(p)
        else:
            groups["decay"].append(p)
    settings = {"decay": (weight_decay, 1.0), "no_decay": (0.0, 1.0), "tables": (table_weight_decay, table_lr_mult),
                "positions": (table_weight_decay, position_lr_mult)}
    return [{"params": ps, "weight_decay": settings[k][0], "lr_mult": settings[k][1], "name": k}
            for k, ps in groups.items() if ps]


def build_optimizer(model: nn.Module, lr: float, weight_decay: float, table_lr_mult: float = 1.0,
                    table_weight_decay: float = 0.0, position_lr_mult: float = 1.0,
                    betas: tuple[float, float] = (0.9, 0.98)) -> torch.optim.AdamW:
    """AdamW over :func:`param_groups`; each group's lr starts at ``lr * lr_mult``."""
    groups = param_groups(model, weight_decay, table_lr_mult, table_weight_decay, position_lr_mult)
    for g in groups:
        g["lr"] = lr * g["lr_mult"]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, **adamw_speed_options(model.parameters()))


def adamw_speed_options(params) -> dict:
    """Keyword options for the fastest exact AdamW over `params`: ``fused=True`` (one kernel over all
    tensors, no per-parameter Python loop) when every parameter is a floating tensor on CPU or CUDA,
    else ``foreach=True``. PyTorch's default on CPU is the per-tensor loop, which costs R's H*N^2 tables
    several memory passes each step."""
    params = list(params)
    fused = all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return {"fused": True} if fused and params else {"foreach": True}


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set every group's lr to the scheduled `lr` times the group's ``lr_mult`` (1 when absent)."""
    for g in optimizer.param_groups:
        g["lr"] = lr * g.get("lr_mult", 1.0)
