"""A model as one ONNX file (`synthformer export onnx`): `torch.onnx.export(..., dynamo=True)` with a dynamic
batch and length, so one file serves every length up to ``max_seq_len`` (the position tables stop there).

Needs ``onnxscript`` (torch's ONNX exporter uses it; not an extra of synthformer): ``pip install onnxscript``,
and ``onnxruntime`` to run the file. The kinds with one input (lm, classifier, mlm) export ``ids -> logits``;
seq2seq takes two (source, target) and exports ``(src, tgt) -> logits``. docs/export.md has the
onnxruntime check.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import SynthformerError

MAX_BATCH = 64  # the dynamic batch dimension's upper bound in the exported file
SPECIAL_IDS = range(6)  # <pad> <bos> <eos> <unk> <mask> <sep>: the example input avoids them


class OnnxExportError(SynthformerError):
    """An ONNX export that cannot be made (the exporter's package missing, or the exporter failing)."""


def export_onnx(model, path: str | Path, max_batch: int = MAX_BATCH) -> Path:
    """Write `model` (a SynthformerModel, put in eval mode) to `path` as ONNX; returns the path. Inputs
    ``ids`` (B, L) int64 (seq2seq: ``src`` (B, Ls), ``tgt`` (B, Lt)), dynamic B <= max_batch and L <= max_seq_len;
    output the logits."""
    from torch.export import Dim

    try:
        import onnxscript  # noqa: F401 - torch.onnx.export(dynamo=True) needs it
    except ImportError:
        raise OnnxExportError("export onnx needs the 'onnxscript' package (torch's ONNX exporter): pip install "
                              "onnxscript (and onnxruntime to run the file)") from None
    model = model.eval()
    cfg = model.config
    n, batch = cfg.max_seq_len, Dim("B", max=max_batch)
    example = torch.randint(len(SPECIAL_IDS), cfg.vocab_size, (2, min(8, n)))  # (B, L)
    if cfg.kind == "seq2seq":
        args = (example, example)
        shapes = ({0: batch, 1: Dim("Ls", max=n)}, {0: batch, 1: Dim("Lt", max=n)})
    else:
        args, shapes = (example,), ({0: batch, 1: Dim("L", max=n)},)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        program = torch.onnx.export(model, args, dynamo=True, verbose=False, dynamic_shapes=shapes)
    if program is None:
        raise OnnxExportError(f"torch.onnx.export returned nothing for the {cfg.kind} model")
    program.save(str(path))
    return path

