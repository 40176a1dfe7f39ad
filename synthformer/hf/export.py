"""Export a synthformer run (or checkpoint folder) as a Hugging Face model folder.

The folder holds ``config.json`` (``model_type: "synthformer"``, ``auto_map``, ``id2label`` from the
class names), ``model.safetensors``, ``generation_config.json`` (generative kinds), the tokenizer files
(adding the special tokens the model's inputs had in training, see ``synthformer.hf.tokenization``)
and the modeling code (``synthformer.hf.remote``). It loads with the Auto class of the run's task (or
``AutoModel``, the hidden states) and ``AutoTokenizer``: in any process with
``trust_remote_code=True`` (synthformer need not be installed), or after ``import synthformer.hf``
without it.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

from ..errors import SynthformerError
from ..model import load
from .modeling import to_hf
from .remote import remote_files, write_remote_code
from .tokenization import to_hf_tokenizer

AUTO_CLASSES = {"lm": "AutoModelForCausalLM", "classifier": "AutoModelForSequenceClassification",
                "mlm": "AutoModelForMaskedLM", "seq2seq": "AutoModelForSeq2SeqLM"}
WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.json"


class ExportError(SynthformerError):
    """The run folder has no model to export, or the output folder is not usable."""


def _is_model_folder(path: Path) -> bool:
    return (path / WEIGHTS).is_file() and (path / CONFIG).is_file()


def find_model_folder(run_dir) -> Path:
    """The weights folder of a run: ``RUN/model`` (final weights), else the latest checkpoint; or
    ``run_dir`` itself when it is a model or checkpoint folder."""
    run = Path(run_dir)
    if not run.is_dir():
        raise ExportError(f"{run}: no such run folder")
    if _is_model_folder(run / "model"):
        return run / "model"
    if _is_model_folder(run):
        return run
    pointer = run / "checkpoints" / "latest.json"
    if pointer.is_file():
        try:
            folder = pointer.parent / json.loads(pointer.read_text())["path"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ExportError(f"{pointer}: unreadable checkpoint pointer ({e})") from None
        if _is_model_folder(folder):
            return folder
    raise ExportError(f"{run}: no model to export (looked for model/{WEIGHTS}, {WEIGHTS} and the checkpoint "
                      "named by checkpoints/latest.json); train first, e.g. synthformer train --out RUN")


def find_tokenizer_file(run_dir, model_folder: Path) -> Path | None:
    """``tokenizer.json`` of the run: beside the weights, in the run folder, or two levels up
    (``RUN/checkpoints/step-N``)."""
    for folder in (model_folder, Path(run_dir), model_folder.parent, model_folder.parent.parent):
        if (folder / TOKENIZER).is_file():
            return folder / TOKENIZER
    return None


def export_hf(run_dir, out_dir, *, tokenizer: bool = True) -> Path:
    """Write the Hugging Face folder of the run (or model / checkpoint folder) ``run_dir`` to ``out_dir``.

    ``tokenizer=False`` skips the tokenizer; a run without ``tokenizer.json`` is exported without one
    (with a warning). Returns ``out_dir`` as a Path.
    """
    from ..data.tokenizer import load_tokenizer

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: exists and is not a folder")
    if (out / CONFIG).is_file():  # never overwrite someone else's model folder
        try:
            prior = json.loads((out / CONFIG).read_text()).get("model_type")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            prior = None
        if prior != "synthformer":
            raise ExportError(f"{out}: holds a {CONFIG} that is not a synthformer export; choose another --out")
    folder = find_model_folder(run_dir)
    model = load(folder).eval()
    hf = to_hf(model)
    out.mkdir(parents=True, exist_ok=True)
    for stale in remote_files(out):  # an earlier export's code
        stale.unlink()
    hf.config.auto_map = write_remote_code(out, {AUTO_CLASSES[model.config.kind]: type(hf).__name__,
                                                 "AutoModel": "SynthformerBaseModel"})
    hf.save_pretrained(out)
    if tokenizer:
        file = find_tokenizer_file(run_dir, folder)
        if file is None:
            warnings.warn(f"{run_dir}: no {TOKENIZER} found; exported the model without a tokenizer", stacklevel=2)
        else:
            to_hf_tokenizer(load_tokenizer(file), cfg=model.config).save_pretrained(out)
    return out
