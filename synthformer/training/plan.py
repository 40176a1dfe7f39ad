"""A run, resolved once: the sequence length, the data, the one ModelConfig; and a trained run, opened
one way (for eval, generate, plots, reproduce and fine-tuning; compare reads finished runs' done.json).

    data = prepare(cfg, overrides, log=print)       # a new run's data: seq_len and pooling from the plan
    model_cfg = model_config(cfg, overrides, data)  # preset + the data's fields + overrides, built once
    run = open_trained("runs/rv", with_data=True)   # model (eval mode), tokenizer, configs, data

The sequence-length rule (:func:`seq_len`) is the only one: ``cfg.seq_len``, else the model's
``max_seq_len``, never longer. This module is the only place that builds a ModelConfig from user
overrides and the only one that opens a trained run (export hf loads a model folder that lies outside any
run on its own, without a tokenizer); tests/test_architecture.py checks the call sites.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import RunError
from ..errors import ConfigError
from ..model import PRESETS, ModelConfig
from ..mixers import has_position_tables as mixer_has_position_tables
from ..model.config import check_memory, slots
from .runs import RUN_CONFIG, load_model, load_run_tokenizer, read_run_config, run_model_folder, verify_run
from .task_data import TaskData, prepare_data
from ..tasks import TASKS
from .config import TrainConfig

_MODEL_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.default is not dataclasses.MISSING}


# ----------------------------------------------------------------------------- a new run
def model_field(cfg: TrainConfig, overrides: dict, name: str):
    """A ModelConfig field as the run will have it (override, else preset, else default), without
    building a ModelConfig (the data's fields, such as vocab_size, are not known here)."""
    return overrides[name] if name in overrides else PRESETS[cfg.preset].get(name, _MODEL_DEFAULTS[name])


def seq_len(cfg: TrainConfig, max_seq_len: int) -> int:
    """Tokens per sequence: ``cfg.seq_len``, else the model's ``max_seq_len``; never longer than it."""
    n = cfg.seq_len or max_seq_len
    if n > max_seq_len:
        raise ConfigError(f"seq_len={n} is longer than the model's max_seq_len={max_seq_len}; "
                          f"lower seq_len or set max_seq_len={n}")
    return n


def prepare(cfg: TrainConfig, overrides: dict, tokenizer=None, log=print) -> TaskData:
    """The data of a new run: `cfg.data` encoded (with `tokenizer`, else a new one) to the run's
    sequence length, for its pooling (a classifier with pooling=cls gets a CLS token)."""
    n = seq_len(cfg, model_field(cfg, overrides, "max_seq_len"))
    return prepare_data(cfg, n, tokenizer, log=log, pooling=model_field(cfg, overrides, "pooling"))


def check_model_overrides(cfg: TrainConfig, overrides: dict) -> None:
    """Fail fast, before any data is read: the overrides on the preset, for the task's model kind
    (the data's fields at their defaults, the BPE vocabulary at the size asked for), and the memory the
    model will need, its training too (on CPU, as the loop checks it). The run's own config is
    :func:`model_config`."""
    from .distributed import resolve_device
    from .memory import check_training_memory

    vocab = {"vocab_size": cfg.vocab_size} if cfg.tokenizer == "bpe" else {}  # the size asked for, an upper bound
    model_cfg = ModelConfig.preset(cfg.preset, **{"kind": TASKS[cfg.task].model_kind, **vocab, **overrides})
    check_memory(model_cfg)
    if resolve_device(cfg.device).type == "cpu":  # as the training loop checks it, but before any data is read
        check_training_memory(model_cfg, cfg.batch_size, seq_len(cfg, model_cfg.max_seq_len))


def model_config(cfg: TrainConfig, overrides: dict, data: TaskData) -> ModelConfig:
    """The ModelConfig of a new run: the preset, the data's fields (vocabulary, special ids, classes),
    then the user's overrides; built once."""
    fields = {"kind": data.task.model_kind, **data.task.model_fields(data.tokenizer, data.splits), **overrides}
    fields["extra"] = {**fields.get("extra", {}), "tokenizer": cfg.tokenizer}
    if data.splits.meta.get("labels"):  # class names, so `generate` can print a label
        fields["extra"]["labels"] = list(data.splits.meta["labels"])
    return ModelConfig.preset(cfg.preset, **fields)


def has_position_tables(task: str, preset: str, overrides: dict, variant: str) -> bool:
    """Whether `variant` has trainable position tables (what ``table_lr_mult`` acts on) in any token-mixing
    slot of the task's model (a seq2seq's cross-attention included): answered from the mixer classes'
    declarations (`mixers.has_position_tables`) on the run's ModelConfig (a tiny vocabulary: the tables do not
    depend on it), no model built."""
    fields = {"vocab_size": 300, **overrides, "kind": TASKS[task].model_kind, "attention": variant}
    cfg = ModelConfig.preset(preset, **fields)
    return any(mixer_has_position_tables(cfg.mixer_spec(spec)) for _, spec, _, _ in slots(cfg))


# ----------------------------------------------------------------------------- a stored run
def stored_model_config(stored: dict, folder: Path) -> ModelConfig:
    """The ModelConfig of the config.json (``stored``) of the run in `folder`; RunError naming the file
    when it is invalid."""
    try:
        return ModelConfig.from_dict(stored["model"])
    except (TypeError, ValueError) as e:
        raise RunError(f"{Path(folder) / RUN_CONFIG}: the stored model config is invalid ({e}); start a new run") \
            from None


def run_data(cfg: TrainConfig, model_cfg: ModelConfig, tokenizer, log=print) -> TaskData:
    """The data of a stored run, encoded with its own tokenizer to its sequence length."""
    return prepare_data(cfg, seq_len(cfg, model_cfg.max_seq_len), tokenizer, log=log, pooling=model_cfg.pooling)


def tokenizer_identity(tok) -> str:
    """A string equal for two tokenizers exactly when they encode alike (kind, specials, vocabulary)."""
    return json.dumps({"kind": tok.kind, "specials": list(tok.specials), **tok._state()}, sort_keys=True)


@dataclass
class TrainedRun:
    """A trained run, opened: its folder and config.json, its configs, model (eval mode) and tokenizer."""

    folder: Path  # the run folder
    stored: dict  # its config.json: {"model": ..., "train": ..., "world_size": ...}
    train: TrainConfig  # the stored train config (with the caller's overrides), resume=False
    model: object  # the SynthformerModel, in eval mode
    tokenizer: object
    model_dir: Path  # the weights used: model/ or a checkpoint
    finished: bool  # model_dir is the final model/
    data: TaskData | None = None  # with_data=True: the run's data, encoded with its tokenizer

    @property
    def model_config(self) -> ModelConfig:
        return self.model.config

    @property
    def seq_len(self) -> int:
        """The length the run trained on."""
        return seq_len(self.train, self.model_config.max_seq_len)

    @property
    def name(self) -> str:
        """The run's self-attention mixers in the paper's notation, e.g. ``R+V`` (``V/R`` when layers differ)."""
        cfg = self.model_config
        return "/".join(dict.fromkeys(cfg.mixer_spec(spec).display
                                      for _, spec, _, cross in slots(cfg) if not cross))


def _is_run(path: Path) -> bool:
    try:
        stored = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stored, dict) and isinstance(stored.get("model"), dict) and isinstance(stored.get("train"), dict)


def _locate(path: Path) -> tuple[Path, Path | None]:
    """(run folder, model folder or None = the run's own choice) of a run folder or a model /
    checkpoint folder inside one."""
    if not path.is_dir():
        raise RunError(f"{path}: {'not a folder' if path.exists() else 'no such folder'}, so not a run folder; "
                       "give the --out of synthformer train or one of its checkpoints")
    if (path / "model.safetensors").is_file():  # a model or checkpoint folder inside a run
        folder = next((p for p in (path.parent, path.parent.parent) if _is_run(p)), None)
        if folder is None:
            raise RunError(f"{path}: a model folder outside a run folder; give the run folder (its config.json "
                           "and tokenizer.json are needed)")
        return folder, path
    return path, None


def open_trained(path, device: str | None = "cpu", *, train_overrides: dict | None = None,
                 with_data: bool = False, log=None) -> TrainedRun:
    """The trained run at `path`: a run folder (its final model, else its latest checkpoint, with a
    note), or a model / checkpoint folder inside one. `device` None = the run's own train device;
    `train_overrides` change its TrainConfig (e.g. eval batches); `with_data` also encodes its data.
    Missing or damaged files are one-line RunErrors naming the file."""
    from .distributed import resolve_device

    say = log or (lambda m: print(m, file=sys.stderr))
    folder, model_dir = _locate(Path(path))
    stored = read_run_config(folder)
    tokenizer = load_run_tokenizer(folder)
    verify_run(folder)  # config.json and the tokenizer's files unchanged since training
    finished = model_dir is not None and model_dir.name == "model"
    if model_dir is None:
        model_dir, finished = run_model_folder(folder)
        if not finished and (folder / "done.json").exists():  # finished, but its model/ went
            say(f"note: {folder} finished, but its final model ({folder / 'model' / 'model.safetensors'}) is "
                f"missing; using checkpoint {model_dir.name}")
        elif not finished:
            say(f"note: {folder} is not finished; using checkpoint {model_dir.name}")
    try:
        train = TrainConfig.from_dict({**stored["train"], **(train_overrides or {}), "resume": False})
    except ConfigError as e:
        raise RunError(f"{folder / RUN_CONFIG}: the stored train config is invalid ({e}); restore it from a backup "
                       "or train the run again") from None
    try:
        where = str(resolve_device(train.device if device is None else device))
    except ValueError as e:  # a bad or missing device
        raise ConfigError(str(e)) from None
    model = load_model(model_dir, device=where).eval()  # follows a checkpoint rotated away while read
    data = run_data(train, model.config, tokenizer, log=say) if with_data else None
    return TrainedRun(folder, stored, train, model, tokenizer, model_dir, finished, data)
