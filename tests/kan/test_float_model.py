"""Tests for the float KAN/MLP models, the B-spline basis and the online learner."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from scipy.interpolate import BSpline

from codesign.kan.bspline import (
    bspline_basis,
    bspline_basis_np,
    cardinal_basis,
    cardinal_basis_derivative,
    cardinal_basis_derivative_np,
    cardinal_basis_np,
    cardinal_coefficients,
    cardinal_derivative_coefficients,
    cox_de_boor,
    knot_vector,
    locate_np,
)
from codesign.kan.float_model import KAN, MLP, KANLayer
from codesign.kan.float_online import train_online
from tests.support import one_torch_thread

ORDERS = [1, 2, 3, 4]
GRIDS = [(1, -1.0, 1.0), (5, -1.0, 1.0), (8, -2.5, 0.5), (13, 0.0, 3.0)]


@pytest.fixture(autouse=True)
def _single_thread():
    """Tiny tensors run fastest (and most reproducibly) on one intra-op thread."""
    with one_torch_thread():
        yield


def _test_points(grid_size: int, order: int, lo: float, hi: float, n: int = 300) -> np.ndarray:
    """Random points in the grid plus every grid point (including both edges)."""
    rng = np.random.default_rng(grid_size * 10 + order)
    knots = knot_vector(grid_size, order, lo, hi)
    return np.concatenate([rng.uniform(lo, hi, n), knots[order : grid_size + order + 1]])


# ---------------------------------------------------------------------------
# Reference and cardinal pieces
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_cox_de_boor_matches_scipy(order: int) -> None:
    knots = knot_vector(6, order, -1.0, 1.0)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 50)
    expected = BSpline.design_matrix(x, knots, order).toarray()
    np.testing.assert_allclose(cox_de_boor(x, knots, order), expected, atol=1e-13)


def test_cox_de_boor_linear_hat() -> None:
    knots = np.array([0.0, 1.0, 2.0, 3.0])
    values = cox_de_boor(np.array([0.0, 0.5, 1.0, 1.5, 2.5]), knots, 1)
    np.testing.assert_allclose(values, [[0, 0], [0.5, 0], [1, 0], [0.5, 0.5], [0, 0.5]])


def test_cardinal_coefficients_known_values() -> None:
    np.testing.assert_array_equal(cardinal_coefficients(1), [[1.0, -1.0], [0.0, 1.0]])
    # Cubic: b_j(0) = N_3(3 - j) = 1/6, 2/3, 1/6, 0 and b_j(1) = 0, 1/6, 2/3, 1/6.
    np.testing.assert_allclose(cardinal_basis_np(0.0, 3), [1 / 6, 2 / 3, 1 / 6, 0.0], atol=1e-15)
    np.testing.assert_allclose(cardinal_basis_np(1.0, 3), [0.0, 1 / 6, 2 / 3, 1 / 6], atol=1e-15)
    np.testing.assert_allclose(
        cardinal_derivative_coefficients(3), cardinal_coefficients(3)[:, 1:] * [1, 2, 3]
    )


@pytest.mark.parametrize("order", ORDERS)
def test_cardinal_pieces_against_truncated_power_formula(order: int) -> None:
    k = order
    t = np.linspace(0.0, 1.0, 11)

    def n_k(x: float) -> float:
        return sum(
            (-1) ** l * math.comb(k + 1, l) * max(x - l, 0.0) ** k for l in range(k + 2)
        ) / math.factorial(k)

    expected = np.array([[n_k(ti + k - j) for j in range(k + 1)] for ti in t])
    np.testing.assert_allclose(cardinal_basis_np(t, k), expected, atol=1e-13)
    torch_vals = cardinal_basis(torch.tensor(t, dtype=torch.float64), k).numpy()
    np.testing.assert_allclose(torch_vals, expected, atol=1e-13)
    assert cardinal_coefficients(k)[:, 0].sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("order", ORDERS)
def test_cardinal_derivative_matches_finite_differences(order: int) -> None:
    t = np.linspace(0.01, 0.99, 37)
    eps = 1e-6
    fd = (cardinal_basis_np(t + eps, order) - cardinal_basis_np(t - eps, order)) / (2 * eps)
    np.testing.assert_allclose(cardinal_basis_derivative_np(t, order), fd, atol=1e-8)
    torch_d = cardinal_basis_derivative(torch.tensor(t, dtype=torch.float64), order).numpy()
    np.testing.assert_allclose(torch_d, fd, atol=1e-8)
    # Autograd through the torch cardinal basis agrees as well.
    tt = torch.tensor(t, dtype=torch.float64, requires_grad=True)
    vals = cardinal_basis(tt, order)
    for j in range(order + 1):
        (grad,) = torch.autograd.grad(vals[:, j].sum(), tt, retain_graph=True)
        np.testing.assert_allclose(grad.numpy(), torch_d[:, j], atol=1e-12)


# ---------------------------------------------------------------------------
# Full basis
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("grid_size,lo,hi", GRIDS)
def test_bspline_basis_matches_cox_de_boor(order: int, grid_size: int, lo: float, hi: float) -> None:
    x = _test_points(grid_size, order, lo, hi)
    expected = cox_de_boor(x, knot_vector(grid_size, order, lo, hi), order)
    got = bspline_basis(torch.tensor(x, dtype=torch.float64), grid_size, order, lo, hi)
    assert got.shape == (x.size, grid_size + order)
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bspline_basis_np(x, grid_size, order, lo, hi), expected, atol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("grid_size,lo,hi", GRIDS)
def test_partition_of_unity_and_local_support(order: int, grid_size: int, lo: float, hi: float) -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(lo - 1.0, hi + 1.0, 400)
    b = bspline_basis(torch.tensor(x, dtype=torch.float64), grid_size, order, lo, hi).numpy()
    np.testing.assert_allclose(b.sum(axis=-1), 1.0, atol=1e-13)
    assert (b >= -1e-15).all()
    cell, t = locate_np(x, grid_size, lo, hi)
    for row, c in zip(b, cell):
        outside = np.ones(grid_size + order, dtype=bool)
        outside[c : c + order + 1] = False
        assert (row[outside] == 0.0).all()
    inside = (x > lo) & (x < hi) & (t > 1e-6) & (t < 1 - 1e-6)
    assert inside.sum() > 100
    assert ((b[inside] > 0).sum(axis=-1) == order + 1).all()


def test_batched_shapes_and_dtype() -> None:
    x = torch.rand(3, 5, 2) * 2 - 1
    b = bspline_basis(x, 8, 3, -1.0, 1.0)
    assert b.shape == (3, 5, 2, 11)
    assert b.dtype == x.dtype


@pytest.mark.parametrize("order", ORDERS)
def test_clamping_outside_grid(order: int) -> None:
    grid_size, lo, hi = 8, -1.0, 1.0
    x = torch.tensor([-3.0, -1.0 - 1e-9, lo, hi, 1.0 + 1e-9, 2.5], dtype=torch.float64, requires_grad=True)
    b = bspline_basis(x, grid_size, order, lo, hi)
    np.testing.assert_array_equal(b[0].detach().numpy(), b[2].detach().numpy())
    np.testing.assert_array_equal(b[1].detach().numpy(), b[2].detach().numpy())
    np.testing.assert_array_equal(b[5].detach().numpy(), b[3].detach().numpy())
    np.testing.assert_array_equal(b[4].detach().numpy(), b[3].detach().numpy())
    # The value at hi is the limit from the left (continuity at the right edge).
    left = bspline_basis(torch.tensor([hi - 1e-10], dtype=torch.float64), grid_size, order, lo, hi)
    np.testing.assert_allclose(b[3].detach().numpy(), left[0].numpy(), atol=1e-8)
    assert abs(b[3].sum().item() - 1.0) < 1e-13 and b[3, -1].item() > 0
    # Zero derivative outside the grid.
    w = torch.randn(grid_size + order, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (grad,) = torch.autograd.grad((b * w).sum(), x)
    assert grad[0].item() == 0.0 and grad[1].item() == 0.0
    assert grad[4].item() == 0.0 and grad[5].item() == 0.0


@pytest.mark.parametrize("order", ORDERS)
def test_chain_rule_factor_is_one_over_h(order: int) -> None:
    grid_size, lo, hi = 8, -1.0, 1.0
    h = (hi - lo) / grid_size
    assert h != 1.0
    x = np.random.default_rng(2).uniform(lo + 1e-3, hi - 1e-3, 64)
    cell, t = locate_np(x, grid_size, lo, hi)
    local = cardinal_basis_derivative_np(t, order)
    expected = np.zeros((x.size, grid_size + order))
    for n, c in enumerate(cell):
        expected[n, c : c + order + 1] = local[n] / h

    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    b = bspline_basis(xt, grid_size, order, lo, hi)
    autograd = np.stack(
        [torch.autograd.grad(b[:, m].sum(), xt, retain_graph=True)[0].numpy() for m in range(b.shape[1])],
        axis=-1,
    )
    np.testing.assert_allclose(autograd, expected, atol=1e-11)
    # Independent check: finite differences of the textbook reference.
    knots = knot_vector(grid_size, order, lo, hi)
    eps = 1e-6
    fd = (cox_de_boor(x + eps, knots, order) - cox_de_boor(x - eps, knots, order)) / (2 * eps)
    np.testing.assert_allclose(autograd, fd, atol=1e-6)
    if order > 1:
        wrong = expected * order  # the k/h factor would be wrong
        assert np.abs(wrong - fd).max() > 0.1


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("base", [False, True])
def test_kan_layer_layout_matches_edge_sum(base: bool) -> None:
    layer = KANLayer(3, 2, grid_size=5, spline_order=2, grid_range=(-2.0, 1.0), base=base, seed=3, dtype=torch.float64)
    assert layer.coef.shape == (2, 3, 7)
    assert (layer.base_weight is not None) == base
    x = np.random.default_rng(4).uniform(-2.5, 1.5, (20, 3))
    knots = knot_vector(5, 2, -2.0, 1.0)
    coef = layer.coef.detach().numpy()
    expected = np.zeros((20, 2))
    for o in range(2):
        for i in range(3):
            xi = np.clip(x[:, i], -2.0, 1.0)
            phi = cox_de_boor(xi, knots, 2) @ coef[o, i]
            if base:
                phi = phi + layer.base_weight[o, i].item() * x[:, i] / (1.0 + np.exp(-x[:, i]))
            expected[:, o] += phi
    y = layer(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(y, expected, atol=1e-12)
    edges = layer.edge_functions(torch.tensor(x)).detach()
    assert edges.shape == (20, 2, 3)
    np.testing.assert_allclose(edges.sum(-1).numpy(), expected, atol=1e-12)


def test_kan_seed_and_dtype_independent_init() -> None:
    a = KAN([2, 4, 1], seed=7, base=True, dtype=torch.float64)
    b = KAN([2, 4, 1], seed=7, base=True, dtype=torch.float64)
    c = KAN([2, 4, 1], seed=7, base=True, dtype=torch.float32)
    d = KAN([2, 4, 1], seed=8, base=True, dtype=torch.float64)
    for pa, pb, pc, pd in zip(a.parameters(), b.parameters(), c.parameters(), d.parameters()):
        assert torch.equal(pa, pb)
        assert pc.dtype == torch.float32
        torch.testing.assert_close(pc, pa.float())
        assert not torch.equal(pa, pd)
    assert a.layers[0].coef.std().item() == pytest.approx(0.1, rel=0.5)


def test_num_parameters() -> None:
    assert KAN([2, 4, 1], grid_size=8, spline_order=3).num_parameters() == (8 + 4) * 11
    assert KAN([2, 4, 1], grid_size=8, spline_order=3, base=True).num_parameters() == 12 * 11 + 12
    assert KAN([3, 1], grid_size=5, spline_order=1).num_parameters() == 3 * 6
    assert MLP([2, 16, 1]).num_parameters() == 2 * 16 + 16 + 16 + 1
    assert MLP([2, 16, 1], bias=False).num_parameters() == 2 * 16 + 16


@pytest.mark.parametrize("base", [False, True])
def test_kan_fits_smooth_function(base: bool) -> None:
    torch.manual_seed(0)
    model = KAN([2, 4, 1], grid_size=6, spline_order=3, base=base, seed=0, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(128, 2, generator=gen, dtype=torch.float64) * 2 - 1
    y = (torch.sin(math.pi * x[:, :1]) + x[:, 1:] ** 2).to(torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    with torch.no_grad():
        loss0 = torch.mean((model(x) - y) ** 2).item()
    for _ in range(150):
        opt.zero_grad()
        loss = torch.mean((model(x) - y) ** 2)
        loss.backward()
        opt.step()
    assert loss.item() < loss0 / 500
    assert loss.item() < 1e-3


def test_gradients_flow_to_all_parameters() -> None:
    model = KAN([3, 5, 2], base=True, seed=1)
    x = torch.rand(16, 3) * 2 - 1
    model(x).pow(2).sum().backward()
    for layer in model.layers:
        assert layer.coef.grad is not None and layer.coef.grad.abs().sum() > 0
        assert layer.base_weight.grad is not None and layer.base_weight.grad.abs().sum() > 0


def test_kan_one_dimensional_sgd_fit() -> None:
    model = KAN([1, 1], grid_size=8, spline_order=3, seed=0, dtype=torch.float64)
    x = torch.linspace(-1, 1, 200, dtype=torch.float64)[:, None]
    y = torch.sin(math.pi * x)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    losses = []
    for _ in range(300):
        opt.zero_grad()
        loss = 0.5 * torch.mean((model(x) - y) ** 2)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 100


@pytest.mark.parametrize("activation", ["relu", "hardtanh", "tanh", "silu"])
def test_mlp_forward(activation: str) -> None:
    model = MLP([3, 8, 8, 2], activation=activation, seed=0)
    out = model(torch.randn(5, 3))
    assert out.shape == (5, 2)
    assert torch.isfinite(out).all()


# ---------------------------------------------------------------------------
# Online learning
# ---------------------------------------------------------------------------


def _stream(n: int, seed: int = 0, spread: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-spread, spread, (n, 2))
    y = np.sin(2.0 * x[:, :1]) * x[:, 1:] + 0.3 * x[:, :1]
    return x, y


@pytest.mark.parametrize("method", ["manual", "autograd"])
def test_train_online_predict_then_update(method: str) -> None:
    x, y = _stream(6)
    model = KAN([2, 3, 1], base=True, seed=0, dtype=torch.float64)
    ref = copy.deepcopy(model)
    with torch.no_grad():
        first = model(torch.tensor(x[:1])).numpy()
    preds = train_online(model, x, y, lr=0.3, method=method)
    assert preds.shape == (6, 1)
    np.testing.assert_allclose(preds[0], first[0], atol=1e-12)
    # Reference: explicit predict, then one SGD step on 0.5 * ||y_hat - y||^2.
    opt = torch.optim.SGD(ref.parameters(), lr=0.3)
    for n in range(6):
        opt.zero_grad()
        y_hat = ref(torch.tensor(x[n : n + 1]))
        np.testing.assert_allclose(preds[n], y_hat.detach().numpy()[0], atol=1e-12)
        (0.5 * ((y_hat - torch.tensor(y[n : n + 1])) ** 2).sum()).backward()
        opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, atol=1e-12, rtol=0)


@pytest.mark.parametrize("model_factory", [lambda: KAN([2, 4, 1], seed=1), lambda: MLP([2, 8, 1], seed=1)])
def test_train_online_lr_zero_equals_batch_forward(model_factory) -> None:
    x, y = _stream(50, spread=1.3)
    model = model_factory()
    before = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        batch = model(torch.tensor(x, dtype=torch.float32)).double().numpy()
    preds = train_online(model, x, y, lr=0.0)
    np.testing.assert_allclose(preds, batch, atol=1e-6)
    for p, q in zip(model.parameters(), before):
        assert torch.equal(p, q)


@pytest.mark.parametrize(
    "make",
    [
        lambda: KAN([2, 4, 1], grid_size=8, spline_order=3, seed=2, dtype=torch.float64),
        lambda: KAN([2, 4, 3, 2], grid_size=5, spline_order=1, base=True, seed=3, dtype=torch.float64),
        lambda: KAN([2, 3, 1], grid_size=4, spline_order=2, grid_range=(-0.5, 0.8), seed=4, dtype=torch.float64),
        lambda: MLP([2, 6, 6, 1], activation="relu", seed=5, dtype=torch.float64),
        lambda: MLP([2, 6, 1], activation="hardtanh", seed=5, dtype=torch.float64),
        lambda: MLP([2, 6, 1], activation="tanh", seed=5, dtype=torch.float64),
        lambda: MLP([2, 6, 1], activation="silu", seed=5, dtype=torch.float64),
    ],
)
def test_train_online_manual_matches_autograd(make) -> None:
    x, y = _stream(200, seed=3, spread=1.5)  # includes inputs outside the grid
    a, b = make(), make()
    y = np.repeat(y, a.out_features, axis=1) * np.arange(1, a.out_features + 1)
    pa = train_online(a, x, y, lr=0.05, method="manual")
    pb = train_online(b, x, y, lr=0.05, method="autograd")
    assert np.abs(pa).max() < 10.0  # a stable run, so the comparison is meaningful
    np.testing.assert_allclose(pa, pb, atol=1e-10)
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, atol=1e-10, rtol=0)


def test_train_online_float32_close_to_autograd() -> None:
    x, y = _stream(200, seed=5)
    a, b = KAN([2, 4, 1], base=True, seed=6), KAN([2, 4, 1], base=True, seed=6)
    pa = train_online(a, x, y, lr=0.1)
    pb = train_online(b, x, y, lr=0.1, method="autograd")
    assert a.layers[0].coef.dtype == torch.float32
    np.testing.assert_allclose(pa, pb, atol=1e-5)


def test_train_online_learns() -> None:
    x, y = _stream(4000, seed=7)
    model = KAN([2, 4, 1], grid_size=8, spline_order=3, seed=0)
    preds = train_online(model, x, y, lr=0.1)
    early = np.mean((preds[:200] - y[:200]) ** 2)
    late = np.mean((preds[-500:] - y[-500:]) ** 2)
    assert late < early / 20


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(grid_size=0), "grid_size.*0"),
        (dict(grid_size=2.5), "grid_size.*2.5"),
        (dict(spline_order=0), "order.*0"),
        (dict(grid_range=(1.0, 1.0)), "lo < hi.*1.0"),
        (dict(grid_range=(2.0, -1.0)), "lo < hi.*2.0"),
        (dict(grid_range=(0.0,)), "grid_range"),
    ],
)
def test_kan_invalid_grid(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        KAN([2, 1], **kwargs)
    with pytest.raises(ValueError, match=match):
        KANLayer(2, 1, **kwargs)


def test_basis_invalid_arguments() -> None:
    x = torch.zeros(3)
    with pytest.raises(ValueError, match="grid_size.*0"):
        bspline_basis(x, 0, 3, -1.0, 1.0)
    with pytest.raises(ValueError, match="order.*0"):
        bspline_basis(x, 4, 0, -1.0, 1.0)
    with pytest.raises(ValueError, match="lo < hi"):
        bspline_basis(x, 4, 3, 1.0, -1.0)
    with pytest.raises(ValueError, match="order.*-1"):
        cardinal_basis_np(0.5, -1)
    with pytest.raises(ValueError, match="non-decreasing"):
        cox_de_boor(np.zeros(2), np.array([0.0, 2.0, 1.0, 3.0]), 1)


@pytest.mark.parametrize("widths", [[3], [], [2, 0, 1], [2, -1], [2, 3.5, 1]])
def test_invalid_widths(widths: list) -> None:
    with pytest.raises(ValueError, match="widths"):
        KAN(widths)
    with pytest.raises(ValueError, match="widths"):
        MLP(widths)


def test_invalid_layer_sizes_and_activation() -> None:
    with pytest.raises(ValueError, match="in_features.*0"):
        KANLayer(0, 2)
    with pytest.raises(ValueError, match="activation.*gelu"):
        MLP([2, 1], activation="gelu")


def test_forward_shape_mismatch() -> None:
    for model in (KAN([3, 2, 1]), KANLayer(3, 2), MLP([3, 2, 1])):
        with pytest.raises(ValueError, match=r"must be 3, got shape \(4, 2\)"):
            model(torch.zeros(4, 2))


def test_train_online_invalid_inputs() -> None:
    model = KAN([2, 1])
    x, y = _stream(5)
    with pytest.raises(ValueError, match="lr.*-0.1"):
        train_online(model, x, y, lr=-0.1)
    with pytest.raises(ValueError, match="same number of samples"):
        train_online(model, x, y[:4], lr=0.1)
    with pytest.raises(ValueError, match="3 features"):
        train_online(model, np.zeros((5, 3)), y, lr=0.1)
    with pytest.raises(ValueError, match="2 outputs"):
        train_online(model, x, np.zeros((5, 2)), lr=0.1)
    with pytest.raises(ValueError, match=r"shape \(n, in\)"):
        train_online(model, x[:, 0], y, lr=0.1)
    with pytest.raises(ValueError, match="method"):
        train_online(model, x, y, lr=0.1, method="fast")
