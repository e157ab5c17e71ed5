"""The bit-exact KAN learner: gradients against autograd, online semantics, corner cases."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from codesign.kan.fixed_learner import KANLearner, basis_roms
from codesign.kan.float_model import KAN
from codesign.kan.spec import KANSpec, default_type


def fine_spec(**changes) -> KANSpec:
    """A spec whose types are so wide that it tracks the float model closely."""
    wide = default_type(28, 8)
    base = KANSpec(
        widths=(3, 4, 2), grid_size=8, spline_order=3, grid_range=(-1.0, 1.0), lut_bits=12,
        act_t=wide, coef_t=wide, err_t=wide, grad_t=wide,
        basis_t=default_type(24, 1, signed=False), dbasis_t=default_type(24, 2), dphi_t=default_type(24, 8),
        lr_shift=0,
    )
    return dataclasses.replace(base, **changes)


def float_twin(learner: KANLearner) -> KAN:
    """The torch KAN holding the learner's current coefficients."""
    s = learner.spec
    model = KAN(list(s.widths), grid_size=s.grid_size, spline_order=s.spline_order, grid_range=s.grid_range)
    with torch.no_grad():
        for layer, c in zip(model.layers, learner.coefficients()):
            layer.coef.copy_(torch.from_numpy(c))
    return model.double()


@pytest.mark.parametrize("grid", [(8, (-1.0, 1.0)), (5, (-2.0, 2.0)), (16, (-1.0, 1.0))])
def test_update_equals_autograd_gradient(grid):
    """One sample with learning rate 1: the coefficient change is the gradient of 0.5·e², for every layer."""
    g, rng_ = grid
    spec = fine_spec(grid_size=g, grid_range=rng_)
    rng = np.random.default_rng(1)
    # small random coefficients: hidden values stay inside the grid and gradients reach layer 0
    coefs = [rng.normal(0, 0.15, (o, i, spec.n_coef)) for i, o in spec.layer_shapes]
    learner = KANLearner(spec, coefficients=coefs)
    lo, hi = rng_
    for _ in range(5):
        x = rng.uniform(lo + 0.01, hi - 0.01, size=(1, 3))
        y = rng.uniform(-1, 1, size=(1, 2))
        model = float_twin(learner)
        before = learner.coefficients()
        xq = spec.act_t.to_float(spec.act_t.quantize(x))
        yq = spec.act_t.to_float(spec.act_t.quantize(y))
        out = model(torch.from_numpy(xq))
        loss = 0.5 * ((out - torch.from_numpy(yq)) ** 2).sum()
        loss.backward()
        learner.run(x, y)
        after = learner.coefficients()
        for layer, (b, a, p) in enumerate(zip(before, after, model.layers)):
            grad = p.coef.grad.numpy()
            change = b - a
            scale = np.abs(grad).max()
            assert scale > 1e-3, f"layer {layer} gradient vanished; the test would prove nothing"
            # ROM addresses quantize the local coordinate to 2^-A: a relative error of ~2^-A·k
            err = np.abs(change - grad).max()
            assert err <= 32 * 2.0**-spec.lut_bits * scale + 4 * spec.coef_t.lsb, (layer, err, scale)
            # only k+1 coefficients per edge move
            moved = (change != 0).sum(axis=-1)
            assert moved.max() <= spec.spline_order + 1


def test_hidden_gradient_carries_one_over_h_not_k_over_h():
    """A k/h factor would scale layer-0 updates by k; the comparison above must see that."""
    spec = fine_spec(grid_size=8, grid_range=(-1.0, 1.0))
    rng = np.random.default_rng(5)
    coefs = [rng.normal(0, 0.15, (o, i, spec.n_coef)) for i, o in spec.layer_shapes]
    learner = KANLearner(spec, coefficients=coefs)
    x, y = rng.uniform(-0.9, 0.9, (1, 3)), rng.uniform(-1, 1, (1, 2))
    model = float_twin(learner)
    xq = torch.from_numpy(spec.act_t.to_float(spec.act_t.quantize(x)))
    loss = 0.5 * ((model(xq) - torch.from_numpy(spec.act_t.to_float(spec.act_t.quantize(y)))) ** 2).sum()
    loss.backward()
    before = learner.coefficients()[0]
    learner.run(x, y)
    change = before - learner.coefficients()[0]
    grad = model.layers[0].coef.grad.numpy()
    ratio = np.sum(change * grad) / np.sum(grad * grad)
    assert abs(ratio - 1.0) < 0.01, ratio


def test_predict_then_update():
    """Sample t's prediction ignores its own target; sample t+1 sees sample t's update."""
    spec = KANSpec()
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (50, 2))
    y = rng.uniform(-1, 1, (50, 1))
    p1 = KANLearner(spec, seed=1).run(x, y)
    y2 = y.copy()
    y2[20] += 0.5
    p2 = KANLearner(spec, seed=1).run(x, y2)
    assert np.array_equal(p1[:21], p2[:21])
    assert not np.array_equal(p1[21:], p2[21:])


def test_train_disabled_is_pure_inference():
    """With train-enable low nothing changes and every prediction is the forward pass of the initial coefficients."""
    spec = KANSpec()
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1.5, 1.5, (200, 2)), rng.uniform(-1, 1, (200, 1))
    learner = KANLearner(spec, seed=2)
    coefs = [c + 0.1 for c in learner.coefficients()]
    learner = KANLearner(spec, coefficients=coefs)
    before = learner.coefficients_raw()
    p_frozen = learner.run(x, y, train=False)
    assert all(np.array_equal(a, b) for a, b in zip(before, learner.coefficients_raw()))
    # one-at-a-time inference gives the same numbers
    for t in (0, 57, 199):
        assert np.array_equal(learner.run(x[t : t + 1], y[t : t + 1], train=False), p_frozen[t : t + 1])
    trained = KANLearner(spec, coefficients=coefs)
    p_trained = trained.run(x, y, train=True)
    assert np.array_equal(p_trained[0], p_frozen[0]) and not np.array_equal(p_trained, p_frozen)


def test_inputs_outside_grid_clamp_to_the_edge():
    """An input beyond the grid gives the same output as the grid edge, never zero."""
    spec = KANSpec()
    learner = KANLearner(spec, coefficients=[c + 0.2 for c in KANLearner(spec, seed=1).coefficients()])
    lsb = spec.act_t.lsb
    probe = np.array([[5.0, 0.3], [1.0 - lsb, 0.3], [-7.0, 0.3], [-1.0, 0.3]])
    out = learner.run(probe, np.zeros((4, 1)), train=False)
    # every input at or above hi lands on the last ROM address of the last cell
    assert out[0, 0] == learner.run(np.array([[1.0, 0.3]]), np.zeros((1, 1)), train=False)[0, 0]
    assert out[2, 0] == out[3, 0]
    assert out[0, 0] != 0 and out[2, 0] != 0


def test_saturation_never_wraps():
    """Huge targets saturate errors and coefficients at the type limits instead of wrapping."""
    spec = KANSpec(lr_shift=0)
    x = np.tile([[0.1, -0.2]], (400, 1))
    y = np.full((400, 1), 1000.0)  # beyond act_t: the target itself saturates at the max
    pred = KANLearner(spec, seed=0).run(x, y)
    assert pred.max() <= spec.act_t.max_value
    assert pred[-1, 0] == spec.act_t.max_value  # driven up to the rail, no wrap to negative
    assert np.all(np.diff(pred[:, 0]) >= 0)


def test_jit_and_plain_python_agree_bit_for_bit(tmp_path):
    """The numba kernel and the same code run as plain Python give identical integers."""
    script = textwrap.dedent(
        """
        import numpy as np, sys
        from codesign.kan.fixed_learner import KANLearner
        from codesign.kan.spec import KANSpec
        rng = np.random.default_rng(7)
        spec = KANSpec(widths=(2, 3, 2), grid_size=5, grid_range=(-2.0, 2.0), lr_shift=2)
        x = rng.uniform(-3, 3, (300, 2)); x[::17] = 40.0
        y = rng.uniform(-2, 2, (300, 2)); y[::23] = -40.0
        train = (rng.uniform(size=300) > 0.1).astype(int)
        m = KANLearner(spec, seed=4)
        p = m.run(x, y, train)
        np.save(sys.argv[1], np.concatenate([spec.act_t.quantize(p).ravel(), np.concatenate([c.ravel() for c in m.coefficients_raw()])]))
        """
    )
    results = []
    for disable in ("0", "1"):
        out = tmp_path / f"r{disable}.npy"
        env = dict(os.environ, NUMBA_DISABLE_JIT=disable)
        subprocess.run([sys.executable, "-c", script, str(out)], check=True, env=env)
        results.append(np.load(out))
    assert np.array_equal(results[0], results[1])


def test_roms_match_the_cardinal_bspline():
    spec = KANSpec()
    brom, drom = basis_roms(spec)
    assert brom.shape == (spec.spline_order + 1, 1 << spec.lut_bits)
    # partition of unity up to one LSB per entry
    total = spec.basis_t.to_float(brom).sum(axis=0)
    assert np.all(np.abs(total - 1.0) <= (spec.spline_order + 1) * spec.basis_t.lsb)
    # derivatives of a partition of unity sum to zero
    assert np.all(np.abs(spec.dbasis_t.to_float(drom).sum(axis=0)) <= (spec.spline_order + 1) * spec.dbasis_t.lsb)


def test_learns_a_stationary_function():
    """Online SGD on a smooth target: the late error is far below the early error."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (20000, 2))
    y = (0.5 * np.sin(2 * x[:, 0]) * np.cos(x[:, 1]))[:, None]
    pred = KANLearner(KANSpec(), seed=0).run(x, y)
    early = np.mean((pred[:1000] - y[:1000]) ** 2)
    late = np.mean((pred[-2000:] - y[-2000:]) ** 2)
    assert late < early / 10, (early, late)


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda m: m.run(np.zeros((5, 3)), np.zeros((5, 1))), "inputs have shape"),
        (lambda m: m.run(np.zeros((5, 2)), np.zeros((4, 1))), "5 inputs but 4 targets"),
        (lambda m: m.run(np.full((5, 2), np.nan), np.zeros((5, 1))), "non-finite"),
        (lambda m: m.run(np.zeros((5, 2)), np.full((5, 1), np.inf)), "non-finite"),
    ],
)
def test_bad_streams_are_rejected(bad, message):
    with pytest.raises(ValueError, match=message):
        bad(KANLearner(KANSpec()))
