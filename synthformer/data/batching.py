"""Encoding splits into ids and batching them into padded tensors, sharded and resumable.

Masks follow `torch.nn.MultiheadAttention`: bool, **True = padding** (ignore).

Both batchers are deterministic given (seed, epoch), give every rank of a `world_size` group a
disjoint shard with the same number of batches (DDP), and resume exactly: `state_dict()` taken
after k batches, loaded into a fresh batcher built with the same arguments, yields the batches an
uninterrupted run would have yielded next. Iterating runs the rest of the current epoch, then
moves to the next epoch (so ``for batch in batches`` inside ``while True`` trains forever).
"""
from __future__ import annotations

import hashlib
import warnings
from typing import Iterator, Sequence

import torch

from .prepare import DataError
from .tokenizer import Tokenizer

Example = tuple  # (src_ids, tgt_ids) for seq2seq, (ids, label) for classify


# ----------------------------------------------------------------------------- encoding
def _truncate(seqs: list[list[int]], max_len: int | None,
              keep_last: bool = False) -> tuple[list[list[int]], int, int]:
    """Cut sequences to `max_len` (keeping the final token when `keep_last`).

    Returns (sequences, how many were too long, the longest length seen).
    """
    if max_len is None or not seqs:
        return seqs, 0, 0
    if max_len < (2 if keep_last else 1):
        raise DataError(f"max_len must be >= {2 if keep_last else 1}, got {max_len}")
    long = sum(len(s) > max_len for s in seqs)
    longest = max(len(s) for s in seqs)
    if long:
        seqs = [s if len(s) <= max_len else (s[:max_len - 1] + s[-1:] if keep_last else s[:max_len])
                for s in seqs]
    return seqs, long, longest


def _report(counts: list[tuple[str, int, int, int, int | None]], strict: bool) -> None:
    """One warning (or error with `strict`) for a whole encoding call: (what, long, total, longest, max_len)."""
    parts = [f"{long} of {total} {what} longer than max_len={m} (longest {longest})"
             for what, long, total, longest, m in counts if long]
    if not parts:
        return
    msg = "; ".join(parts)
    if strict:
        raise DataError(msg + "; raise max_len or pass strict=False to truncate")
    warnings.warn(msg + "; truncated", stacklevel=3)


def _encode_all(tok: Tokenizer, texts: Sequence) -> list[list[int]]:
    if hasattr(tok, "encode_batch") and texts and all(isinstance(t, str) for t in texts):
        return tok.encode_batch(list(texts))
    return [tok.encode(t) for t in texts]


def encode_lm(texts: Sequence[str], tok: Tokenizer, *, max_len: int | None = None,
              strict: bool = False) -> torch.Tensor:
    """One 1-D LongTensor: each document's ids followed by <eos> (documents cut to `max_len`
    tokens including the <eos> first)."""
    docs = [ids + [tok.eos_id] for ids in _encode_all(tok, texts)]
    docs, long, longest = _truncate(docs, max_len, keep_last=True)
    _report([("documents", long, len(docs), longest, max_len)], strict)
    flat = [i for d in docs for i in d]
    return torch.tensor(flat, dtype=torch.long)  # (N,)


def encode_pairs(pairs: Sequence[tuple[str, str]], tok: Tokenizer, *, max_len: int | None = None,
                 max_tgt_len: int | None = None, strict: bool = False) -> list[tuple[list[int], list[int]]]:
    """seq2seq items: src = ids + <eos>; tgt = <bos> + ids + <eos> (teacher forcing reads
    tgt[:-1], predicts tgt[1:]). `max_len` caps src (and tgt unless `max_tgt_len` is given),
    counting the special tokens; truncation keeps the final <eos>."""
    src = [s + [tok.eos_id] for s in _encode_all(tok, [p[0] for p in pairs])]
    tgt = [[tok.bos_id] + t + [tok.eos_id] for t in _encode_all(tok, [p[1] for p in pairs])]
    tgt_max = max_tgt_len if max_tgt_len is not None else max_len
    src, src_long, src_longest = _truncate(src, max_len, keep_last=True)
    tgt, tgt_long, tgt_longest = _truncate(tgt, tgt_max, keep_last=True)
    _report([("sources", src_long, len(src), src_longest, max_len),
             ("targets", tgt_long, len(tgt), tgt_longest, tgt_max)], strict)
    return list(zip(src, tgt))


def encode_labelled(items: Sequence[tuple], tok: Tokenizer, *, max_len: int | None = None,
                    strict: bool = False, add_bos: bool = False) -> list[tuple[list[int], int]]:
    """classify items: (ids, label); with `add_bos` a leading <bos> (a CLS slot). Inputs may be
    str, lists of ints for the byte tokenizer (pixels), or sentence pairs ``(a, b)`` (tuples; then
    every input must be one), encoded ``[<bos>] a <sep> b`` by `encode_sentence_pairs`."""
    if items and any(isinstance(x, tuple) for x, _ in items):
        return encode_sentence_pairs(items, tok, max_len=max_len, strict=strict, add_bos=add_bos)
    ids = _encode_all(tok, [x for x, _ in items])
    if add_bos:
        ids = [[tok.bos_id] + s for s in ids]
    ids, long, longest = _truncate(ids, max_len)
    _report([("inputs", long, len(ids), longest, max_len)], strict)
    return [(s, int(lbl)) for s, (_, lbl) in zip(ids, items)]


def fit_pair(a: list[int], b: list[int], room: int) -> tuple[list[int], list[int]]:
    """Cut the pair to at most `room` tokens together, the longer side first (Hugging Face's
    "longest_first"): the shorter side stays whole while it fits in half; at equal length the first
    side keeps the odd token. Cuts the ends (the start of a sentence says more)."""
    if len(a) + len(b) <= room:
        return a, b
    short = min(len(a), len(b))
    if 2 * short >= room:  # both are cut to about half
        keep_a, keep_b = room - room // 2, room // 2
    elif len(a) <= len(b):
        keep_a, keep_b = len(a), room - len(a)
    else:
        keep_a, keep_b = room - len(b), len(b)
    return a[:keep_a], b[:keep_b]


def encode_sentence_pairs(items: Sequence[tuple], tok: Tokenizer, *, max_len: int | None = None,
                          strict: bool = False, add_bos: bool = False) -> list[tuple[list[int], int]]:
    """classify items whose input is a sentence pair ``((a, b), label)``: ids ``[<bos>] a <sep> b``
    (BERT's ``[CLS] a [SEP] b``), cut to `max_len` (specials included) by shortening the longer
    sentence first (`fit_pair`). The tokenizer needs a ``<sep>`` (every tokenizer made since it
    exists; a tokenizer.json saved before lacks it and is refused)."""
    if tok.sep_id is None:
        raise DataError("sentence pairs need a <sep> token, but this tokenizer was saved before "
                        "synthformer had one; train a new tokenizer (a new run) for sentence-pair data")
    bad = next((i for i, (x, _) in enumerate(items)
                if not (isinstance(x, tuple) and len(x) == 2 and all(isinstance(t, str) for t in x))), None)
    if bad is not None:
        raise DataError(f"classify example {bad} is not a sentence pair (a tuple of two strings) like the "
                        f"others: {str(items[bad][0])[:80]}")
    firsts = _encode_all(tok, [x[0] for x, _ in items])
    seconds = _encode_all(tok, [x[1] for x, _ in items])
    lead = [tok.bos_id] if add_bos else []
    fixed = len(lead) + 1  # the CLS slot and the <sep>
    if max_len is not None and max_len < fixed + 2:
        raise DataError(f"max_len={max_len} leaves no room for a sentence pair: it needs at least "
                         f"{fixed + 2} tokens (one per sentence, <sep>{' and the CLS slot' if add_bos else ''})")
    out, long, longest = [], 0, 0
    for a, b, (_, label) in zip(firsts, seconds, items):
        total = fixed + len(a) + len(b)
        longest = max(longest, total)
        if max_len is not None and total > max_len:
            long += 1
            a, b = fit_pair(a, b, max_len - fixed)
        out.append((lead + a + [tok.sep_id] + b, int(label)))
    _report([("sentence pairs", long, len(items), longest, max_len)], strict)
    return out


# ----------------------------------------------------------------------------- shared state
def _epoch_generator(seed: int, epoch: int) -> torch.Generator:
    digest = hashlib.sha256(f"{seed}:{epoch}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))


class _Resumable:
    """epoch/position bookkeeping shared by both batchers."""

    seed: int
    world_size: int
    rank: int

    def __init__(self):
        self.epoch = 0  # current epoch
        self.position = 0  # batches of the current epoch already yielded to this rank

    def set_epoch(self, epoch: int) -> None:
        """Start epoch `epoch` from its first batch."""
        self.epoch, self.position = int(epoch), 0

    def _identity(self) -> dict:
        return {"seed": self.seed, "world_size": self.world_size}

    def state_dict(self) -> dict:
        """{"epoch", "position"} plus the arguments that must match on resume.

        Every rank has the same epoch and position (equal batch counts), so the state rank 0
        saves can be loaded by all ranks; the rank itself is not part of it.
        """
        return {"epoch": self.epoch, "position": self.position, **self._identity()}

    def load_state_dict(self, state: dict) -> None:
        """Continue exactly after the last batch counted in `state`."""
        mine = self._identity()
        bad = {k: (state[k], v) for k, v in mine.items() if k in state and state[k] != v}
        if bad:
            raise DataError(f"cannot resume {type(self).__name__}: saved vs current {bad}; "
                            "exact resume needs the same arguments")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])

    def _batches(self) -> list:
        raise NotImplementedError

    def _collate(self, batch) -> dict:
        raise NotImplementedError

    def __iter__(self) -> Iterator[dict]:
        batches = self._batches()
        while self.position < len(batches):
            batch = batches[self.position]
            self.position += 1  # counted before yielding: a checkpoint taken now skips this batch
            yield self._collate(batch)
        self.epoch, self.position = self.epoch + 1, 0


def _check_shard(rank: int, world_size: int) -> None:
    if world_size < 1 or not 0 <= rank < world_size:
        raise DataError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")


# ----------------------------------------------------------------------------- LM
class LMBatches(_Resumable):
    """Blocks of ``seq_len + 1`` consecutive tokens (block i starts at token i * seq_len), batched.

    Yields ``{"tokens": LongTensor (B, seq_len + 1)}``: inputs ``tokens[:, :-1]``, targets
    ``tokens[:, 1:]``. Each epoch shuffles the blocks with (seed, epoch), trims them to a multiple
    of `world_size`, and gives rank r every world_size-th block from r on.
    """

    def __init__(self, token_ids: torch.Tensor, seq_len: int, batch_size: int, *, shuffle: bool = True,
                 seed: int = 0, rank: int = 0, world_size: int = 1, drop_last: bool = True):
        super().__init__()
        if token_ids.dim() != 1:
            raise DataError(f"LMBatches needs 1-D token ids, got shape {tuple(token_ids.shape)}")
        if seq_len < 1 or batch_size < 1:
            raise DataError(f"need seq_len >= 1 and batch_size >= 1, got {seq_len}, {batch_size}")
        _check_shard(rank, world_size)
        self.tokens = token_ids.long()
        self.seq_len, self.batch_size, self.shuffle, self.drop_last = seq_len, batch_size, shuffle, drop_last
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.num_blocks = max(0, (len(self.tokens) - 1) // seq_len)
        self.blocks_per_rank = self.num_blocks // world_size
        if len(self) == 0:
            raise DataError(f"{len(self.tokens)} tokens give {self.num_blocks} blocks of "
                             f"seq_len+1={seq_len + 1}: too few for batch_size={batch_size} x "
                             f"world_size={world_size}; use more data or smaller sizes")

    def __len__(self) -> int:
        n, b = self.blocks_per_rank, self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def _batches(self) -> list[torch.Tensor]:
        if self.shuffle:
            order = torch.randperm(self.num_blocks, generator=_epoch_generator(self.seed, self.epoch))
        else:
            order = torch.arange(self.num_blocks)
        mine = order[: self.blocks_per_rank * self.world_size][self.rank::self.world_size]
        return [mine[i:i + self.batch_size] for i in range(0, len(self) * self.batch_size, self.batch_size)]

    def _collate(self, block_ids: torch.Tensor) -> dict:
        starts = block_ids * self.seq_len  # (B,)
        idx = starts[:, None] + torch.arange(self.seq_len + 1)  # (B, L+1)
        return {"tokens": self.tokens[idx]}

    def _identity(self) -> dict:
        return {**super()._identity(), "num_tokens": len(self.tokens), "seq_len": self.seq_len,
                "batch_size": self.batch_size}


# ----------------------------------------------------------------------------- seq2seq / classify
def pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest: ids (B, L) and padding mask (B, L), True = padding."""
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)  # (B, L)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    lens = torch.tensor([len(s) for s in seqs])
    mask = torch.arange(length)[None, :] >= lens[:, None]  # (B, L)
    return ids, mask


class SequenceBatches(_Resumable):
    """Padded batches of seq2seq items ``(src_ids, tgt_ids)`` or classify items ``(ids, label)``.

    Yields ``{"src", "src_padding_mask", "tgt", "tgt_padding_mask"}`` (seq2seq) or
    ``{"tokens", "padding_mask", "labels"}`` (classify); ids (B, L) long, masks (B, L) bool with
    True = padding, labels (B,) long. A batch holds at most `batch_size` items and, with
    `max_tokens`, at most that many padded tokens (items x longest side). With `bucket`, each
    epoch sorts the (seeded) shuffled items by length so batches hold similar lengths, then
    shuffles the batch order; without it batches follow the shuffled order. The epoch's batch
    list is trimmed to a multiple of `world_size` and rank r takes every world_size-th batch.
    """

    def __init__(self, examples: Sequence[Example], pad_id: int, *, batch_size: int | None = None,
                 max_tokens: int | None = None, bucket: bool = True, shuffle: bool = True,
                 seed: int = 0, rank: int = 0, world_size: int = 1):
        super().__init__()
        if batch_size is None and max_tokens is None:
            raise DataError("SequenceBatches needs batch_size or max_tokens")
        if (batch_size is not None and batch_size < 1) or (max_tokens is not None and max_tokens < 1):
            raise DataError(f"batch_size and max_tokens must be >= 1, got {batch_size}, {max_tokens}")
        _check_shard(rank, world_size)
        if not examples:
            raise DataError("SequenceBatches got no examples")
        self.kind = "classify" if isinstance(examples[0][1], int) else "seq2seq"
        for i, ex in enumerate(examples):
            if len(ex) != 2 or isinstance(ex[1], int) != (self.kind == "classify"):
                raise DataError(f"example {i} is not a {self.kind} item like example 0: {str(ex)[:80]}")
            seqs = ex if self.kind == "seq2seq" else ex[:1]
            if any(len(s) == 0 for s in seqs):
                raise DataError(f"example {i} has an empty sequence (an all-padding row); drop it")
        self.examples = list(examples)
        self.lengths = [max(len(e[0]), len(e[1])) if self.kind == "seq2seq" else len(e[0])
                        for e in self.examples]
        if max_tokens is not None and max(self.lengths) > max_tokens:
            i = max(range(len(self.lengths)), key=self.lengths.__getitem__)
            raise DataError(f"example {i} has {self.lengths[i]} tokens > max_tokens={max_tokens}; "
                             "raise max_tokens or truncate with max_len when encoding")
        self.pad_id, self.batch_size, self.max_tokens = pad_id, batch_size, max_tokens
        self.bucket, self.shuffle = bucket, shuffle
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self._cache: tuple[int, list] | None = None
        n = len(self._batches())
        if n == 0:
            raise DataError(f"{len(self.examples)} examples make fewer batches than world_size={world_size}")

    def _epoch_batches(self) -> list[list[int]]:
        g = _epoch_generator(self.seed, self.epoch)
        order = torch.randperm(len(self.examples), generator=g).tolist() if self.shuffle \
            else list(range(len(self.examples)))
        if self.bucket:
            order.sort(key=self.lengths.__getitem__)  # stable: ties keep the shuffled order
        batches, cur, longest = [], [], 0
        for i in order:
            new_longest = max(longest, self.lengths[i])
            full = (self.batch_size is not None and len(cur) >= self.batch_size) or \
                   (self.max_tokens is not None and new_longest * (len(cur) + 1) > self.max_tokens)
            if cur and full:
                batches.append(cur)
                cur, new_longest = [], self.lengths[i]
            cur.append(i)
            longest = new_longest
        if cur:
            batches.append(cur)
        if self.bucket and self.shuffle:
            perm = torch.randperm(len(batches), generator=g).tolist()
            batches = [batches[p] for p in perm]
        usable = len(batches) - len(batches) % self.world_size
        return batches[:usable][self.rank::self.world_size]

    def _batches(self) -> list[list[int]]:
        if self._cache is None or self._cache[0] != self.epoch:
            self._cache = (self.epoch, self._epoch_batches())
        return self._cache[1]

    def __len__(self) -> int:
        """Batches of the current epoch for this rank (with max_tokens it may vary by epoch)."""
        return len(self._batches())

    def _collate(self, idx: list[int]) -> dict:
        items = [self.examples[i] for i in idx]
        if self.kind == "classify":
            tokens, mask = pad([x for x, _ in items], self.pad_id)
            return {"tokens": tokens, "padding_mask": mask,
                    "labels": torch.tensor([y for _, y in items], dtype=torch.long)}
        src, src_mask = pad([s for s, _ in items], self.pad_id)
        tgt, tgt_mask = pad([t for _, t in items], self.pad_id)
        return {"src": src, "src_padding_mask": src_mask, "tgt": tgt, "tgt_padding_mask": tgt_mask}

    def _identity(self) -> dict:
        return {**super()._identity(), "num_examples": len(self.examples)}
