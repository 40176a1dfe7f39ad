"""The `synthformer` command: train, eval, generate, compare, data, bench, plot.

    synthformer train --task lm --data chitchat --attention R+V --steps 2000 --out runs/rv
    synthformer train --config configs/seq2seq-bible.yaml --out runs/mt
    synthformer train --resume --out runs/rv             # continue exactly where it stopped
    synthformer eval --run runs/rv --split test
    synthformer generate --run runs/rv "hi, how are you?" --strategy sample --top_p 0.9
    synthformer compare                                  # the main job (also `make demo`)
    synthformer data list | prepare NAME

Options of `train` are the fields of `TrainConfig` (synthformer.train) and of `ModelConfig`
(synthformer.model), given as ``--key=value`` or ``--key value`` (``model.key`` / ``train.key``
spell out which); ``--config FILE`` reads a YAML file of overrides first (flat, or with ``train:``
and ``model:`` sections). Values are type-checked against the dataclasses. User errors print one
line and exit with status 2 (set SYNTHFORMER_DEBUG=1 for the traceback).
"""
from __future__ import annotations

from .errors import SynthformerError

import argparse
import dataclasses
import difflib
import json
import os
import sys
import types
import typing
from pathlib import Path

from .model import ModelConfig
from .train import RESUME_FREE, TrainConfig

# ModelConfig fields the task and the tokenizer decide; set them through task= / vocab_size=.
DATA_FIXED = ("kind", "vocab_size", "pad_id", "bos_id", "eos_id", "num_classes", "extra")
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class UsageError(SynthformerError):
    """Bad command-line input: printed as one line, exit status 2."""


# ----------------------------------------------------------------------------- typed overrides
def _fields(cls) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


TRAIN_FIELDS = _fields(TrainConfig)
MODEL_FIELDS = {k: v for k, v in _fields(ModelConfig).items() if k not in DATA_FIXED}


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def coerce(key: str, value, tp, from_text: bool):
    """`value` as type `tp`: parse it when it came from the command line (`from_text`), else check it."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if type(None) in options and (value is None or (from_text and str(value).lower() in ("none", "null"))):
            return None
        errors = []
        for option in (o for o in options if o is not type(None)):
            try:
                return coerce(key, value, option, from_text)
            except UsageError as e:
                errors.append(e)
        raise UsageError(f"{key} expects {' or '.join(_type_name(o) for o in options)}, got {value!r}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        if from_text and str(value).lower() in TRUE + FALSE:
            return str(value).lower() in TRUE
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if from_text:
            try:
                return int(str(value).replace("_", ""))
            except ValueError:
                pass
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if from_text:
            try:
                return float(value)
            except ValueError:
                pass
    elif tp is str:
        if isinstance(value, str) and not (from_text and value.startswith("[")):
            return value
    elif tp is list or origin is list or origin is tuple:
        if from_text and isinstance(value, str):
            import yaml
            text = value if value.startswith("[") else f"[{value}]"
            try:
                value = yaml.safe_load(text)
            except yaml.YAMLError:
                pass
        if isinstance(value, (list, tuple)):
            args = typing.get_args(tp)
            if args and args[-1] is not Ellipsis and len(args) == len(value) and origin is tuple:
                return tuple(coerce(key, v, a, False) for v, a in zip(value, args))
            if origin is tuple and args and args[-1] is not Ellipsis:
                raise UsageError(f"{key} expects {len(args)} values, got {len(value)}: {value!r}")
            return list(value)
    elif tp is dict or origin is dict:
        if isinstance(value, dict):
            return value
    raise UsageError(f"{key} expects {_type_name(tp)}, got {value!r}")


def _resolve_key(raw: str) -> tuple[str, str]:
    """'steps' -> ('train', 'steps'); 'model.attention' -> ('model', 'attention')."""
    key = raw.strip().lstrip("-").replace("-", "_")
    section, _, name = key.rpartition(".")
    if section in ("train", "model"):
        fields = TRAIN_FIELDS if section == "train" else MODEL_FIELDS
        if name in fields:
            return section, name
    elif not section:
        if name in TRAIN_FIELDS:
            return "train", name
        if name in MODEL_FIELDS:
            return "model", name
    if name in DATA_FIXED:
        raise UsageError(f"model field {name!r} is set by the task and the data (use task=, vocab_size=, data=)")
    known = list(TRAIN_FIELDS) + list(MODEL_FIELDS)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `synthformer train --help`"
    raise UsageError(f"unknown option {raw!r}{hint}")


def apply_overrides(items: list[tuple[str, object, bool]]) -> tuple[dict, dict]:
    """(key, value, from_text) triples -> (train overrides, model overrides), typed."""
    train, model = {}, {}
    for raw, value, from_text in items:
        section, name = _resolve_key(raw)
        tp = (TRAIN_FIELDS if section == "train" else MODEL_FIELDS)[name]
        (train if section == "train" else model)[name] = coerce(name, value, tp, from_text)
    return train, model


def split_cli_overrides(tokens: list[str]) -> list[tuple[str, object, bool]]:
    """['--steps=10', '--attention', 'R+V', '--resume'] -> [(key, text, True), ...]."""
    out, i = [], 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--") or tok == "--":
            raise UsageError(f"unexpected argument {tok!r}; options look like --key=value")
        if "=" in tok:
            key, value = tok[2:].split("=", 1)
            i += 1
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            key, value = tok[2:], tokens[i + 1]
            i += 2
        else:
            key, value = tok[2:], "true"  # a bare flag such as --resume
            i += 1
        out.append((key, value, True))
    return out


def read_config_file(path: str) -> list[tuple[str, object, bool]]:
    """A YAML file of overrides: flat keys, or `train:` / `model:` sections."""
    import yaml

    file = Path(path)
    if not file.is_file():
        raise UsageError(f"config file not found: {file}")
    try:
        data = yaml.safe_load(file.read_text()) or {}
    except yaml.YAMLError as e:
        raise UsageError(f"{file}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{file}: expected a mapping of option: value, got {type(data).__name__}")
    items = []
    for key, value in data.items():
        if key in ("train", "model") and isinstance(value, dict):
            items += [(f"{key}.{k}", v, isinstance(v, str)) for k, v in value.items()]
        else:  # YAML reads 1e-3 as a string: strings are parsed like command-line text
            items.append((str(key), value, isinstance(value, str)))
    return items


def parse_overrides(tokens: list[str], config: str | None = None) -> tuple[dict, dict]:
    """Config file first, then the command line; returns typed (train, model) override dicts."""
    items = (read_config_file(config) if config else []) + split_cli_overrides(tokens)
    return apply_overrides(items)


def make_train_config(overrides: dict) -> TrainConfig:
    try:
        return TrainConfig(**overrides)
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_model_overrides(preset: str, model: dict) -> None:
    """Fail before any data is loaded when the model fields do not make a valid config."""
    from .train import check_attention_specs

    try:
        check_attention_specs(ModelConfig.preset(preset, **model))
    except (ValueError, TypeError) as e:
        raise UsageError(f"bad model option: {e}") from None


def field_help() -> str:
    """Every option with its type and default, for --help."""
    lines = ["train options (TrainConfig):"]
    lines += [f"  --{f.name}={_type_name(TRAIN_FIELDS[f.name])} (default {f.default!r})"
              for f in dataclasses.fields(TrainConfig)]
    lines.append("model options (ModelConfig, over the preset):")
    lines += [f"  --{f.name}={_type_name(MODEL_FIELDS[f.name])}" for f in dataclasses.fields(ModelConfig)
              if f.name in MODEL_FIELDS]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- commands
def _load_run(run: str):
    """(stored config dict, model folder) of a run folder; the final model, else the latest checkpoint."""
    from .checkpoint import latest_checkpoint

    folder = Path(run)
    if not (folder / "config.json").is_file():
        raise UsageError(f"{folder} is not a run folder (no config.json); give the --out of a train run")
    stored = json.loads((folder / "config.json").read_text())
    model_dir = folder / "model"
    if not (model_dir / "model.safetensors").is_file():
        model_dir = latest_checkpoint(folder)
        if model_dir is None:
            raise UsageError(f"{folder} has no model yet (no model/ and no checkpoint)")
        print(f"note: {folder} is not finished; using checkpoint {model_dir.name}", file=sys.stderr)
    return stored, model_dir


def cmd_train(args, rest: list[str]) -> int:
    from .train import train

    train_over, model_over = parse_overrides(rest, args.config)
    if args.resume:
        if model_over or args.config:
            raise UsageError("--resume continues the stored config; drop the model options and --config")
        out = train_over.pop("out", None)
        if not out:
            raise UsageError("--resume needs --out RUN_FOLDER (the run to continue)")
        file = Path(out) / "config.json"
        if not file.is_file():
            raise UsageError(f"nothing to resume: {file} not found")
        fixed = [k for k in train_over if k not in RESUME_FREE]
        if fixed:
            raise UsageError(f"cannot change {', '.join(fixed)} when resuming; only {', '.join(RESUME_FREE)} may change")
        stored = json.loads(file.read_text())["train"]
        stored["stop_after"] = None  # a stop is for one invocation only
        cfg = make_train_config({**stored, **train_over, "out": out, "resume": True})
        result = train(cfg)
    else:
        cfg = make_train_config(train_over)
        check_model_overrides(cfg.preset, model_over)
        result = train(cfg, model_over)
    if "stopped_at" not in result:
        print(json.dumps({"out": result["out"], "step": result["step"], "valid": _plain(result["valid"]),
                          "tokens_per_s": round(result["tokens_per_s"], 1)}))
    return 0


def _plain(metrics: dict | None) -> dict:
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}


def cmd_eval(args, rest: list[str]) -> int:
    import torch

    from .data import load_tokenizer
    from .model import load
    from .distributed import resolve_device
    from .train import evaluate, prepare_data

    stored, model_dir = _load_run(args.run)
    train_over, model_over = parse_overrides(rest)
    if model_over:
        raise UsageError(f"eval takes train options only, got model options {sorted(model_over)}")
    cfg = make_train_config({**stored["train"], **train_over, "resume": False})
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    model = load(model_dir, device=str(resolve_device(cfg.device)))
    data = prepare_data(cfg, cfg.seq_len or model.config.max_seq_len, load_tokenizer(args.run),
                        log=lambda m: print(m, file=sys.stderr))
    if args.split not in data.encoded:
        raise UsageError(f"the data has no {args.split!r} split")
    metrics = evaluate(data.task, model, data, cfg, split=args.split, max_batches=args.max_batches)
    print(json.dumps({"run": args.run, "split": args.split, **_plain(metrics)}))
    return 0


def cmd_generate(args, rest: list[str]) -> int:
    import torch

    from .data import load_tokenizer
    from .model import load
    from .distributed import resolve_device

    if rest:
        raise UsageError(f"unexpected arguments {rest}; see `synthformer generate --help`")
    stored, model_dir = _load_run(args.run)
    model = load(model_dir, device=str(resolve_device(args.device)))
    tok = load_tokenizer(args.run)
    cfg = model.config
    torch.manual_seed(args.seed)
    if cfg.kind == "classifier":
        ids = torch.tensor([tok.encode(args.prompt)[:cfg.max_seq_len] or [tok.unk_id]], device=next(model.parameters()).device)
        probs = torch.softmax(model.eval()(ids), dim=-1)[0]  # (C,)
        labels = cfg.extra.get("labels") or [str(i) for i in range(cfg.num_classes)]
        top = probs.argmax().item()
        print(json.dumps({"label": labels[top], "probability": round(probs[top].item(), 4)}))
        return 0
    if cfg.kind not in ("lm", "seq2seq"):
        raise UsageError(f"generate works with lm, seq2seq and classify runs; {args.run} is a {cfg.kind} model")
    options = {"strategy": args.strategy, "max_new_tokens": args.max_new_tokens}
    if args.strategy == "sample":
        options.update(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    elif args.strategy == "beam":
        options.update(num_beams=args.num_beams, length_penalty=args.length_penalty)
    device = next(model.parameters()).device
    if cfg.kind == "lm":
        # documents follow an <eos> in training, so a prompt starts after one
        prompt = [tok.eos_id] + tok.encode(args.prompt)
        if len(prompt) >= cfg.max_seq_len:
            raise UsageError(f"the prompt has {len(prompt)} tokens; the model takes at most {cfg.max_seq_len - 1}")
        out = model.generate(torch.tensor([prompt], device=device), **options)[0].tolist()
        new = out[len(prompt):]
        new = new[:new.index(tok.eos_id)] if tok.eos_id in new else new
        print(args.prompt + tok.decode(new))
    else:
        src = (tok.encode(args.prompt) + [tok.eos_id])[-cfg.max_seq_len:]
        out = model.generate(torch.tensor([src], device=device), **options)[0].tolist()
        out = out[:out.index(tok.eos_id)] if tok.eos_id in out else out
        print(tok.decode(out))
    return 0


def cmd_delegate(module: str, what: str, argv: list[str]) -> int:
    """Hand the rest of the command line to `module.main(argv)` (bench, plot: another package part)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        print(f"synthformer: error: `synthformer {what}` is not available in this installation "
              f"({module} is missing)", file=sys.stderr)
        return 2
    return int(mod.main(argv) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="synthformer", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tr = sub.add_parser("train", help="train one model (any task); options are TrainConfig/ModelConfig fields",
                        epilog=field_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    tr.add_argument("--config", help="YAML file of overrides (configs/*.yaml)")
    tr.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    ev = sub.add_parser("eval", help="evaluate a run's model on its data (valid or test split)")
    ev.add_argument("--run", required=True, help="run folder (the --out of train)")
    ev.add_argument("--split", default="valid", choices=["valid", "test", "train"])
    ev.add_argument("--max-batches", type=int, default=0, help="0 = the whole split")
    ge = sub.add_parser("generate", help="continue a prompt (lm), translate/answer it (seq2seq), or label it (classify)")
    ge.add_argument("--run", required=True, help="run folder (the --out of train)")
    ge.add_argument("prompt", nargs="?", default="", help="text")
    ge.add_argument("--max-new-tokens", "--max_new_tokens", type=int, default=50)
    ge.add_argument("--strategy", choices=["greedy", "sample", "beam"], default="greedy")
    ge.add_argument("--temperature", type=float, default=1.0)
    ge.add_argument("--top-k", "--top_k", type=int, default=0)
    ge.add_argument("--top-p", "--top_p", type=float, default=1.0)
    ge.add_argument("--num-beams", "--num_beams", type=int, default=4)
    ge.add_argument("--length-penalty", "--length_penalty", type=float, default=1.0)
    ge.add_argument("--seed", type=int, default=0)
    ge.add_argument("--device", default="auto")
    for name, text in (("compare", "the main job: train the paper's variants on the same budget and tabulate"),
                       ("data", "list / prepare / show data sources"),
                       ("bench", "speed and memory benchmarks"), ("plot", "figures from benchmark / run data")):
        p = sub.add_parser(name, help=text, add_help=False)
        p.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `synthformer` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    delegated = {"compare": "synthformer.compare", "data": "synthformer.data.__main__",
                 "bench": "synthformer.bench", "plot": "synthformer.plots"}
    try:
        if argv and argv[0] in delegated:
            return cmd_delegate(delegated[argv[0]], argv[0], argv[1:])
        args, rest = parser.parse_known_args(argv)
        handler = {"train": cmd_train, "eval": cmd_eval, "generate": cmd_generate}[args.command]
        return handler(args, rest)
    except KeyboardInterrupt:
        print("synthformer: interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError) as e:  # user errors: bad option, data, folder, checkpoint
        if os.environ.get("SYNTHFORMER_DEBUG"):
            raise
        print(f"synthformer: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
