"""Error feedback against a direct reference: the textbook OBS loop with the explicit inverse Hessian."""

import pytest
import torch

from codesign.compress import AsymIntConfig, ErrorFeedbackConfig, IntConfig, quantize


def _layer(n=24, k=64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen, dtype=torch.float64)
    x = torch.randn(512, k, generator=gen, dtype=torch.float64) @ (torch.eye(k, dtype=torch.float64)
                                                                   + 0.4 * torch.randn(k, k, generator=gen,
                                                                                       dtype=torch.float64))
    return w.float(), x.T @ x / x.shape[0]


def _obs_codes(w, cov, levels_of, damping=0.01, order=None):
    """Quantize columns one at a time; after each, update the rest by -e/[H⁻¹]ii · H⁻¹[i, rest] and drop i from H⁻¹."""
    k = w.shape[1]
    order = torch.arange(k) if order is None else order
    h = cov.clone()
    h.diagonal().add_(damping * h.diagonal().mean())
    hinv = torch.linalg.inv(h)
    w = w.double().clone()
    codes = torch.zeros(w.shape, dtype=torch.long)
    remaining = list(order.tolist())
    while remaining:
        i = remaining.pop(0)
        levels = levels_of(i)
        code = (w[:, i:i + 1] - levels).abs().argmin(dim=1)
        codes[:, i] = code
        err = (w[:, i] - levels.gather(1, code[:, None])[:, 0]) / hinv[i, i]
        rest = torch.tensor(remaining, dtype=torch.long)
        if remaining:
            w[:, rest] -= err[:, None] * hinv[i, rest][None, :]
        # the inverse Hessian of the columns still free (Schur complement of column i)
        hinv = hinv - hinv[:, i:i + 1] @ hinv[i:i + 1, :] / hinv[i, i]
    return codes


def _levels(grid):
    book = grid.codebook.double()
    zeros = None if grid.zeros is None else grid.zeros.double()

    def of(column):
        g = column // grid.group_size
        values = book[None, :] - (0 if zeros is None else zeros[:, g, None])
        return values * grid.scales[:, g, None].double()
    return of


@pytest.mark.parametrize("base", [AsymIntConfig(3, 16), IntConfig(2, 16)], ids=["asym3", "sym2"])
@pytest.mark.parametrize("act_order", [False, True])
def test_lazy_cholesky_error_feedback_picks_the_codes_of_the_direct_obs_loop(base, act_order):
    w, cov = _layer()
    grid = quantize(w, base)
    order = torch.argsort(cov.diagonal(), descending=True) if act_order else None
    expected = _obs_codes(w, cov, _levels(grid), order=order)
    fed = quantize(w, ErrorFeedbackConfig(base=base, block_size=16, act_order=act_order), cov)
    assert torch.equal(fed.codes().long(), expected)
