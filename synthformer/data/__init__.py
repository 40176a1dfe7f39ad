"""Data for synthformer: real sources, the user's files, tokenizers and resumable batching.

    from synthformer.data import load_source, build_tokenizer, encode_lm, LMBatches
    splits = load_source("chitchat", "lm", max_examples=500)
    tok = build_tokenizer("bpe", splits.train, vocab_size=2000)
    batches = LMBatches(encode_lm(splits.train, tok), seq_len=128, batch_size=16)

Sources (`list_sources()`): chitchat (default; PyPI), bible-en-es, bible-kjv, bible-web, fortunes,
fashion-mnist, manpages-summ, manpages-section, bible-paraphrase (Debian packages: fetch once with `python -m synthformer.data prepare NAME`) and
listops (generated). See `sources` (one module per corpus behind one registry), `files`,
`tokenizer` and `batching` for the details.
"""
from .batching import LMBatches, SequenceBatches, encode_labelled, encode_lm, encode_pairs, pad
from .files import SUPPORTED as SUPPORTED_FILE_TYPES
from .prepare import DataError, DataFileNotFoundError, SourceNotInstalledError, cache_dir
from .sources.listops import ListOpsConfig, generate_listops
from .sources import DEFAULT_SOURCE, SOURCES, TASKS, DataSplits, SourceInfo, list_sources, load_source, prepare_source
from .tokenizer import SPECIALS, BPETokenizer, ByteTokenizer, CharTokenizer, Tokenizer, build_tokenizer, load_tokenizer

__all__ = [
    "BPETokenizer", "ByteTokenizer", "CharTokenizer", "DEFAULT_SOURCE", "DataError",
    "DataFileNotFoundError", "DataSplits", "LMBatches", "ListOpsConfig", "SOURCES", "SPECIALS",
    "SUPPORTED_FILE_TYPES", "SequenceBatches", "SourceInfo", "SourceNotInstalledError", "TASKS",
    "Tokenizer", "build_tokenizer", "cache_dir", "encode_labelled", "encode_lm", "encode_pairs",
    "generate_listops", "list_sources", "load_source", "load_tokenizer", "pad", "prepare_source",
]
