"""synthformer's incremental-decoding caches behind Hugging Face's ``Cache`` interface.

Each model layer owns a :class:`SynthformerCacheLayer` holding the block's own cache dict
(``{"self": AttentionCache | ConvCache, "cross": AttentionCache}``, as ``Block.init_cache`` makes
it). The synthformer layers read and advance that state themselves, so ``update`` (the key/value
protocol of dot-product models) is not used; what ``generate`` needs is ``get_seq_length`` (the
position offset), ``reorder_cache`` (beam search) and the batch selection helpers.
"""
from __future__ import annotations

import torch
from transformers.cache_utils import Cache, CacheLayerMixin


def _tensor_of(part) -> torch.Tensor:
    """The batch-first tensor of an AttentionCache (values) or a ConvCache (buffer)."""
    return part.values if hasattr(part, "values") else part.buffer


class SynthformerCacheLayer(CacheLayerMixin):
    """One block's synthformer cache; created on the first forward, when the batch size is known."""

    is_compileable = False
    is_croppable = False
    supports_early_init = False

    def __init__(self, max_seq_len: int):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.state: dict | None = None  # {"self": ..., "cross": ...} of Block.init_cache

    def lazy_initialization(self, key_states, value_states) -> None:  # state comes from Block.init_cache
        pass

    def update(self, key_states, value_states, *args, **kwargs):
        raise NotImplementedError("synthformer layers advance their own caches; Cache.update is not used")

    def get_seq_length(self) -> int:
        return 0 if self.state is None else self.state["self"].pos

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.get_seq_length() + query_length, 0

    def get_max_length(self) -> int:
        return self.max_seq_len

    def reset(self) -> None:
        self.state = None
        self.is_initialized = False

    def _select(self, index: torch.Tensor) -> None:
        for part in (self.state or {}).values():
            part.reorder(index.to(_tensor_of(part).device))

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._select(beam_idx)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._select(indices)

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.state is not None:
            first = _tensor_of(self.state["self"])
            self._select(torch.arange(first.shape[0], device=first.device).repeat_interleave(repeats))

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove:
            raise NotImplementedError("synthformer caches cannot be cropped")

    def offload(self):  # the state stays where the model is
        pass

    def prefetch(self):
        pass


class SynthformerCache(Cache):
    """A ``transformers`` Cache of one :class:`SynthformerCacheLayer` per decoder block."""

    def __init__(self, num_layers: int, max_seq_len: int):
        super().__init__(layers=[SynthformerCacheLayer(max_seq_len) for _ in range(num_layers)])

    @property
    def states(self) -> list[dict] | None:
        """The per-block synthformer cache dicts, or None before the first forward."""
        if any(layer.state is None for layer in self.layers):
            return None
        return [layer.state for layer in self.layers]

    def ensure(self, stack, batch_size: int) -> list[dict]:
        """The per-block caches, made by ``stack.init_cache(batch_size)`` on first use."""
        states = self.states
        if states is None:
            states = stack.init_cache(batch_size)
            for layer, state in zip(self.layers, states):
                layer.state, layer.is_initialized = state, True
        return states

    @property
    def batch_size(self) -> int:
        states = self.states
        if states is None:
            return -1
        return _tensor_of(states[0]["self"]).shape[0]
