"""`synthformer generate`: continue a prompt (lm), translate/answer it (seq2seq), or label it (classify)."""
from __future__ import annotations

import json
import math
import sys

from ..training.overrides import UsageError
from ._runs import add_trust_option, device_of

NAME = "generate"
HELP = "continue a prompt (lm), translate/answer it (seq2seq), or label it (classify)"


def add_parser(sub):
    p = sub.add_parser(NAME, help=HELP, description=HELP + ".")
    p.add_argument("--run", required=True, help="run folder (the --out of train)")
    p.add_argument("prompt", nargs="?", default="", help="text")
    p.add_argument("--max-new-tokens", "--max_new_tokens", type=int, default=50, help="(default: %(default)s)")
    p.add_argument("--strategy", choices=["greedy", "sample", "beam"], default="greedy", help="(default: %(default)s)")
    p.add_argument("--temperature", type=float, default=1.0, help="sample: > 0 (default: %(default)s)")
    p.add_argument("--top-k", "--top_k", type=int, default=0, help="sample: keep the k likeliest; 0 = all (default: 0)")
    p.add_argument("--top-p", "--top_p", type=float, default=1.0, help="sample: nucleus mass in (0, 1] (default: 1.0)")
    p.add_argument("--num-beams", "--num_beams", type=int, default=4, help="beam: width >= 1 (default: %(default)s)")
    p.add_argument("--length-penalty", "--length_penalty", type=float, default=1.0, help="beam (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N | mps (default: %(default)s)")
    add_trust_option(p)
    return p


def decoding_options(args) -> dict:
    """The decoding keywords of `model.generate`, each checked as a user option."""
    checks = [("max-new-tokens", args.max_new_tokens >= 0, ">= 0"), ("num-beams", args.num_beams >= 1, ">= 1"),
              ("top-k", args.top_k >= 0, ">= 0 (0 = all)"), ("top-p", 0 < args.top_p <= 1, "in (0, 1]"),
              ("temperature", 0 < args.temperature < math.inf, "> 0 and finite"),
              ("length-penalty", math.isfinite(args.length_penalty), "a finite number")]
    checks.append(("seed", -2**63 <= args.seed < 2**64, "in [-2**63, 2**64) (what torch.manual_seed takes)"))
    for name, ok, rule in checks:
        if not ok:
            raise UsageError(f"--{name}={getattr(args, name.replace('-', '_'))} must be {rule}")
    options = {"strategy": args.strategy, "max_new_tokens": args.max_new_tokens}
    if args.strategy == "sample":
        options.update(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    elif args.strategy == "beam":
        options.update(num_beams=args.num_beams, length_penalty=args.length_penalty)
    return options


def run(args, rest: list[str]) -> int:
    import torch

    from ..training.plan import open_trained

    if rest:
        raise UsageError(f"unexpected arguments {rest}; see `synthformer generate --help`")
    options = decoding_options(args)
    try:
        args.prompt.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 reach argv as lone surrogates
        raise UsageError("the prompt is not valid UTF-8 text; give it as UTF-8 (e.g. convert it with iconv)") from None
    run = open_trained(args.run, device=device_of(args.device))
    model, tok, cfg = run.model, run.tokenizer, run.model_config
    device = next(model.parameters()).device
    torch.manual_seed(args.seed)
    if cfg.kind == "classifier":
        from ..tasks import classifier_input  # encoded as the classify task did (a leading CLS with pooling=cls)

        ids = torch.tensor([classifier_input(args.prompt, tok, cfg.max_seq_len, cfg.pooling)], device=device)
        probs = torch.softmax(model.eval()(ids), dim=-1)[0]  # (C,)
        labels = cfg.extra.get("labels") or [str(i) for i in range(cfg.num_classes)]
        top = probs.argmax().item()
        print(json.dumps({"label": labels[top], "probability": round(probs[top].item(), 4)}))
        return 0
    if cfg.kind not in ("lm", "seq2seq"):
        raise UsageError(f"generate works with lm, seq2seq and classify runs; {args.run} is a {cfg.kind} model")
    if cfg.kind == "lm":
        # documents follow an <eos> in training, so a prompt starts after one
        prompt = [tok.eos_id] + tok.encode(args.prompt)
        if len(prompt) >= cfg.max_seq_len:
            raise UsageError(f"the prompt has {len(prompt)} tokens; the model takes at most {cfg.max_seq_len - 1}")
        out = model.generate(torch.tensor([prompt], device=device), **options)[0].tolist()
        new = out[len(prompt):]
        ended = tok.eos_id in new
        new = new[:new.index(tok.eos_id)] if ended else new
        print(args.prompt + tok.decode(new))
        if not ended and len(out) >= cfg.max_seq_len and len(new) < args.max_new_tokens:
            print(f"note: stopped at the model's max_seq_len={cfg.max_seq_len} tokens (prompt {len(prompt)} + "
                  f"{len(new)} new), before --max-new-tokens={args.max_new_tokens}: the position table ends there",
                  file=sys.stderr)
    else:
        src = (tok.encode(args.prompt) + [tok.eos_id])[-cfg.max_seq_len:]
        out = model.generate(torch.tensor([src], device=device), **options)[0].tolist()
        out = out[:out.index(tok.eos_id)] if tok.eos_id in out else out
        print(tok.decode(out))
    return 0
