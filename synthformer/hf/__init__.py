"""Hugging Face ``transformers`` integration (``pip install 'synthformer[hf]'``; the core does not need it).

``synthformer export hf --run RUN --out DIR`` writes a folder that the stock Auto classes load in
any process, synthformer installed or not, with ``trust_remote_code=True`` (the folder holds the
modeling code)::

    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline
    model = AutoModelForSequenceClassification.from_pretrained("exported/", trust_remote_code=True)
    tok = AutoTokenizer.from_pretrained("exported/")
    pipeline("text-classification", model=model, tokenizer=tok)("some text")  # {"label": "people", ...}

``import synthformer.hf`` registers the ``synthformer`` model type with the Auto classes, so the same
folder loads without ``trust_remote_code`` (``AutoModel`` gives the hidden states).

``to_hf(model)`` / ``from_hf(hf_model)`` convert in memory; ``export_hf(run_dir, out_dir)`` writes the
folder (weights, config, generation config, tokenizer, code) from a synthformer run or checkpoint folder.
"""
from __future__ import annotations

from .cli import add_parser, run  # argparse only: the CLI can list the sub-command without transformers

try:
    import transformers  # noqa: F401
except ImportError:  # the core install has no transformers: fail on use, with the fix
    from .._optional import missing_extra

    _MISSING = missing_extra("transformers", "synthformer.hf")

    def __getattr__(name):
        raise _MISSING
else:
    from ._api import *  # noqa: F401,F403  (registers "synthformer" with the Auto classes)
    from ._api import __all__ as _api_all

    __all__ = ["add_parser", "run", *_api_all]
