"""Energy estimate: its structure (what scales with what), the sweep, the CLI."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
from torch import nn

from codesign.cim import CIMConfig, ConverterConfig, TileConfig, convert_to_cim, program_model
from codesign.cim.energy import CIM_PARTS, EnergyConstants, estimate_energy, hermes_crosscheck, sensitivity
from codesign.cim.workloads import LayerWorkload, build_model, layer_workloads
from codesign.cli import main


def same(value: float) -> object:
    """Relative comparison only: energies are ~1e-12 J, below pytest.approx's default absolute tolerance."""
    return pytest.approx(value, rel=1e-9, abs=0.0)


def _layer(fan_in: int, fan_out: int, mvms: int = 1) -> LayerWorkload:
    return LayerWorkload("l", "linear", fan_in, fan_out, mvms, fan_in, fan_out)


def test_workloads_of_a_cnn_count_macs_per_sample():
    model, shape = build_model("cnn_digits")
    loads = layer_workloads(model, torch.zeros(2, *shape))
    assert [(w.kind, w.fan_in, w.fan_out, w.mvms) for w in loads] == [
        ("conv", 9, 16, 64), ("conv", 144, 32, 16), ("linear", 128, 10, 1)]
    assert loads[1].macs == 144 * 32 * 16


def test_measured_activity_replaces_the_assumptions():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 5))
    x = torch.rand(64, 20)
    (load,) = layer_workloads(model, x, measure_activity=True)
    expected_x = float((x / x.abs().amax(dim=1, keepdim=True)).mean())
    assert load.mean_abs_input == pytest.approx(expected_x)
    w = model[0].weight.detach()
    assert load.mean_abs_weight == pytest.approx(float(w.abs().mean() / w.abs().max()))
    cim_model = convert_to_cim(model, CIMConfig())
    program_model(cim_model, 0)
    (again,) = layer_workloads(cim_model, x, measure_activity=True)
    assert again.mean_abs_input == pytest.approx(expected_x) and again.fan_out == 5


def test_energy_parts_scale_with_the_work_they_count():
    config = CIMConfig(tile=TileConfig(rows=256, cols=256))
    one = estimate_energy([_layer(256, 256)], config)[0]
    two_row_tiles = estimate_energy([_layer(512, 256)], config)[0]
    assert two_row_tiles.cim["adc"] == same(2 * one.cim["adc"])  # each row tile converts its partial sums
    assert two_row_tiles.cim["array"] == same(2 * one.cim["array"])
    assert two_row_tiles.cim["dac"] == same(2 * one.cim["dac"])
    wider = estimate_energy([_layer(256, 512)], config)[0]
    assert wider.cim["dac"] == same(2 * one.cim["dac"])  # inputs are converted once per column tile
    assert wider.cim["adc"] == same(2 * one.cim["adc"])
    assert one.cim_total == same(sum(one.cim[p] for p in CIM_PARTS))
    fewer_bits = estimate_energy([_layer(256, 256)], config.replace(converter=ConverterConfig(dac_bits=4, adc_bits=4)))[0]
    assert fewer_bits.cim["adc"] < one.cim["adc"] and fewer_bits.cim["array"] < one.cim["array"]


def test_gpu_weight_traffic_is_shared_by_the_batch():
    base = estimate_energy([_layer(1000, 1000)], batch=1)[0]
    big = estimate_energy([_layer(1000, 1000)], batch=1000)[0]
    k = EnergyConstants()
    weight_bytes = 1000 * 1000 * 2
    assert base.gpu_dram - big.gpu_dram == same(weight_bytes * (1 - 1 / 1000) * k.value("gpu_dram_per_byte"))
    assert base.gpu_compute == big.gpu_compute


def test_sensitivity_moves_each_side_it_should():
    loads = [_layer(784, 256), _layer(256, 10)]
    sweep = {name: rest for name, *rest in sensitivity(loads)}
    assert set(sweep) == set(EnergyConstants.names())
    cim_lo, cim_hi, gpu_lo, gpu_hi = sweep["adc_scale"]
    assert cim_lo < cim_hi and gpu_lo == gpu_hi
    cim_lo, cim_hi, gpu_lo, gpu_hi = sweep["gpu_dram_per_byte"]
    assert cim_lo == cim_hi and gpu_lo < gpu_hi


def test_crosscheck_against_the_measured_chip_is_in_the_same_decade_or_two():
    model, measured = hermes_crosscheck()
    assert measured == same(2 * 65536 / 9.76e12)
    assert measured / 100 < model < measured * 10


def test_energy_refuses_ideal_converters_and_unknown_constants():
    with pytest.raises(ValueError, match="finite converter resolutions"):
        estimate_energy([_layer(4, 4)], CIMConfig.ideal())
    with pytest.raises(ValueError, match="unknown energy constant 'adc'"):
        EnergyConstants().replace(adc=1.0)


def test_cli_prints_the_table_and_the_sweep(capsys):
    assert main(["cim", "energy", "mlp:784-256-10", "--batch", "8"]) == 0
    out = capsys.readouterr().out
    assert "ESTIMATE" in out and "total" in out and "sensitivity" in out and "adc_scale" in out


@pytest.mark.parametrize("argv, message", [
    (["cim", "energy", "resnet50"], "unknown model 'resnet50'"),
    (["cim", "energy", "mlp:784-x-10"], "widths must be integers"),
    (["cim", "energy", "mlp_digits", "--adc-bits", "0"], "adc_bits=0"),
    (["cim", "energy", "mlp_digits", "--device", "dram"], "unknown device 'dram'"),
    (["cim", "energy", "mlp_digits", "--batch", "0"], "batch=0"),
])
def test_cli_bad_input_is_a_one_line_error(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("codesign: error: ") and message in err and err.count("\n") == 1


def test_cli_cim_without_a_subcommand_prints_help():
    result = subprocess.run([sys.executable, "-m", "codesign.cli", "cim"], capture_output=True, text=True)
    assert result.returncode == 2 and "energy" in result.stdout


@pytest.mark.parametrize("name", ["mlp_digits", "cnn_digits", "mlp_mnist", "cnn_mnist", "mlp:100-30-7", "linear:50:20"])
def test_workloads_from_shapes_alone_are_those_of_the_real_model(name):
    model, shape = build_model(name)
    meta, meta_shape = build_model(name, device="meta")
    assert meta_shape == shape and all(p.is_meta for p in meta.parameters())
    assert layer_workloads(meta.eval(), torch.zeros(1, *shape, device="meta")) == layer_workloads(model.eval(), torch.zeros(1, *shape))


def test_the_energy_of_a_huge_layer_allocates_no_weights():
    # the CLI in a fresh process, its peak resident memory for a 20000x20000 layer (1.6 GB of float32 weights)
    # against the same command on a 10x10 layer
    code = ("import resource, sys; from codesign.cli import main; rc = main(['cim', 'energy', sys.argv[1], '--no-sweep']); "
            "print('peak_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(rc)")

    def peak_kb(model: str) -> int:
        out = subprocess.run([sys.executable, "-c", code, model], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return int(out.stdout.split("peak_kb")[-1])

    assert peak_kb("linear:20000:20000") - peak_kb("linear:10:10") < 64 * 1024


def test_a_layer_too_big_for_memory_still_has_an_energy_estimate(capsys):
    assert main(["cim", "energy", "linear:100000000:100000000", "--no-sweep"]) == 0  # 10^16 weights: 40 PB of float32
    assert re.search(r"^total +10000000000000000 ", capsys.readouterr().out, re.M)
