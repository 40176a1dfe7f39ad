"""What the sub-commands share: plain metrics, the device. (A trained run is opened by
synthformer.plan.open_trained.)"""
from __future__ import annotations

from ..overrides import UsageError


def plain(metrics: dict | None) -> dict:
    """The scalar metrics (lists and tables left out) for a one-line JSON summary."""
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}


def device_of(name: str) -> str:
    """A device name checked as a user option."""
    from ..distributed import resolve_device

    try:
        return str(resolve_device(name))
    except ValueError as e:  # a bad or missing device
        raise UsageError(str(e)) from None
