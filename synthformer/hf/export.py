"""Export a synthformer run (or checkpoint folder) as a Hugging Face model folder.

The folder holds ``config.json`` (``model_type: "synthformer"``, ``auto_map``, ``id2label`` from the
class names), ``model.safetensors``, ``generation_config.json`` (generative kinds), the tokenizer files
(adding the special tokens the model's inputs had in training, see ``synthformer.hf.tokenization``)
and the modeling code (``synthformer.hf.remote``). It loads with the Auto class of the run's task (or
``AutoModel``, the hidden states) and ``AutoTokenizer``: in any process with
``trust_remote_code=True`` (synthformer need not be installed), or after ``import synthformer.hf``
without it.

The source is opened as eval and generate open a run (``synthformer.training.runs``): the run folder is checked
against its manifest (``trust_unverified()``, the CLI's ``--trust-unverified``, for a folder without
one), the model is ``model/`` or the checkpoint ``checkpoints/latest.json`` names inside the run, and
loading verifies that folder's own manifest. A model or checkpoint folder given directly is verified
the same way, with the run around it (``RUN/model``, ``RUN/checkpoints/step-N``) whose tokenizer it
uses. Everything is read and converted before anything is written; the export is written to a
temporary sibling of the output folder and renamed into place once complete, so a failed export
leaves no folder (or the earlier export unchanged); an export killed meanwhile leaves only a hidden
``.OUT.tmp-PID-*`` folder beside ``OUT``.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..training.checkpoint import CKPT_DIR
from ..errors import SynthformerError
from ..utils.integrity import MANIFEST, fsync_dir, fsync_file
from ..training.runs import RUN_CONFIG, check_out, load_model, remove_created
from .modeling import HF_CLASSES, to_hf
from .remote import write_remote_code
from .tokenization import to_hf_tokenizer

AUTO_CLASSES = {kind: cls.auto_class for kind, cls in HF_CLASSES.items()}  # kind -> the Auto class that loads it
WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.json"
CARD = "README.md"  # the model card: what the model is, how it was trained, its results, how to load it


class ExportError(SynthformerError):
    """The run folder has no model to export, or the output folder is not usable."""


@dataclass(frozen=True)
class Source:
    """What an export reads: the model folder, and the (verified) run folder it belongs to."""

    folder: Path      # model.safetensors + config.json + manifest.json
    run: Path | None  # the run folder (its tokenizer is the model's); None for a model folder on its own
    unfinished: bool  # a run folder without model/: the folder is its latest checkpoint

    @property
    def root(self) -> Path:
        """The folder an export must stay out of (and not hold)."""
        return self.run or self.folder


def _run_around(folder: Path) -> Path | None:
    """The run folder holding the model folder ``folder``: ``RUN/model`` or ``RUN/checkpoints/step-N``."""
    for run, layout in ((folder.parent, folder.name == "model"),
                        (folder.parent.parent, folder.parent.name == CKPT_DIR)):
        if layout and (run / RUN_CONFIG).is_file():
            return run
    return None


def open_source(run_dir) -> tuple[Source, object, object]:
    """(source, model, tokenizer or None) of ``run_dir``: a run folder (its final model, else its latest
    checkpoint) or a model / checkpoint folder, opened as eval and generate open it (`plan.open_trained`:
    every folder read verified against its manifest, latest.json confined to the run's checkpoints); a
    model folder on its own is exported without a tokenizer. One SynthformerError naming the file otherwise."""
    from ..training.plan import open_trained

    path = Path(run_dir)
    if not path.is_dir():
        raise ExportError(f"{path}: no such run folder")
    if (path / WEIGHTS).is_file() and _run_around(path) is None:  # a model folder on its own
        warnings.warn(f"{path}: not inside a run folder, so no tokenizer; exported the model without one",
                      stacklevel=3)
        return Source(path, None, unfinished=False), load_model(path).eval(), None
    if not (path / WEIGHTS).is_file() and not (path / RUN_CONFIG).is_file():
        raise ExportError(f"{path}: no model to export (neither a run folder with {RUN_CONFIG} nor a model folder "
                          f"with {WEIGHTS}); give the --out of a train run, e.g. synthformer train --out RUN")
    run = open_trained(path, log=lambda message: None)
    return Source(run.model_dir, run.folder, unfinished=not run.finished), run.model, run.tokenizer


def find_model_folder(run_dir) -> Path:
    """The weights folder of a run: ``RUN/model`` (final weights), else the latest checkpoint; or
    ``run_dir`` itself when it is a model or checkpoint folder (see `open_source`)."""
    return open_source(run_dir)[0].folder


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_export_out(out: Path, src: Source) -> None:
    """Refuse an output folder that would mix files into a run or model folder, or replace anything but
    an earlier synthformer export (or an empty folder)."""
    here, root = out.resolve(), src.root.resolve()
    if _inside(here, root) or _inside(root, here):
        raise ExportError(f"{out}: {'inside' if _inside(here, root) else 'holds'} {src.root}, the folder being "
                          "exported; an export must not mix files into a run or model folder: choose an --out "
                          "outside it")
    held = next((a for a in here.parents if (a / MANIFEST).is_file()), None)
    if held is not None:
        raise ExportError(f"{out}: inside {held}, a synthformer run or model folder (it has {MANIFEST}); choose an "
                          "--out outside it")
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: exists and is not a folder; choose another --out")
    if out.is_dir() and any(out.iterdir()):  # never replace someone else's folder
        try:
            prior = json.loads((out / CONFIG).read_text()).get("model_type")
        except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            prior = None
        if prior != "synthformer":
            raise ExportError(f"{out}: holds files and is not a synthformer export (no {CONFIG} with model_type "
                              "\"synthformer\"); choose a new or empty --out")


def _replace(tmp: Path, out: Path) -> None:
    """Rename the complete export ``tmp`` to ``out``; an earlier export there goes only once it is replaced."""
    if not out.exists():
        os.replace(tmp, out)
        return
    old = tmp.with_name(f".{out.name}.tmp-{os.getpid()}-old")
    shutil.rmtree(old, ignore_errors=True)
    os.replace(out, old)
    try:
        os.replace(tmp, out)
    except OSError:
        os.replace(old, out)  # the earlier export back in place
        raise
    shutil.rmtree(old, ignore_errors=True)


def export_hf(run_dir, out_dir, *, tokenizer: bool = True) -> Path:
    """Write the Hugging Face folder of the run (or model / checkpoint folder) ``run_dir`` to ``out_dir``.

    ``tokenizer=False`` skips the tokenizer; a run without ``tokenizer.json`` is exported without one
    (with a warning). An earlier synthformer export at ``out_dir`` is replaced; a failed export leaves
    ``out_dir`` as it was. Returns ``out_dir`` as a Path.
    """
    out = Path(out_dir)
    src, model, tok = open_source(run_dir)
    check_export_out(out, src)
    if src.unfinished:
        warnings.warn(f"{src.run} is not finished; exporting its latest checkpoint {src.folder.name}", stacklevel=2)
    tok = tok if tokenizer else None
    hf = to_hf(model)
    try:
        hf_tok = None if tok is None else to_hf_tokenizer(tok, cfg=model.config)
    except Exception as e:  # the tokenizers library's own errors on a tokenizer it cannot represent
        raise ExportError(f"{src.run or src.folder}/{TOKENIZER}: cannot be converted for Hugging Face "
                          f"({type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}); save the tokenizer "
                          "again") from None
    created = [p for p in check_out(out) if p != out]  # the parents this export creates (removed if it fails)
    tmp, ok = None, False
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
        hf.config.auto_map = write_remote_code(tmp, {AUTO_CLASSES[model.config.kind]: type(hf).__name__,
                                                     "AutoModel": "SynthformerBaseModel"})
        hf.save_pretrained(tmp)
        if hf_tok is not None:
            hf_tok.save_pretrained(tmp)
        (tmp / CARD).write_text(model_card(src, model.config, AUTO_CLASSES[model.config.kind], hf_tok is not None),
                                encoding="utf-8")
        for f in tmp.iterdir():
            fsync_file(f)
        _replace(tmp, out)
        fsync_dir(out.parent)
        ok = True
    except OSError as e:
        raise ExportError(f"{out}: cannot write the export ({e.strerror or type(e).__name__}); nothing was "
                          "written: choose a writable --out") from None
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if not ok:
            remove_created(created)
    return out


def model_card(src: Source, cfg, auto_class: str, with_tokenizer: bool) -> str:
    """The export's README.md: variant and size, data, training budget, the run's final metrics (from its
    done.json when finished), the licence, and how to load it."""
    from ..utils.jsonl import read_json

    train, result = {}, {}
    if src.run is not None:
        try:
            train = read_json(src.run / RUN_CONFIG, ExportError, "").get("train") or {}
            done = src.run / "done.json"
            result = read_json(done, ExportError, "") if done.is_file() else {}
        except Exception:  # noqa: BLE001 - a card is best effort; the export itself was verified
            pass
    metrics = {k: v for k, v in (result.get("valid") or {}).items() if isinstance(v, (int, float)) and
               not k.endswith("_se")}
    test = {k: v for k, v in (result.get("test") or {}).items() if isinstance(v, (int, float)) and
            not k.endswith("_se")}
    shown = lambda m: ", ".join(f"{k} {v:.4g}" for k, v in m.items()) or "not recorded"  # noqa: E731
    attention = cfg.attention if isinstance(cfg.attention, str) else " / ".join(map(str, cfg.attention))
    load = f"{auto_class}.from_pretrained(\"PATH\", trust_remote_code=True)"
    lines = [
        "---", "library_name: transformers", "license: mit", "tags:", "- synthformer", "- synthesizer", "---", "",
        f"# synthformer {cfg.kind}: attention {attention}", "",
        f"A synthformer model (kind {cfg.kind}) with synthetic attention (Tay et al., *Synthesizer: Rethinking "
        "Self-Attention for Transformer Models*, ICML 2021, arXiv:2005.00743), trained and exported (`synthformer "
        "export hf`) with the synthformer library.", "",
        "| | |", "|---|---|",
        f"| attention | `{attention}` |",
        f"| size | d={cfg.embed_dim}, {cfg.num_layers} layers, {cfg.num_heads} heads, FFN {cfg.ffn_dim}, "
        f"max_seq_len {cfg.max_seq_len}, vocabulary {cfg.vocab_size} |",
        f"| data | {train.get('data', 'not recorded')} (task {train.get('task', cfg.kind)}, tokenizer "
        f"{train.get('tokenizer', 'not recorded')}) |",
        f"| training | {result.get('step', train.get('steps', '?'))} of {train.get('steps', '?')} steps x "
        f"{train.get('batch_size', '?')} sequences, lr {train.get('lr', '?')}, seed {train.get('seed', '?')}"
        + (" (unfinished: the latest checkpoint)" if src.unfinished else "") + " |",
        f"| validation | {shown(metrics)} |",
        *([f"| test | {shown(test)} |"] if test else []),
        "| licence | MIT (the code); the weights inherit the licence of the training data |", "",
        "## Load", "", "```python",
        f"from transformers import {auto_class}" + (", AutoTokenizer" if with_tokenizer else ""),
        f"model = {load}",
        *(["tokenizer = AutoTokenizer.from_pretrained(\"PATH\", trust_remote_code=True)"] if with_tokenizer else []),
        "```", "",
        "The folder holds its own modeling code (synthformer's modules, vendored), so `trust_remote_code=True` "
        "loads it without synthformer installed; after `import synthformer.hf` the Auto classes load it without "
        f"remote code. Inputs longer than max_seq_len ({cfg.max_seq_len}) are refused: the position tables end there.",
        "",
    ]
    return "\n".join(lines)
