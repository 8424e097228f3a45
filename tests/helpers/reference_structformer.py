"""A plain B x L x L x L implementation of StructFormer's p_D (Eqs. 6-12), written the way the authors' code does
it, as the reference for the memory-lean version and for the benchmark."""

import torch


def naive_dependency_distribution(distances, heights, mask, split_scale, head_scale):
    batch, length = heights.shape
    split_mask = torch.nn.functional.pad(mask[:, 1:], (0, 1), value=False) & mask
    gamma = torch.sigmoid((heights[:, :, None] - distances[:, None, :]) * split_scale)
    gamma = gamma.masked_fill(~split_mask[:, None, :], 0.0)
    index = torch.arange(length)
    # inside[b, i, x] = p(word x belongs to C(i)) = min of gamma over the splits between i and x.
    inside = torch.ones(batch, length, length, dtype=gamma.dtype)
    for i in range(length):
        for x in range(length):
            if x < i:
                inside[:, i, x] = gamma[:, i, x:i].min(dim=-1).values
            elif x > i:
                inside[:, i, x] = gamma[:, i, i:x].min(dim=-1).values
    zero = torch.zeros(batch, length, 1, dtype=gamma.dtype)
    p_left = inside - torch.cat([zero, inside[:, :, :-1]], dim=-1)
    p_left = p_left * (index[None, :] <= index[:, None])
    p_right = inside - torch.cat([inside[:, :, 1:], zero], dim=-1)
    p_right = p_right * (index[None, :] >= index[:, None])
    return cubic_parent_distribution(p_left, p_right, heights, mask, head_scale)


def cubic_parent_distribution(p_left, p_right, heights, mask, head_scale):
    """Eqs. 10-12 as the authors compute them: the B x L x L x L span distribution times the per-span head
    softmax, from the boundary distributions p_left[b, i, l] and p_right[b, i, r]."""
    batch, length = heights.shape
    index = torch.arange(length, device=heights.device)
    span_p = p_left[:, :, :, None] * p_right[:, :, None, :]  # [b, i, l, r]
    in_span = (index[:, None, None] <= index[None, None, :]) & (index[None, None, :] <= index[None, :, None])
    head_logits = (heights * head_scale)[:, None, None, :].expand(batch, length, length, length)
    head_logits = head_logits.masked_fill(~in_span[None] | ~mask[:, None, None, :], float("-inf"))
    head_p = torch.softmax(head_logits, dim=-1).nan_to_num(0.0)  # [b, l, r, j]
    parent = torch.einsum("bilr,blrj->bij", span_p, head_p)
    keep = mask[:, :, None] & mask[:, None, :] & ~torch.eye(length, dtype=torch.bool, device=mask.device)
    return parent.masked_fill(~keep, 0.0)
