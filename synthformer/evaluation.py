"""Evaluation of a model on one split of a run's data: the loop every caller shares (train, eval)."""
from __future__ import annotations

from .task_data import TaskData
from .tasks import Task


def evaluate(task: Task, model, data: TaskData, cfg, split: str = "valid",
             max_batches: int | None = None) -> dict:
    """The task's metrics on one split (unshuffled, all of it unless `max_batches`).

    `cfg` (a TrainConfig) gives batch_size, max_tokens, eval_batches (the default limit) and the decoding
    options; the model is put in eval mode and given back in the mode it came in."""
    model = getattr(model, "module", model)
    was_training = model.training
    model.eval()
    batches = task.batches(data.encoded[split], data.tokenizer, data.seq_len, cfg.batch_size,
                           max_tokens=cfg.max_tokens, shuffle=False)
    limit = cfg.eval_batches if max_batches is None else max_batches
    try:
        return task.evaluate(model, batches, data.tokenizer, max_batches=limit, decode=cfg.decode,
                             num_beams=cfg.num_beams, decode_examples=cfg.decode_examples)
    finally:
        model.train(was_training)
