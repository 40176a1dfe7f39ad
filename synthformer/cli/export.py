"""`synthformer export hf --run RUN --out DIR` / `export onnx --run RUN --out FILE.onnx`: a run's model in
another library's format.

The formats' parsers come from their packages (``synthformer.hf.cli``), imported only when `export`
runs, so other commands never load ``transformers``.
"""
from __future__ import annotations

import argparse

from ..utils.integrity import trust_unverified
from ..training.runs import check_out
from ._runs import add_passthrough_parser, add_trust_option

NAME = "export"
HELP = ("write a run's model in another format (hf: a Hugging Face folder for the Auto classes; onnx: one ONNX "
        "file, any batch and length up to max_seq_len)")
PASSTHROUGH = True  # parsed here, on use: the format parsers import their packages


def add_parser(sub):
    return add_passthrough_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    from ..hf.cli import add_parser as add_hf

    parser = argparse.ArgumentParser(prog="synthformer export", description=HELP + ".")
    formats = parser.add_subparsers(dest="format", required=True, metavar="FORMAT")
    add_trust_option(add_hf(formats))
    add_trust_option(_add_onnx(formats))
    ns = parser.parse_args(rest)
    check_out(ns.out)  # a parent that is a file, or an unwritable place: one line before any work
    with trust_unverified(ns.trust_unverified):
        return int(ns.func(ns) or 0)


def _add_onnx(formats) -> argparse.ArgumentParser:
    p = formats.add_parser("onnx", help="write one ONNX file of the run's model (needs onnxscript)",
                           description="Export a run's final model (or its latest checkpoint) as one ONNX file with a "
                                       "dynamic batch (up to 64) and length (up to max_seq_len): ids -> logits "
                                       "(seq2seq: src, tgt -> logits). Needs `pip install onnxscript`; run the file "
                                       "with onnxruntime (docs/export.md).")
    p.add_argument("--run", required=True, help="run folder (from synthformer train) or a model/checkpoint folder")
    p.add_argument("--out", required=True, help="the .onnx file to write")
    p.set_defaults(func=_onnx)
    return p


def _onnx(ns) -> int:
    from ..model.onnx import export_onnx
    from ..training.plan import open_trained

    run = open_trained(ns.run)
    out = export_onnx(run.model, ns.out)
    print(f"exported {ns.run} -> {out} ({run.model_config.kind}; batch up to 64, length up to "
          f"{run.model_config.max_seq_len})\nrun with: onnxruntime.InferenceSession({str(out)!r})")
    return 0
