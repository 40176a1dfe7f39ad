"""Will training fit in memory? An estimate made before anything is built or written.

Training holds, beside the float32 weights, their gradients and AdamW's two moments (4x the
parameter bytes in all), and the activations the backward pass keeps, which grow with the batch
and, for the attention-like mixers, with the square of the length. `check_training_memory` compares
that estimate with the memory this process may really use: the smallest of the machine's RAM, the
container's limit (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``) and the process's
address-space limit (``ulimit -v``, less what the process already maps), so a model that cannot
train fails with one line instead of an allocator error at step 1 with files left behind.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError
from ..model.config import BYTES_PER_VALUE, estimate_parameter_bytes

CGROUP_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
TRAINING_COPIES = 4  # weights, gradients, AdamW exp_avg and exp_avg_sq


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _mapped_bytes() -> int:
    """The virtual size of this process (what already counts against ``ulimit -v``); 0 where unknown."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def memory_limits() -> dict[str, int]:
    """The limits that apply to this process, in bytes: {"physical memory": .., "the container's
    limit": .., "the process's address-space limit (ulimit -v), less what is mapped": ..}; the ones
    the OS does not report (or that are unlimited) are left out."""
    limits = {}
    try:
        limits["physical memory"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    cgroup = [v for v in map(_read_int, CGROUP_FILES) if v is not None and v < 1 << 60]
    if cgroup:
        limits["the container's memory limit (cgroup)"] = min(cgroup)
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits["the address-space limit (ulimit -v) less what this process maps"] = max(0, soft - _mapped_bytes())
    except (ImportError, ValueError, OSError):
        pass
    return limits


def activation_bytes(cfg, batch_size: int, seq_len: int) -> int:
    """Float32 bytes of the activations a training step keeps for the backward pass (an estimate:
    per layer and token ~16 d + 2 ffn values, per head and query a row of scores, probabilities and
    dropout mask over the keys, and the logits with their softmax and gradient)."""
    d, f, h = cfg.embed_dim, cfg.ffn_dim, cfg.num_heads
    tokens = batch_size * seq_len
    per_layer = tokens * (16 * d + 2 * f) + 3 * batch_size * h * seq_len * seq_len
    layers = cfg.num_layers * (3 if cfg.kind == "seq2seq" else 1)  # encoder + decoder self and cross
    outputs = batch_size * cfg.num_classes if cfg.kind == "classifier" else tokens * cfg.vocab_size
    return (layers * per_layer + 3 * outputs) * BYTES_PER_VALUE


def training_bytes(cfg, batch_size: int, seq_len: int) -> int:
    """Estimated bytes to train the model of ModelConfig ``cfg`` with AdamW at this batch and length."""
    return TRAINING_COPIES * estimate_parameter_bytes(cfg) + activation_bytes(cfg, batch_size, seq_len)


def check_training_memory(cfg, batch_size: int, seq_len: int) -> None:
    """One ConfigError when `training_bytes` exceeds the smallest of `memory_limits`."""
    limits = memory_limits()
    if not limits:
        return
    what, have = min(limits.items(), key=lambda kv: kv[1])
    need = training_bytes(cfg, batch_size, seq_len)
    if need > have:
        params = estimate_parameter_bytes(cfg)
        raise ConfigError(f"training this model needs about {need / 2**30:,.2f} GiB (parameters {params / 2**30:,.2f} "
                          f"GiB x{TRAINING_COPIES} with gradients and AdamW state, plus activations at batch_size="
                          f"{batch_size}, seq_len={seq_len}), more than the {have / 2**30:,.2f} GiB of {what}; "
                          "lower batch_size, seq_len, embed_dim or num_layers")
