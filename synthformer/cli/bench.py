"""`synthformer bench`: speed and memory benchmarks (the options here; the run: synthformer.bench.runner)."""
from __future__ import annotations

import argparse

from ..errors import SynthformerError
from ..training.overrides import UsageError

NAME = "bench"
HELP = "speed and memory benchmarks"
DESCRIPTION = ("``synthformer bench``: time synthetic attention against vanilla and the baselines; "
               "write JSONL rows.")


def add_parser(sub) -> argparse.ArgumentParser:
    """The options (defaults that live in synthformer.bench are filled in by :func:`run`, so building the
    parser imports nothing of the benchmarks: `synthformer --help` needs torch alone)."""
    p = sub.add_parser(NAME, help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scope", default="layer,model", help="layer, model or both (comma-separated)")
    p.add_argument("--modes", default="train,infer,decode", help="train, infer, decode (decode: model scope only)")
    p.add_argument("--lengths", default="256,1024,4096", help="layer sequence lengths")
    p.add_argument("--model-lengths", default="256", help="model sequence lengths (tiny preset, max_seq_len = L)")
    p.add_argument("--tokens", type=int, default=8192, help="tokens per batch (batch = tokens // length)")
    p.add_argument("--model-tokens", type=int, default=4096, help="tokens per batch of the model scope")
    p.add_argument("--variants", default=None,
                   help="layer variants: specs or baseline names (default: bench.cases.DEFAULT_VARIANTS, "
                        "the paper's synthesizers, R+V, D+V and the convolutions)")
    p.add_argument("--model-variants", default=None, help="model variants (default: bench.cases.DEFAULT_MODEL_VARIANTS)")
    p.add_argument("--embed-dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--causal", action="store_true", help="causal layer (the model scope is always a causal LM)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                   help="dtype of weights and inputs (pure low precision; see --precision for autocast)")
    p.add_argument("--precision", default="fp32",
                   help="fp32, bf16 or fp32,bf16: bf16 = autocast to bfloat16 over fp32 weights, as "
                        "train --precision bf16; both are interleaved per group and compared")
    p.add_argument("--bf16-lengths", default=None, help="layer lengths of the bf16 cases (default: --lengths)")
    p.add_argument("--bf16-model-lengths", default=None,
                   help="model lengths of the bf16 cases (default: --model-lengths; decode runs in fp32 only)")
    p.add_argument("--bf16-variants", default=None, help="layer and model variants of the bf16 cases (default: all)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--repeats", type=int, default=3, help="timed steps per case (median reported)")
    p.add_argument("--decode-repeats", type=int, default=None, help="timed steps of decode cases (default: --repeats)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--preset", default="tiny", help="model preset for the model scope")
    p.add_argument("--decode-batch", type=int, default=8)
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory step")
    p.add_argument("--out", default=None, help="append JSONL rows to this file")
    p.add_argument("--report", default=None, metavar="JSONL",
                   help="run nothing: print the targets table (markdown) from an earlier --out file")
    p.add_argument("--targets", default=None, metavar="YAML",
                   help="targets file of --report (default: the targets.yaml shipped with synthformer.bench)")
    return p


def run(args, rest: list[str]) -> int:
    """Error policy: bad options and files are SynthformerErrors (one line, exit 2); a plain ValueError
    from parsing a value list (e.g. --lengths 1,x) is one too."""
    from ..bench.cases import DEFAULT_MODEL_VARIANTS, DEFAULT_VARIANTS
    from ..bench.report import DEFAULT_TARGETS
    from ..bench.runner import run_benchmarks

    if rest:
        raise UsageError(f"unexpected arguments {rest}; see `synthformer bench --help`")
    defaults = {"variants": DEFAULT_VARIANTS, "model_variants": DEFAULT_MODEL_VARIANTS, "targets": str(DEFAULT_TARGETS)}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    try:
        return run_benchmarks(args)
    except SynthformerError:
        raise
    except ValueError as e:
        raise UsageError(str(e)) from None
