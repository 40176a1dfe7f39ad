"""Wall time of one grid under each executor (issue 47): `reproduce table7` at a budget (default smoke),
trained from scratch into a fresh folder with --jobs 1, --jobs 2 and --executor ray, one after another in this
run. Prints the CPU, the load average before each, the wall times and the ratios. Run it on an idle machine:

    python benchmarks/executors.py [--budget smoke] [--jobs 2] [--compare-steps 300]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import torch

from synthformer.training.distributed import device_name


def timed(args: list[str], out: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "synthformer", *args, "--out", out],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", default="table7")
    p.add_argument("--budget", default="smoke")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--no-ray", action="store_true")
    p.add_argument("--compare-steps", type=int, default=0,
                   help="instead of reproduce: `compare` of V, Fix, R, FR (one seed each, tiny, chitchat) at this "
                        "many steps, cells long enough for the workers' start-up to matter less")
    opts = p.parse_args()
    base = ["reproduce", opts.name, "--budget", opts.budget]
    what = f"reproduce {opts.name} --budget {opts.budget}"
    if opts.compare_steps:
        base = ["compare", "--variants", "V,Fix,R,FR", "--seeds", "1", "--steps", str(opts.compare_steps),
                "--eval_every", str(opts.compare_steps), "--progress", "false"]
        what = f"compare V,Fix,R,FR x 1 seed, {opts.compare_steps} steps (tiny, chitchat)"
    runs = [("jobs 1", ["--jobs", "1"]), (f"jobs {opts.jobs}", ["--jobs", str(opts.jobs)])]
    if not opts.no_ray:
        runs.append(("ray", ["--executor", "ray"]))
    print(f"CPU: {device_name(torch.device('cpu'))}, {os.cpu_count()} cores; python {platform.python_version()}; "
          f"{what}, every cell trained from scratch")
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in runs:
            load = os.getloadavg()[0]
            times[label] = timed(base + extra, os.path.join(tmp, label.replace(" ", "")))
            print(f"{label:>8}: {times[label]:7.1f} s wall (load average before: {load:.2f})", flush=True)
    one, many = times["jobs 1"], times[f"jobs {opts.jobs}"]
    print(f"speed-up, jobs {opts.jobs} vs jobs 1: {one / many:.2f}x")
    if "ray" in times:
        print(f"ray vs jobs {opts.jobs}: {times['ray'] / many:.2f}x the wall time ({100 * (times['ray'] / many - 1):+.0f}%)")


if __name__ == "__main__":
    main()
