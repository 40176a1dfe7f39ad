"""Optional dependencies: the core install is torch alone (the layer and the models); everything
else comes with an extra of ``pip install 'synthformer[EXTRA]'`` (pyproject.toml lists them).

Modules that the core imports (``synthformer``, ``synthformer.attention``, ``synthformer.model``)
import other packages inside the function that needs them, through ``require``, so that a missing
one is a clear message naming the extra rather than an ImportError at ``import synthformer``.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .errors import SynthformerError

# import name -> (distribution name, the extra that brings it); every extra of pyproject.toml
# that lists the distribution would do, the one named is the smallest.
PROVIDERS: dict[str, tuple[str, str]] = {
    "safetensors": ("safetensors", "train"),
    "tokenizers": ("tokenizers", "train"),
    "yaml": ("PyYAML", "train"),
    "tqdm": ("tqdm", "train"),
    "numpy": ("numpy", "train"),
    "sacrebleu": ("sacrebleu", "train"),
    "rouge_score": ("rouge-score", "train"),
    "chitchat_dataset": ("chitchat-dataset", "train"),
    "pysword": ("pysword", "train"),
    "matplotlib": ("matplotlib", "plots"),
    "transformers": ("transformers", "hf"),
    "accelerate": ("accelerate", "hf"),
    "tensorboard": ("tensorboard", "tensorboard"),  # report_to= trackers: extras outside `all`
    "wandb": ("wandb", "wandb"),
    "ray": ("ray", "ray"),  # --executor ray: grids on a Ray cluster
}


class MissingExtraError(SynthformerError, ImportError):
    """An optional package is not installed: the message names it and the extra that brings it.

    An ImportError (code that catches a missing package still does) and a SynthformerError (the CLI
    prints it as one line, exit status 2; it is never mistaken for a damaged file)."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message)
        self.name = name


def missing_extra(module: str, purpose: str) -> MissingExtraError:
    """The error for the missing package ``module`` (an import name, e.g. "yaml"), needed for ``purpose``."""
    top = module.split(".")[0]
    dist, extra = PROVIDERS.get(top, (top, "all"))
    return MissingExtraError(f"{purpose} needs the '{dist}' package, which the core install of synthformer "
                             f"leaves out: pip install 'synthformer[{extra}]' (or pip install {dist})", name=top)


def require(module: str, purpose: str) -> ModuleType:
    """``importlib.import_module(module)``, or a `MissingExtraError` that says what needs it and how to
    install it, e.g. ``require("safetensors.torch", "saving and loading checkpoints")``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        top = module.split(".")[0]
        if e.name is not None and e.name.split(".")[0] != top:
            raise  # the package is there but one of its own imports failed: a real error
        raise missing_extra(top, purpose) from None
