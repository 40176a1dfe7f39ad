"""``synthformer bench``: time synthetic attention against vanilla and the baselines; write JSONL rows.

Two scopes, each over sequence lengths at a fixed number of tokens per batch (batch = tokens // length):

* ``layer``: one token-mixing layer (d=256, H=4 by default). ``train`` = forward + backward (gradients
  reset to None each step, as ``optimizer.zero_grad()``); ``infer`` = forward under ``no_grad`` in eval.
* ``model``: a whole decoder LM of the ``tiny`` preset. ``train`` = forward + cross-entropy + backward
  + AdamW step; ``infer`` = forward; ``decode`` = greedy incremental decoding with the KV cache, one
  token per step, reported as generated tokens/s with the cache size.

Timing: warm-up steps, then ``--repeats`` timed steps; variants are interleaved round by round so load
from other processes hits all of them alike, and the median is reported. Ratios are against vanilla
measured in the same run. Peak memory (``peak_bytes``): on CUDA ``torch.cuda.max_memory_allocated``
minus the memory in use before the step; on CPU the growth of the process's peak resident set during
one extra step (Linux ``/proc/self/clear_refs`` + ``VmHWM``), measured after all timings with glibc's
mmap threshold lowered to 64 KiB so that every tensor above it maps fresh pages and freed ones leave
the resident set (``peak_method`` names what was used; ``null`` where unavailable).
Precision: ``--precision fp32,bf16`` runs each case also under bf16 autocast over fp32 weights (rows carry
``precision``); the header prints the CPU model, its bf16 units and the measured fp32 / bf16 matmul GFLOP/s
(also in every row's ``matmul_gflops``), and the run ends with the targets table of ``--targets``.
FLOPs (``gflops_per_s``): analytic multiply-adds x 2 of the forward pass (full L x L even when causal),
x 3 for a training step; the count is in ``flop``. Mixer options are ModelConfig's defaults.

The package, one job per module:

* ``cases``: what is timed (a `Case` per variant, scope, mode and length) and its analytic FLOPs;
* ``measure``: round-robin timing and peak memory;
* ``report``: the JSONL `Row`, the ratio table, and the targets table (targets are data:
  ``synthformer/bench/targets.yaml``, shipped with the package);
* ``runner``: the run of the parsed options (the options themselves: synthformer/cli/bench.py).
"""
from __future__ import annotations

from ..training.distributed import device_name
from .cases import (DEFAULT_MODEL_VARIANTS, DEFAULT_VARIANTS, Case, canonical_variant, layer_case, layer_flops,
                    model_case, model_flops)
from .runner import BenchError, run_benchmarks
from .measure import PeakMeter, run_cases
from .report import Row, load_targets, ratio_table, targets_table, to_row

__all__ = ["BenchError", "Case", "DEFAULT_MODEL_VARIANTS", "DEFAULT_VARIANTS", "PeakMeter", "Row",
           "canonical_variant", "device_name", "layer_case", "layer_flops", "load_targets", "model_case",
           "model_flops", "ratio_table", "run_benchmarks", "run_cases", "targets_table", "to_row"]
