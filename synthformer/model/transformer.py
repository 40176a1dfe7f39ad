"""The models: decoder LM, encoder classifier, masked LM, encoder-decoder; all built from ModelConfig."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from . import io
from .config import ModelConfig
from .generate import Stepper, decode
from .layers import Block


class Embedding(nn.Module):
    """Token embedding plus a learned absolute position table of max_seq_len rows."""

    position_tables = ("pos.weight",)  # the optimizer's "positions" group (synthformer/training/optim.py)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.max_seq_len = cfg.max_seq_len
        self.tok = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=cfg.pad_id)
        self.pos = nn.Embedding(cfg.max_seq_len, cfg.embed_dim)
        self.drop = nn.Dropout(cfg.dropout)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, ids: Tensor, offset: int = 0) -> Tensor:
        """ids (B, L) at positions offset..offset+L-1 -> (B, L, d)."""
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape (batch, length), got {tuple(ids.shape)}")
        end = offset + ids.shape[1]
        if end > self.max_seq_len:
            raise ValueError(f"sequence length {end} exceeds max_seq_len={self.max_seq_len}")
        pos = torch.arange(offset, end, device=ids.device)
        return self.drop(self.tok(ids) + self.pos(pos))


class Stack(nn.Module):
    """Blocks plus a final LayerNorm (pre-norm Transformer)."""

    def __init__(self, cfg: ModelConfig, decoder: bool = False, cross: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(Block(cfg, spec, causal=decoder, cross=cross) for spec in cfg.layer_specs(decoder))
        self.norm = nn.LayerNorm(cfg.embed_dim)

    def forward(self, x, key_padding_mask=None, memory=None, memory_padding_mask=None, caches=None):
        for i, layer in enumerate(self.layers):
            x = layer(x, key_padding_mask, memory, memory_padding_mask, caches[i] if caches else None)
        return self.norm(x)

    def init_cache(self, batch_size: int) -> list[dict]:
        return [layer.init_cache(batch_size) for layer in self.layers]


def reorder_caches(caches: list[dict] | None, index: Tensor) -> None:
    for c in caches or []:
        for part in c.values():
            part.reorder(index)


class SynthformerModel(nn.Module):
    """Common base: config, vocabulary head, save."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.embed = Embedding(cfg)

    def _lm_head(self):
        head = nn.Linear(self.config.embed_dim, self.config.vocab_size, bias=False)
        if self.config.tie_embeddings:
            head.weight = self.embed.tok.weight
        return head

    def save(self, path) -> None:
        """Write ``model.safetensors``, ``config.json`` and ``manifest.json`` into the folder ``path`` (atomically)."""
        io.save(self, path)

    @classmethod
    def load(cls, path, device: str = "cpu") -> "SynthformerModel":
        """The model saved in the folder ``path`` (a run folder means its ``model/``), rebuilt from its
        config and weights alone, integrity-checked, in eval mode (as Hugging Face's from_pretrained)."""
        model = build_model(io.read_config(path))
        if not isinstance(model, cls):
            raise io.CheckpointError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}; "
                                     "use synthformer.model.load")
        io.load_weights(model, path, device=device)
        return model.to(device).eval()


class LanguageModel(SynthformerModel):
    """Decoder-only causal LM: (B, L) ids -> (B, L, vocab) logits."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.decoder = Stack(cfg, decoder=True)
        self.head = self._lm_head()

    def forward(self, tokens: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        return self.head(self.decoder(self.embed(tokens), key_padding_mask))

    def stepper(self, use_cache: bool = True) -> Stepper:
        if not use_cache:
            return Stepper(lambda tokens, n_new: self(tokens)[:, -1], lambda index: None)
        state: dict = {}

        def step(tokens, n_new):
            if "caches" not in state:
                state["caches"] = self.decoder.init_cache(tokens.shape[0])
            offset = tokens.shape[1] - n_new
            x = self.embed(tokens[:, offset:], offset)
            return self.head(self.decoder(x, caches=state["caches"])[:, -1])

        return Stepper(step, lambda index: reorder_caches(state.get("caches"), index))

    @torch.no_grad()
    def generate(self, prompt_ids: Tensor, max_new_tokens: int = 20, use_cache: bool = True, **kwargs) -> Tensor:
        """Continue ``prompt_ids`` (B, Lp); returns (B, Lp + new). Greedy unless ``strategy`` says
        "sample" (temperature, top_k, top_p) or "beam" (num_beams, length_penalty). Stops at EOS or at
        max_seq_len."""
        if prompt_ids.dim() != 2 or not 1 <= prompt_ids.shape[1] <= self.config.max_seq_len:
            raise ValueError(f"prompt_ids must have shape (batch, length) with 1 <= length <= "
                             f"max_seq_len={self.config.max_seq_len}, got {tuple(prompt_ids.shape)}")
        was_training = self.training
        self.eval()
        budget = min(max_new_tokens, self.config.max_seq_len - prompt_ids.shape[1])
        out = decode(self.stepper(use_cache), prompt_ids, budget, self.config.eos_id, self.config.pad_id,
                     vocab_size=self.config.vocab_size, **kwargs)
        self.train(was_training)
        return out


class Classifier(SynthformerModel):
    """Encoder + pooling ("mean" over real tokens or "cls" = the first position, the <bos> the classify task prepends) + linear head -> (B, classes)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.encoder = Stack(cfg)
        self.head = nn.Linear(cfg.embed_dim, cfg.num_classes)

    def forward(self, tokens: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        return self.head(self.pool(self.encoder(self.embed(tokens), key_padding_mask), key_padding_mask))

    def pool(self, h: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """Encoder states (B, L, d) -> one vector per row (B, d), by ``config.pooling``."""
        if self.config.pooling == "cls":
            return h[:, 0]
        if key_padding_mask is None:
            return h.mean(dim=1)
        keep = (~key_padding_mask).unsqueeze(-1).to(h.dtype)  # (B, L, 1)
        return (h * keep).sum(1) / keep.sum(1).clamp(min=1)


class MaskedLM(SynthformerModel):
    """Encoder + vocabulary head for masked-LM pretraining: (B, L) -> (B, L, vocab)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.encoder = Stack(cfg)
        self.head = self._lm_head()

    def forward(self, tokens: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        return self.head(self.encoder(self.embed(tokens), key_padding_mask))


class Seq2Seq(SynthformerModel):
    """Encoder-decoder: synthetic decoder self-attention, cross-attention per ``cross_attention``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.encoder = Stack(cfg)
        self.decoder = Stack(cfg, decoder=True, cross=True)
        self.head = self._lm_head()

    def encode(self, src: Tensor, src_padding_mask: Tensor | None = None) -> Tensor:
        return self.encoder(self.embed(src), src_padding_mask)  # (B, Ls, d)

    def forward(self, src: Tensor, tgt_in: Tensor, src_padding_mask: Tensor | None = None,
                tgt_padding_mask: Tensor | None = None) -> Tensor:
        """src (B, Ls), tgt_in (B, Lt) (BOS + target[:-1]) -> logits (B, Lt, vocab)."""
        memory = self.encode(src, src_padding_mask)
        return self.head(self.decoder(self.embed(tgt_in), tgt_padding_mask, memory, src_padding_mask))

    def stepper(self, memory: Tensor, src_padding_mask: Tensor | None, use_cache: bool = True) -> Stepper:
        state = {"memory": memory, "mask": src_padding_mask}

        def reorder(index):
            state["memory"] = state["memory"].index_select(0, index)
            if state["mask"] is not None:
                state["mask"] = state["mask"].index_select(0, index)
            reorder_caches(state.get("caches"), index)

        def step(tokens, n_new):
            if not use_cache:
                h = self.decoder(self.embed(tokens), None, state["memory"], state["mask"])
                return self.head(h[:, -1])
            if "caches" not in state:
                state["caches"] = self.decoder.init_cache(tokens.shape[0])
            offset = tokens.shape[1] - n_new
            h = self.decoder(self.embed(tokens[:, offset:], offset), None, state["memory"], state["mask"],
                             caches=state["caches"])
            return self.head(h[:, -1])

        return Stepper(step, reorder)

    @torch.no_grad()
    def generate(self, src: Tensor, src_padding_mask: Tensor | None = None, max_new_tokens: int = 64,
                 use_cache: bool = True, **kwargs) -> Tensor:
        """Decode from BOS; returns the generated ids (B, steps) without BOS, padded after EOS."""
        was_training = self.training
        self.eval()
        memory = self.encode(src, src_padding_mask)
        start = torch.full((src.shape[0], 1), self.config.bos_id, dtype=torch.long, device=src.device)
        budget = min(max_new_tokens, self.config.max_seq_len - 1)
        out = decode(self.stepper(memory, src_padding_mask, use_cache), start, budget,
                     self.config.eos_id, self.config.pad_id, vocab_size=self.config.vocab_size, **kwargs)
        self.train(was_training)
        return out[:, 1:]


MODELS: dict[str, type[SynthformerModel]] = {
    "lm": LanguageModel,
    "classifier": Classifier,
    "seq2seq": Seq2Seq,
    "mlm": MaskedLM,
}


def build_model(cfg: ModelConfig) -> SynthformerModel:
    """The model of ``cfg.kind`` built from ``cfg``."""
    return MODELS[cfg.kind](cfg)


def load(path, device: str = "cpu") -> SynthformerModel:
    """Rebuild the model saved in the folder ``path``; see ``SynthformerModel.load``."""
    return SynthformerModel.load(path, device)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
