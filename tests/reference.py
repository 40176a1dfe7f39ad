"""Slow, literal implementations of the paper's equations (Section 3), read off a layer's parameters.

Loops over heads, queries and keys on purpose: these are the yardstick the fast code is held to.
"""
import math

import torch


def member_logits(layer, m, x, offset=0, k_len=None, memory=None):
    """Logits S_h[i, j] of member ``m`` of a SyntheticAttention layer, element by element: (B, H, Lq, Lk)."""
    syn = layer.members[m]
    name = layer.names[m]
    b, lq, d = x.shape
    src = x if memory is None else memory
    lk = k_len if k_len is not None else src.shape[1]
    H, dh = layer.num_heads, layer.head_dim
    s = torch.zeros(b, H, lq, lk, dtype=x.dtype)
    for h in range(H):
        rows = slice(h * dh, (h + 1) * dh)
        for i in range(lq):
            pos = offset + i
            for bi in range(b):
                xi = x[bi, i]
                if name == "vanilla":
                    q = syn.q_proj.weight[rows] @ xi + (syn.q_proj.bias[rows] if syn.q_proj.bias is not None else 0)
                    for j in range(lk):
                        k = syn.k_proj.weight[rows] @ src[bi, j] + (syn.k_proj.bias[rows] if syn.k_proj.bias is not None else 0)
                        s[bi, h, i, j] = q @ k / math.sqrt(dh)
                elif name == "dense":  # B_i = F2_h(relu(F1_h(X_i))), cut to Lk
                    hid = torch.relu(syn.f1.weight[rows] @ xi)
                    row = syn.f2[h] @ hid  # F2_h stored as (N, d_h): (N,)
                    s[bi, h, i] = row[:lk]
                elif name in ("random", "fixed_random"):
                    s[bi, h, i] = syn.r[h, pos, :lk]
                elif name == "factorized_random":
                    for j in range(lk):
                        s[bi, h, i, j] = sum(syn.r1[h, pos, t] * syn.r2[h, j, t] for t in range(syn.r1.shape[-1]))
                elif name == "factorized_dense":  # C_i[j] = A_i[j // b] * B_i[j % b]
                    hid = torch.relu(syn.f1.weight[rows] @ xi)
                    a_vec, b_vec = hid @ syn.fa[h], hid @ syn.fb[h]
                    for j in range(lk):
                        s[bi, h, i, j] = a_vec[j // syn.b] * b_vec[j % syn.b]
                else:
                    raise KeyError(name)
    return s


def attention(layer, x, key_padding_mask=None, memory=None):
    """Full layer output by the paper's equations: softmax(sum_m alpha_m S_m + masks) X Wv, merged, projected."""
    b, lq, d = x.shape
    src = x if memory is None else memory
    lk = src.shape[1]
    H, dh = layer.num_heads, layer.head_dim
    alpha = torch.softmax(layer.mix_logits, -1) if layer.mix_logits is not None else torch.ones(H, 1)
    s = sum(alpha[:, m].view(1, H, 1, 1) * member_logits(layer, m, x, memory=memory)
            for m in range(len(layer.names)))
    out = torch.zeros(b, lq, d)
    weights = torch.zeros(b, H, lq, lk)
    for bi in range(b):
        for h in range(H):
            for i in range(lq):
                visible = [j for j in range(lk)
                           if not (layer.causal and memory is None and j > i)
                           and not (key_padding_mask is not None and key_padding_mask[bi, j])]
                if not visible:
                    continue
                e = torch.exp(s[bi, h, i, visible] - s[bi, h, i, visible].max())
                weights[bi, h, i, visible] = e / e.sum()
    v = src @ layer.v_proj.weight.T + layer.v_proj.bias  # (B, Lk, d)
    for h in range(H):
        cols = slice(h * dh, (h + 1) * dh)
        out[:, :, cols] = weights[:, h] @ v[:, :, cols]
    return out @ layer.out_proj.weight.T + layer.out_proj.bias, weights
