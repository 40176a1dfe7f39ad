"""Result rows: a variant's per-seed results aggregated into one row (means, seed spread, 95% intervals),
the floor row beside them, and the few words every report uses about a row. `compare`, the fine-tuning
suite and `reproduce` build and read rows with these; the judging rule reads them (`synthformer.evidence.judge`)."""
from __future__ import annotations

import math

from ..mixers.registry import display_name
from ..utils.stats import combine, is_number, mean_std, stat


def variant_name(spec: str) -> str:
    """Canonical display name: the paper's short spec ("R+V") or a baseline mixer name."""
    return display_name(spec)


SKIP_INTERVAL = ("eval_tokens", "masked_tokens", "count", "decoded")  # counts, not measurements


def intervals(per_seed: list[dict]) -> dict:
    """{metric: [lo, hi]}: the 95% interval of every metric of a variant, combining the per-seed
    bootstrap standard errors ("<metric>_se") with the spread over seeds (`stats.combine`); perplexity's
    is the loss's mapped through exp (it stays positive however far apart the seeds are)."""
    out = {}
    for k, v in per_seed[0]["metrics"].items():
        if k.endswith("_se") or k in SKIP_INTERVAL or not is_number(v):
            continue
        seeds = [r["metrics"] for r in per_seed if is_number(r["metrics"].get(k))]
        if not seeds or not all(math.isfinite(m[k]) for m in seeds):
            continue  # a diverged seed (inf perplexity): no interval
        ses = [m.get(f"{k}_se") for m in seeds]
        _, lo, hi = combine([m[k] for m in seeds], [s if is_number(s) and math.isfinite(s) else None for s in ses])
        if math.isfinite(lo) and math.isfinite(hi):  # one seed without an item SE has none (NaN)
            out[k] = [lo, hi]
    if "ppl" in out and "loss" in out:  # ppl = exp(loss): a t-interval of ppl itself can reach below 0
        out["ppl"] = [math.exp(v) for v in out["loss"]]
    return out


def aggregate(name: str, per_seed: list[dict]) -> dict:
    """One result row of a variant from its per-seed rows: the mean of every numeric metric (and
    tokens/s, time) in "metrics"/"tokens_per_s", the sample std beside it (None with one seed),
    the 95% interval of every metric ("interval") and the per-seed rows under "seeds"."""
    mean, std = mean_std(per_seed, [k for k, v in per_seed[0]["metrics"].items() if is_number(v)])
    tps = stat([r["tokens_per_s"] for r in per_seed])
    first = per_seed[0]
    return {"variant": name, "params": first["params"], "metrics": mean, "metrics_std": std,
            "interval": intervals(per_seed), "tokens_per_s": tps.mean, "tokens_per_s_std": tps.std,
            "train_time_s": stat([r["train_time_s"] for r in per_seed]).mean, "tokens": first["tokens"],
            "n_seeds": len(per_seed), "run": first["run"], "runs": [r["run"] for r in per_seed],
            "seeds": [{**{k: r.get(k) for k in ("seed", "metrics", "valid_metrics", "tokens_per_s", "hardware",
                                                "train_time_s", "tokens", "run")},
                       **({"items": r["items"]} if r.get("items") else {})} for r in per_seed],  # per-item record
            "model": first["model"], "train": first["train"]}


def with_floor(results: dict) -> list[dict]:
    """The rows claims and tables read: the variants, then the floor row when there is one."""
    return results["variants"] + ([results["floor"]] if results.get("floor") else [])


def shape_text(model: dict) -> str:
    """A trained model's size in words (its resolved ModelConfig), e.g. "d=128, 3 + 3 layers, 4 heads, FFN 512"."""
    layers = model.get("num_layers")
    if model.get("kind") == "seq2seq":
        layers = f"{layers} + {model.get('num_decoder_layers') or layers}"
    return f"d={model.get('embed_dim')}, {layers} layers, {model.get('num_heads')} heads, FFN {model.get('ffn_dim')}"


def gate_line(gated: dict) -> str:
    """One line on a comparison its gate stopped (`compare`'s `gate`)."""
    return (f"Stopped after {gated['by']}, the grid's gate: {gated['note']}. Not trained at this budget: "
            f"{', '.join(gated['skipped'])}; every claim naming them is inconclusive (a claim is not learned until "
            "its variants beat the floor).")
