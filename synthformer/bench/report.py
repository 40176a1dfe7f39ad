"""What the benchmark writes and prints: JSONL rows, the ratio table, and targets tables.

Rows are data (one `Row` per measurement, written as JSON lines); tables are computed from rows only.
Targets are data too: a YAML file (``targets.yaml`` beside this module, shipped with the package;
``benchmarks/targets.yaml`` of a checkout links to it) lists each target as a variant, what it is
compared with, a metric and a bound; `targets_table` checks rows against it.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml

from ..training.distributed import device_name
from ..errors import ConfigError
from .cases import Case

# shipped with the package (benchmarks/targets.yaml of a checkout links to it)
DEFAULT_TARGETS = Path(__file__).resolve().parent / "targets.yaml"


@dataclass
class Row:
    """One JSONL row: one (variant, scope, mode, length) measurement."""

    variant: str  # spec in the paper's notation ("R+V") or a baseline name ("dynamicconv")
    scope: str  # layer | model
    mode: str  # train | infer | decode
    length: int  # sequence length L
    batch: int  # batch size B (tokens per batch = B * L, except decode: B sequences)
    dtype: str  # e.g. float32
    device: str  # device name, e.g. "cpu (AMD EPYC)" or "NVIDIA H100"
    threads: int  # torch intra-op threads
    torch: str  # torch version
    embed_dim: int  # model width d
    num_heads: int  # H
    causal: bool  # causal masking
    median_ms: float  # median wall time of one step
    tokens_per_s: float  # tokens processed (decode: generated) per second
    flop: float | None  # analytic FLOPs of one step (None for decode)
    gflops_per_s: float | None  # flop / median time
    peak_bytes: int | None  # see synthformer.bench.measure
    peak_method: str | None  # how peak_bytes was measured
    cache_bytes: int | None = None  # decode: incremental-decoding cache size for the batch
    repeats: int = 0  # timed steps behind the median
    times_ms: list | None = None  # every timed step
    precision: str = "fp32"  # fp32 | bf16 (autocast over fp32 weights)
    matmul_gflops: dict | None = None  # measured matmul GFLOP/s of the run, {"fp32": .., "bf16": ..}


def to_row(r: dict, dtype, device, d, h, causal, matmul: dict | None = None) -> Row:
    """The row of one result of `synthformer.bench.measure.run_cases`."""
    c: Case = r["case"]
    med = r["median_s"]
    return Row(variant=c.variant, scope=c.scope, mode=c.mode, length=c.length, batch=c.batch,
               dtype=str(dtype).replace("torch.", ""), device=device_name(device), threads=torch.get_num_threads(),
               torch=torch.__version__, embed_dim=d, num_heads=h, causal=causal, median_ms=round(med * 1e3, 3),
               tokens_per_s=round(c.tokens / med, 1), flop=c.flop,
               gflops_per_s=round(c.flop / med / 1e9, 2) if c.flop else None, peak_bytes=r["peak"],
               peak_method=r["method"] if r["peak"] is not None else None, cache_bytes=c.cache_bytes,
               repeats=len(r["times"]), times_ms=[round(t * 1e3, 3) for t in r["times"]],
               precision=c.precision, matmul_gflops=matmul)


def ratio_table(rows: list[Row]) -> str:
    """Speed ratio vs vanilla (V time / variant time) and memory ratio, per scope/mode/length."""
    lines = [f"{'scope':6} {'mode':6} {'L':>5} {'prec':4} {'variant':12} {'ms':>9} {'speed x V':>9} {'mem / V':>8}"]
    base = {(r.scope, r.mode, r.length, r.precision): r for r in rows if r.variant == "V"}
    for r in rows:
        v = base.get((r.scope, r.mode, r.length, r.precision))
        speed = f"{v.median_ms / r.median_ms:9.2f}" if v else f"{'-':>9}"
        mem = (f"{r.peak_bytes / v.peak_bytes:8.2f}" if v and r.peak_bytes and v.peak_bytes else f"{'-':>8}")
        if r.mode == "decode" and v and r.cache_bytes and v.cache_bytes:
            mem = f"{r.cache_bytes / v.cache_bytes:7.2f}c"  # c: cache bytes ratio
        lines.append(f"{r.scope:6} {r.mode:6} {r.length:5d} {r.precision:4} {r.variant:12} {r.median_ms:9.1f} {speed} {mem}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- targets
def _ratio(key: str, invert: bool = False):
    def metric(row: dict, base: dict | None) -> float | None:
        a, b = row.get(key), base.get(key) if base else None
        if not a or not b:
            return None
        return b / a if invert else a / b
    return metric


def _peak_vs_weights(row: dict, base: dict | None) -> float | None:
    if not row.get("peak_bytes"):
        return None
    full = row["batch"] * row["num_heads"] * row["length"] ** 2 * 4  # the (B, H, L, L) fp32 weights alone
    return row["peak_bytes"] / full


# metric name -> f(row, baseline row or None) -> value (None: cannot be computed, the target is skipped)
METRICS = {
    "speed": _ratio("median_ms", invert=True),  # baseline time / variant time
    "time": _ratio("median_ms"),  # variant time / baseline time
    "tokens_per_s": _ratio("tokens_per_s"),  # variant tokens/s / baseline tokens/s
    "cache_bytes": _ratio("cache_bytes"),  # variant cache / baseline cache
    "peak_vs_weights": _peak_vs_weights,  # peak bytes / the materialised (B, H, L, L) fp32 weights
}
BOUNDS = {"at_least": operator.ge, "at_most": operator.le}
TARGET_KEYS = {"name", "variant", "mode", "metric", "vs", "at_least", "at_most", "min_length", "max_length",
               "missing", "precision", "vs_precision"}


def load_targets(path: str | Path = DEFAULT_TARGETS) -> dict:
    """Read and check a targets file; raises ConfigError naming the file and the bad entry."""
    try:
        with open(path) as f:
            spec = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read targets file {path}: {e}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("sections"), list):
        raise ConfigError(f"{path}: expected a mapping with a 'sections' list")
    for section in spec["sections"]:
        for t in section.get("targets", []):
            unknown = set(t) - TARGET_KEYS
            bounds = [b for b in BOUNDS if b in t]
            if unknown or t.get("metric") not in METRICS or len(bounds) != 1 or "name" not in t:
                raise ConfigError(f"{path}: bad target {t}: needs a name, a metric in {sorted(METRICS)} and "
                                  f"one of {sorted(BOUNDS)}; unknown keys {sorted(unknown)}")
    return spec


def _target_line(t: dict, length: int, latest: dict, scope: str) -> str | None:
    """The table line of target `t` at `length`, or None when it is not reported there."""
    if length < t.get("min_length", 0) or length > t.get("max_length", float("inf")):
        return None
    prec = t.get("precision", "fp32")
    base = latest.get((scope, t["mode"], length, t["vs"], t.get("vs_precision", prec))) if "vs" in t else None
    if "vs" in t and base is None:
        return None
    row = latest.get((scope, t["mode"], length, t["variant"], prec))
    value = METRICS[t["metric"]](row, base) if row else None
    if value is None and (row or t.get("missing", "skip") != "n/a"):
        return None
    (bound, limit), = ((b, t[b]) for b in BOUNDS if b in t)
    met = "n/a" if value is None else ("yes" if BOUNDS[bound](value, limit) else "**no**")
    return f"| {t['name']} | {length} | {'n/a' if value is None else f'{value:.2f}x'} | {met} |"


def targets_table(rows: list[dict], targets: dict | None = None) -> str:
    """Markdown table of the targets (default: DEFAULT_TARGETS) with the measured values (rows: JSONL dicts).

    Per section (one scope), per length of that scope's rows (of ``lengths_mode`` if given), in order:
    a section's length is skipped without its ``require`` row; a target without its ``vs`` row or
    with a value that cannot be computed is skipped; a missing variant row prints n/a where the
    target says ``missing: n/a``.
    """
    targets = load_targets() if targets is None else targets
    latest = {(r["scope"], r["mode"], r["length"], r["variant"], r.get("precision", "fp32")): r for r in rows}
    out = ["| target | L | measured | met |", "|---|---|---|---|"]
    for section in targets["sections"]:
        scope, mode = section["scope"], section.get("lengths_mode")
        if section.get("title"):
            out.append(f"| **{section['title']}** | | | |")
        for length in sorted({r["length"] for r in rows if r["scope"] == scope and mode in (None, r["mode"])}):
            need = section.get("require")
            if need and (scope, need["mode"], length, need["variant"], need.get("precision", "fp32")) not in latest:
                continue
            lines = (_target_line(t, length, latest, scope) for t in section.get("targets", []))
            out.extend(line for line in lines if line is not None)
    return "\n".join(out)
