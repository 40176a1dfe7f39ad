"""How the benchmark measures: round-robin timing of cases, and peak memory of one extra step.

Timing: warm-up steps, then ``repeats`` timed steps; the cases of a group are interleaved round by
round so load from other processes hits all of them alike, and the median is reported.
Peak memory: on CUDA ``torch.cuda.max_memory_allocated`` minus the memory in use before the step; on
CPU the growth of the process's peak resident set during one extra step (Linux
``/proc/self/clear_refs`` + ``VmHWM``), with glibc's mmap threshold lowered to 64 KiB so that every
tensor above it maps fresh pages and freed ones leave the resident set.
"""
from __future__ import annotations

import ctypes
import statistics
import time

import torch

from .cases import Case


BF16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo flags of CPU units that multiply bf16 natively


def cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(line.split(":", 1)[1].split() for line in f if line.startswith("flags")))
    except (OSError, StopIteration):
        return set()


def bf16_units(device: torch.device) -> str:
    """Which bf16 matmul units the device has, in words (CPU: from the flags; CUDA: compute capability)."""
    if device.type == "cuda":
        return "bf16 tensor cores" if torch.cuda.is_bf16_supported() else "no bf16 tensor cores"
    have = [f for f in BF16_FLAGS if f in cpu_flags()]
    return ", ".join(have) if have else "none (no amx_bf16 / avx512_bf16: bf16 matmul is emulated, choose fp32)"


def matmul_gflops(device: torch.device, dtype: torch.dtype, budget_s: float = 0.3) -> float:
    """Measured square-matmul GFLOP/s at the current thread count: the size doubles from 128 up to 2048
    while one product takes less than `budget_s`; the best of three products at the last size."""
    n, best = 128, 0.0
    while True:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        a @ b
        times = []
        for _ in range(3):
            _sync(device)
            t0 = time.perf_counter()
            a @ b
            _sync(device)
            times.append(time.perf_counter() - t0)
        best = 2 * n ** 3 / min(times) / 1e9
        if n >= 2048 or min(times) * 8 > budget_s:
            return round(best, 1)
        n *= 2


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class PeakMeter:
    """Peak memory of one call: CUDA allocator stats, or the resident-set high-water mark on Linux CPU."""

    def __init__(self, device: torch.device):
        self.device = device
        self.method = None  # what `measure` reports (the rows' peak_method); None: unavailable
        if device.type == "cuda":
            self.method = "cuda max_memory_allocated"
        else:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
                self.method = "cpu peak RSS growth (VmHWM), mmap threshold 64KiB"
            except OSError:
                self.method = None

    @staticmethod
    def lower_mmap_threshold() -> None:
        try:  # M_MMAP_THRESHOLD = -3: big blocks get their own pages, freed ones leave RSS at once
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt(-3, 64 * 1024)
            libc.malloc_trim(0)  # hand back heap pages freed by earlier steps, so reuse cannot hide growth
        except (OSError, AttributeError):
            pass

    @staticmethod
    def _status(key: str) -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        raise KeyError(key)

    def measure(self, fn) -> int | None:
        """Run `fn` once; the bytes it allocated at its peak (None where unavailable)."""
        if self.method is None:
            fn()
            return None
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            fn()
            torch.cuda.synchronize(self.device)
            return int(torch.cuda.max_memory_allocated(self.device) - base)
        self.lower_mmap_threshold()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        base = self._status("VmRSS:")
        fn()
        return max(0, self._status("VmHWM:") - base)


def time_cases(cases: list[Case], repeats: int, warmup: int, device, log=print) -> dict[int, list[float]]:
    """Warm up every case, then time them round-robin; id(case) -> seconds of each timed step."""
    times = {id(c): [] for c in cases}
    for c in cases:
        for _ in range(warmup):
            c.step()
    _sync(device)
    for r in range(repeats):
        for c in cases:
            _sync(device)
            t0 = time.perf_counter()
            c.step()
            _sync(device)
            times[id(c)].append(time.perf_counter() - t0)
        log(f"  round {r + 1}/{repeats} done")
    return times


def run_cases(cases: list[Case], repeats: int, warmup: int, device, measure_memory: bool = True,
              log=print) -> list[dict]:
    """Time all cases round-robin, then measure peak memory case by case; one result dict per case."""
    times = time_cases(cases, repeats, warmup, device, log)
    meter = PeakMeter(device)
    if measure_memory and device.type == "cpu":
        meter.lower_mmap_threshold()
    rows = []
    for c in cases:
        peak = meter.measure(c.step) if measure_memory else None
        rows.append(dict(case=c, median_s=statistics.median(times[id(c)]), times=times[id(c)], peak=peak,
                         method=meter.method if measure_memory else None))
    return rows
