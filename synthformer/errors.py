"""The project's error base class: everything a user can get wrong raises a subclass of it.

The CLI prints exactly these as one line (exit status 2); any other exception is a bug in
synthformer and keeps its traceback. ``SynthformerError`` subclasses ``ValueError`` so code that
caught ``ValueError`` before keeps working.
"""
from __future__ import annotations


class SynthformerError(ValueError):
    """Base of every user-facing error (bad option, data, run folder, checkpoint)."""


class ConfigError(SynthformerError):
    """A config field (or a combination of fields) is invalid; the message names the field and the fix."""


class InputError(SynthformerError):
    """Bad arguments or tensors given to a layer, model or decoding call (shape, dtype, length, option)."""
