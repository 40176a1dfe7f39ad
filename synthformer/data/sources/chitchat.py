"""Chit Chat Challenge conversations (PyPI `chitchat-dataset`, MIT): lm documents and
(turn, next turn) seq2seq pairs."""
from __future__ import annotations

import functools
import json
from pathlib import Path

from ..prepare import DataError
from .base import Source, capped, module_installed, no_options, split_by_hash

TURN_SEPARATOR = "\n"  # between turns of a conversation (lm documents)
MESSAGE_SEPARATOR = " "  # between consecutive messages of one speaker's turn


@functools.lru_cache(maxsize=1)
def conversations() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every conversation as (id, turns), a turn being one speaker's consecutive messages."""
    import chitchat_dataset

    path = Path(chitchat_dataset.__file__).parent / "dataset.json"
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    out = []
    for conv_id, conv in raw.items():
        turns = tuple(MESSAGE_SEPARATOR.join(m["text"].strip() for m in turn if m["text"].strip())
                      for turn in conv["messages"])
        turns = tuple(t for t in turns if t)
        if turns:
            out.append((conv_id, turns))
    return tuple(out)


def load(task: str, max_examples, seed, context_turns: int = 1, **options) -> tuple[tuple, dict]:
    """Chit Chat Challenge conversations (PyPI `chitchat-dataset`, MIT).

    A conversation is a list of turns (consecutive messages of one speaker, joined by a space).
    lm: one document per conversation, turns joined by a newline. seq2seq: (context, response)
    pairs within each conversation: the response is turn i+1, the context turn i, or with
    ``context_turns=N`` up to N turns ending at turn i joined by a newline (dialogue history). Verbatim duplicate conversations are kept once (6,233 remain);
    split 90/5/5 by hash of the conversation text, so no conversation is in two splits.
    """
    no_options("chitchat", options)
    if not isinstance(context_turns, int) or context_turns < 1:
        raise DataError(f"chitchat context_turns must be a positive integer, got {context_turns!r}")
    convs, seen = [], set()
    for cid, turns in conversations():
        if turns not in seen:  # 935 of the 7,168 conversations are verbatim copies of another
            seen.add(turns)
            convs.append((cid, turns))
    splits = split_by_hash(convs, [TURN_SEPARATOR.join(t) for _, t in convs])
    if task == "lm":
        out = tuple([TURN_SEPARATOR.join(turns) for _, turns in s] for s in splits)
    else:
        out = tuple([(TURN_SEPARATOR.join(turns[max(0, i - context_turns):i]), turns[i])
                     for _, turns in s for i in range(1, len(turns))] for s in splits)
    return capped(out, max_examples, seed), {"split": "90/5/5 by SHA-1 of conversation text, duplicates dropped",
                                            "turn_separator": TURN_SEPARATOR, "context_turns": context_turns}


CHITCHAT = Source(load, ("lm", "seq2seq"),
                  "Chit Chat Challenge: 7,168 English conversations (PyPI chitchat-dataset, MIT)",
                  (), module_installed("chitchat_dataset"), "pip install chitchat-dataset")
