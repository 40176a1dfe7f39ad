"""Distributed data parallel set-up for the training loop: torchrun's environment, devices, collectives."""
from __future__ import annotations

import datetime
import os
import platform
from dataclasses import dataclass

import torch

from ..errors import ConfigError


def device_name(device: torch.device) -> str:
    """e.g. "NVIDIA H100" or "cpu (AMD EPYC 7B13)"."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"cpu ({cpu})"


def hardware(device: torch.device) -> str:
    """Where a run's throughput was measured, e.g. "cpu (Intel(R) Xeon(R) Processor), 1 thread": runs of one
    grid may train on different machines, and their tokens/s only compare on the same one."""
    if device.type != "cpu":
        return device_name(device)
    threads = torch.get_num_threads()
    return f"{device_name(device)}, {threads} thread{'s' if threads > 1 else ''}"


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"device={name!r} is not a torch device; use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device={name!r} asked for, but CUDA is not available here; use device=cpu")
    return device


@dataclass
class Dist:
    """This process's place in a torchrun group (world_size 1 without torchrun)."""

    rank: int = 0  # global rank
    world_size: int = 1  # processes in the group
    local_rank: int = 0  # rank on this machine (picks the GPU)

    @property
    def main(self) -> bool:
        return self.rank == 0


def setup_distributed(device_name: str) -> tuple[Dist, torch.device]:
    """Read torchrun's environment; join the process group (nccl on GPU, gloo on CPU)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dist_info = Dist(int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0")))
    device = resolve_device(device_name)
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", dist_info.local_rank)
            torch.cuda.set_device(device)
        if not torch.distributed.is_initialized():
            backend = "nccl" if device.type == "cuda" else "gloo"
            torch.distributed.init_process_group(backend, timeout=datetime.timedelta(minutes=60))
    return dist_info, device


def barrier(d: Dist) -> None:
    if d.world_size > 1:
        torch.distributed.barrier()


def gather(d: Dist, obj) -> list:
    if d.world_size == 1:
        return [obj]
    out = [None] * d.world_size
    torch.distributed.all_gather_object(out, obj)
    return out
