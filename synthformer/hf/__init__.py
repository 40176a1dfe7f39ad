"""Hugging Face ``transformers`` integration (needs ``pip install transformers``; the core does not).

``import synthformer.hf`` registers the ``synthformer`` model type with the Auto classes::

    import synthformer.hf
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained("exported/")      # no trust_remote_code needed
    tok = AutoTokenizer.from_pretrained("exported/")
    out = model.generate(**tok("hello", return_tensors="pt"), max_new_tokens=20)

``to_hf(model)`` / ``from_hf(hf_model)`` convert in memory; ``export_hf(run_dir, out_dir)`` writes a
folder (weights, config, generation config, tokenizer) from a synthformer run or checkpoint folder.
"""
from __future__ import annotations

from .cli import add_parser, run  # argparse only: the CLI can list the sub-command without transformers

try:
    import transformers  # noqa: F401
except ImportError:  # the core install has no transformers: fail on use, with the fix
    _MISSING = ImportError("synthformer.hf needs the Hugging Face transformers package: "
                           "pip install 'transformers==5.23.0'")

    def __getattr__(name):
        raise _MISSING
else:
    from ._api import *  # noqa: F401,F403  (registers "synthformer" with the Auto classes)
    from ._api import __all__ as _api_all

    __all__ = ["add_parser", "run", *_api_all]
