"""Which keys a query sees in the Gemma drop-in: causal, sliding window, the model's own mask, cached positions."""

import torch

from codesign.attention.gemma import _cached_positions, _decode_window, _visible


def test_causal_sliding_window_and_model_mask():
    positions = torch.arange(6)[None]
    full = _visible(positions, positions, None, None)[0, 0]
    assert torch.equal(full, torch.ones(6, 6, dtype=torch.bool).tril())
    window = _visible(positions, positions, 3, None)[0, 0]
    assert torch.equal(window, torch.ones(6, 6, dtype=torch.bool).tril() & ~torch.ones(6, 6, dtype=torch.bool).tril(-3))
    padding = torch.zeros(1, 1, 6, 6)
    padding[..., 0] = torch.finfo(torch.float32).min  # the model masks key 0 (e.g. left padding)
    masked = _visible(positions, positions, None, padding)[0, 0]
    assert not bool(masked[:, 0].any()) and torch.equal(masked[:, 1:], full[:, 1:])


def test_decode_step_over_a_cache():
    keys = _cached_positions(torch.tensor([[9]]), 4)  # a cache of 4 keys ending at position 9
    assert keys.tolist() == [[6, 7, 8, 9]]
    visible = _visible(torch.tensor([[9]]), keys, 2, None)
    assert _decode_window(visible) == 2  # the window keeps positions 8 and 9
    assert _decode_window(_visible(torch.tensor([[9]]), keys, None, None)) == 0
    assert _decode_window(_visible(torch.arange(2)[None] + 8, keys, None, None)) is None  # two query rows
