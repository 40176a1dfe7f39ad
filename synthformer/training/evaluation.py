"""Evaluation of a model on one split of a run's data: the loop every caller shares (train, eval)."""
from __future__ import annotations


from .task_data import TaskData
from ..tasks import Task

DECODE_SEED = 0  # the decoded sample is the same for every run, variant and seed of a split


def decode_sample(n: int, k: int, seed: int = DECODE_SEED) -> list[int]:
    """Sorted indices of the items a seq2seq evaluation decodes out of `n`: none when `k` is 0, all
    when `k` >= n, else `k` drawn uniformly without replacement with a generator seeded by `seed`.
    It depends on (n, k, seed) only, never on how batches are ordered or cut."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    if k <= 0:
        return []
    if k >= n:
        return list(range(n))
    return sorted(np.random.default_rng(seed).choice(n, size=k, replace=False).tolist())


def evaluate(task: Task, model, data: TaskData, cfg, split: str = "valid",
             max_batches: int | None = None, decode_examples: int | None = None) -> dict:
    """The task's metrics on one split (unshuffled, all of it unless `max_batches`).

    `cfg` (a TrainConfig) gives batch_size, max_tokens, eval_batches (the default limit) and the decoding
    options; the model is put in eval mode and given back in the mode it came in. A task that decodes
    (seq2seq) decodes `decode_sample(len(split), cfg.decode_examples)` of the split's items, whatever
    `max_batches` (`decode_examples` instead when given); its metrics say how many ("decoded") out of
    how many ("decoded_of")."""
    model = getattr(model, "module", model)
    was_training = model.training
    model.eval()
    items = data.encoded[split]
    batches = task.batches(items, data.tokenizer, data.seq_len, cfg.batch_size,
                           max_tokens=cfg.max_tokens, shuffle=False)
    limit = cfg.eval_batches if max_batches is None else max_batches
    options = {"decode": cfg.decode, "num_beams": cfg.num_beams}
    k = cfg.decode_examples if decode_examples is None else decode_examples
    chosen = decode_sample(len(items), k) if task.decodes else []
    if chosen:
        options["decode_batches"] = task.batches([items[i] for i in chosen], data.tokenizer, data.seq_len,
                                                 cfg.batch_size, max_tokens=cfg.max_tokens, shuffle=False)
        options["decode_of"] = len(items)
    try:
        return task.evaluate(model, batches, data.tokenizer, max_batches=limit, **options)
    finally:
        model.train(was_training)
