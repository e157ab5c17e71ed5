"""Inference energy per sample on a CIM chip against a GPU baseline — an ESTIMATE.

CIM, per layer and input sample (L = matrix-vector products per sample, tiles rows × cols,
n_r / n_c = row / column tiles, b_D / b_A = DAC / ADC bits, K = 2^(b_D−1) − 1):

    DAC      L·fan_in·n_c   conversions × b_D × e_dac_bit
    array    L·fan_in·fan_out devices × V²·g_max·E|w|·E|x|·K·t_lsb     (PWM input: on-time ∝ |x|)
    ADC      L·fan_out·n_r  conversions × s_adc·(0.4710·b_A + 1.9529) µW·(b_A + 1) ns
    digital  L·fan_out·n_r  partial sums × e_out  +  L·fan_in·n_c inputs × e_in
    buffers  (L·fan_in·⌈b_D/8⌉ + outputs·2) bytes × e_sram

GPU, per sample at batch size B (weights read from DRAM once per batch):

    compute  2·MACs × e_flop            DRAM  (weights·p/B + (inputs + outputs)·p) × e_dram

with p bytes per value. Every constant below carries its source and a (low, high) range for
the sensitivity sweep. What is left out: leakage and clocking, on-chip interconnect between
tiles, activation functions, the GPU's static power and utilization below peak (at batch 1
a GPU runs far below its peak FLOP efficiency; the e_flop range covers part of that).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from codesign.cim.config import CIMConfig, PCMConfig, RRAMConfig
from codesign.cim.crossbar import TileGrid
from codesign.cim.workloads import LayerWorkload

__all__ = [
    "EnergyConstant",
    "EnergyConstants",
    "LayerEnergy",
    "estimate_energy",
    "sensitivity",
    "energy_table",
    "sensitivity_table",
    "hermes_crosscheck",
    "CIM_PARTS",
]

CIM_PARTS = ("dac", "array", "adc", "digital", "buffer")


@dataclass(frozen=True)
class EnergyConstant:
    """One constant of the energy model: value, unit, sensitivity range and source."""

    value: float
    unit: str
    low: float
    high: float
    source: str


def _c(value: float, unit: str, low: float, high: float, source: str) -> EnergyConstant:
    return field(default_factory=lambda: EnergyConstant(value, unit, low, high, source))


@dataclass(frozen=True)
class EnergyConstants:
    """The constants of the energy estimate (each an EnergyConstant; override with ``replace``)."""

    read_voltage: EnergyConstant = _c(
        0.2, "V", 0.1, 0.4,
        "assumption: PCM is read at a few hundred mV, well below threshold switching "
        "(Le Gallo & Sebastian, J. Phys. D 53, 213002 (2020))")
    pwm_lsb: EnergyConstant = _c(
        1e-9, "s", 0.5e-9, 2e-9,
        "one PWM input step per cycle of the 1 GHz clock of IBM's HERMES PCM core "
        "(Khaddam-Aljameh et al., IEEE JSSC 57, 1027 (2022))")
    dac_per_bit: EnergyConstant = _c(
        0.39e-15, "J", 0.2e-15, 0.8e-15,
        "ISAAC (Shafiee et al., ISCA 2016): 1-bit DACs, 4 mW for 8x128 of them at a 100 ns "
        "crossbar cycle = 0.39 fJ per 1-bit conversion; a b-bit input costs b of them")
    adc_scale: EnergyConstant = _c(
        1.0, "x NeuroSim", 0.5, 50.0,
        "NeuroSim SAR-ADC model (DNN+NeuroSim V1.3, SarADC.cpp, 14 nm HP: "
        "(0.4710 b + 1.9529) uW for (b+1) ns, 51 fJ at 8 bits; Peng et al., IEDM 2019); "
        "high end = a measured 8-bit SAR ADC, 3.1 mW at 1.2 GS/s = 2.6 pJ (Kull et al., ISSCC 2013)")
    digital_per_output: EnergyConstant = _c(
        1.5e-12, "J", 0.5e-12, 3.0e-12,
        "affine rescale + accumulate of one partial sum in FP16: multiply 1.1 pJ + add 0.4 pJ "
        "(Horowitz, ISSCC 2014, 45 nm)")
    digital_per_input: EnergyConstant = _c(
        0.23e-12, "J", 0.1e-12, 0.5e-12,
        "input scaling per value and tile: 8-bit multiply 0.2 pJ + 8-bit compare (add) 0.03 pJ "
        "(Horowitz, ISSCC 2014, 45 nm)")
    sram_per_byte: EnergyConstant = _c(
        1.25e-12, "J", 0.6e-12, 2.5e-12,
        "activation buffers: 8 KB SRAM, 10 pJ per 64-bit access (32 KB: 20 pJ) "
        "(Horowitz, ISSCC 2014, 45 nm)")
    mean_abs_input: EnergyConstant = _c(
        0.25, "of full scale", 0.1, 0.5,
        "assumption: mean |x| / max|x| of an input vector (DAC utilization); measured when "
        "energy is estimated from a model and data")
    mean_abs_weight: EnergyConstant = _c(
        0.2, "of g_max", 0.1, 0.4,
        "assumption: mean |w| / tile max of trained weights (Gaussian-like weights clipped near "
        "4 sigma); measured when energy is estimated from a model")
    gpu_per_flop: EnergyConstant = _c(
        1.28e-12, "J", 0.64e-12, 20.5e-12,
        "NVIDIA A100 SXM4 datasheet: 400 W TDP at 312 TFLOPS dense FP16 Tensor Core; high end "
        "= 400 W at 19.5 TFLOPS FP32 (no Tensor Cores, or low utilization)")
    gpu_dram_per_byte: EnergyConstant = _c(
        31.2e-12, "J", 15.6e-12, 62.4e-12,
        "HBM2 access energy 3.9 pJ/bit (O'Connor et al., 'Fine-grained DRAM', MICRO 2017)")

    def replace(self, **values: float) -> EnergyConstants:
        """A copy with some constants' values changed (their ranges and sources kept)."""
        changes = {}
        for name, value in values.items():
            if name not in self.names():
                raise ValueError(f"unknown energy constant {name!r}: choose one of {', '.join(self.names())}")
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r}: must be a finite number >= 0")
            changes[name] = dataclasses.replace(getattr(self, name), value=float(value))
        return dataclasses.replace(self, **changes)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Names of the constants."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def value(self, name: str) -> float:
        """The value of one constant."""
        return getattr(self, name).value


@dataclass(frozen=True)
class LayerEnergy:
    """Energy of one layer per input sample, in joules."""

    name: str
    workload: LayerWorkload
    cim: dict[str, float]  # per part of CIM_PARTS
    gpu_compute: float
    gpu_dram: float

    @property
    def cim_total(self) -> float:
        """All CIM parts."""
        return sum(self.cim.values())

    @property
    def gpu_total(self) -> float:
        """GPU compute + DRAM."""
        return self.gpu_compute + self.gpu_dram


def _device_g_max_us(config: CIMConfig) -> float:
    device = config.device
    if isinstance(device, (PCMConfig, RRAMConfig)):
        return device.g_max_us
    return PCMConfig().g_max_us  # ideal / mismatch: assume PCM devices behind the normalized weights


def _bits(config: CIMConfig) -> tuple[int, int]:
    conv = config.converter
    if conv.dac_bits is None or conv.adc_bits is None:
        raise ValueError("energy needs finite converter resolutions: set dac_bits and adc_bits")
    return conv.dac_bits, conv.adc_bits


def estimate_energy(workloads: Sequence[LayerWorkload], config: CIMConfig | None = None,
                    constants: EnergyConstants | None = None, batch: int = 1,
                    gpu_bytes_per_value: int = 2) -> list[LayerEnergy]:
    """Per-layer CIM and GPU energy per sample (an estimate; see the module docstring)."""
    config = config if config is not None else CIMConfig()
    k = constants if constants is not None else EnergyConstants()
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r}: must be a positive integer")
    if gpu_bytes_per_value not in (1, 2, 4):
        raise ValueError(f"gpu_bytes_per_value={gpu_bytes_per_value!r}: expected 1, 2 or 4")
    dac_bits, adc_bits = _bits(config)
    g_max = _device_g_max_us(config) * 1e-6
    pwm_steps = 2 ** (dac_bits - 1) - 1
    adc_one = k.value("adc_scale") * (0.4710 * adc_bits + 1.9529) * 1e-6 * (adc_bits + 1) * 1e-9
    rows = []
    for w in workloads:
        grid = TileGrid(w.fan_in, w.fan_out, config.tile.rows, config.tile.cols)
        x_mean = w.mean_abs_input if w.mean_abs_input is not None else k.value("mean_abs_input")
        w_mean = w.mean_abs_weight if w.mean_abs_weight is not None else k.value("mean_abs_weight")
        dac_conversions = w.mvms * w.fan_in * grid.n_col_tiles
        adc_conversions = w.mvms * w.fan_out * grid.n_row_tiles
        device_energy = (k.value("read_voltage") ** 2 * g_max * w_mean * x_mean * pwm_steps * k.value("pwm_lsb"))
        cim = {
            "dac": dac_conversions * dac_bits * k.value("dac_per_bit"),
            "array": w.macs * device_energy,
            "adc": adc_conversions * adc_one,
            "digital": adc_conversions * k.value("digital_per_output") + dac_conversions * k.value("digital_per_input"),
            "buffer": (w.mvms * w.fan_in * math.ceil(dac_bits / 8) + w.output_values * 2) * k.value("sram_per_byte"),
        }
        weight_bytes = w.fan_in * w.fan_out * gpu_bytes_per_value
        dram_bytes = weight_bytes / batch + (w.input_values + w.output_values) * gpu_bytes_per_value
        rows.append(LayerEnergy(w.name, w, cim, 2 * w.macs * k.value("gpu_per_flop"),
                                dram_bytes * k.value("gpu_dram_per_byte")))
    return rows


def _totals(rows: Sequence[LayerEnergy]) -> tuple[float, float]:
    return sum(r.cim_total for r in rows), sum(r.gpu_total for r in rows)


def sensitivity(workloads: Sequence[LayerWorkload], config: CIMConfig | None = None,
                constants: EnergyConstants | None = None, batch: int = 1,
                gpu_bytes_per_value: int = 2) -> list[tuple[str, float, float, float, float]]:
    """Tornado sweep: per constant (name, CIM total at low, at high, GPU total at low, at high), widest CIM swing first."""
    k = constants if constants is not None else EnergyConstants()
    out = []
    for name in k.names():
        c = getattr(k, name)
        lo = _totals(estimate_energy(workloads, config, k.replace(**{name: c.low}), batch, gpu_bytes_per_value))
        hi = _totals(estimate_energy(workloads, config, k.replace(**{name: c.high}), batch, gpu_bytes_per_value))
        out.append((name, lo[0], hi[0], lo[1], hi[1]))
    out.sort(key=lambda r: -(abs(r[2] - r[1]) + abs(r[4] - r[3])))
    return out


def _fmt(joules: float) -> str:
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9), ("pJ", 1e-12)):
        if joules >= scale:
            return f"{joules / scale:7.3g} {unit}"
    return f"{joules / 1e-15:7.3g} fJ"


def energy_table(rows: Sequence[LayerEnergy]) -> str:
    """A plain-text per-layer table (per sample), with totals."""
    head = f"{'layer':14s} {'MACs':>10s} " + " ".join(f"{p:>10s}" for p in CIM_PARTS)
    head += f" {'CIM total':>10s} {'GPU comp':>10s} {'GPU DRAM':>10s} {'GPU total':>10s} {'GPU/CIM':>8s}"
    lines = [head, "-" * len(head)]
    for r in rows:
        label = f"{r.name} {r.workload.kind}"
        lines.append(
            f"{label[:14]:14s} {r.workload.macs:10d} " + " ".join(f"{_fmt(r.cim[p]):>10s}" for p in CIM_PARTS)
            + f" {_fmt(r.cim_total):>10s} {_fmt(r.gpu_compute):>10s} {_fmt(r.gpu_dram):>10s}"
            f" {_fmt(r.gpu_total):>10s} {r.gpu_total / r.cim_total:8.3g}"
        )
    cim_parts = {p: sum(r.cim[p] for r in rows) for p in CIM_PARTS}
    cim_total, gpu_total = _totals(rows)
    lines.append("-" * len(head))
    lines.append(
        f"{'total':14s} {sum(r.workload.macs for r in rows):10d} "
        + " ".join(f"{_fmt(cim_parts[p]):>10s}" for p in CIM_PARTS)
        + f" {_fmt(cim_total):>10s} {_fmt(sum(r.gpu_compute for r in rows)):>10s}"
        f" {_fmt(sum(r.gpu_dram for r in rows)):>10s} {_fmt(gpu_total):>10s} {gpu_total / cim_total:8.3g}"
    )
    return "\n".join(lines)


def sensitivity_table(sweep: Sequence[tuple[str, float, float, float, float]], constants: EnergyConstants | None = None) -> str:
    """The tornado sweep as text: each constant at its low and high value, totals per sample."""
    k = constants if constants is not None else EnergyConstants()
    head = (f"{'constant':20s} {'low':>10s} {'high':>10s} {'CIM @low':>10s} {'CIM @high':>10s}"
            f" {'GPU @low':>10s} {'GPU @high':>10s} {'GPU/CIM range':>16s}")
    lines = [head, "-" * len(head)]
    for name, c_lo, c_hi, g_lo, g_hi in sweep:
        c = getattr(k, name)
        ratios = sorted((g_lo / c_lo, g_hi / c_hi))
        lines.append(
            f"{name:20s} {c.low:10.3g} {c.high:10.3g} {_fmt(c_lo):>10s} {_fmt(c_hi):>10s}"
            f" {_fmt(g_lo):>10s} {_fmt(g_hi):>10s} {ratios[0]:7.3g}..{ratios[1]:<7.3g}"
        )
    return "\n".join(lines)


def hermes_crosscheck(config: CIMConfig | None = None, constants: EnergyConstants | None = None) -> tuple[float, float]:
    """(this model, measured) energy of one full 256×256 8-bit MVM; measured: 9.76 TOPS/W (Le Gallo et al., Nat. Electron. 2023)."""
    config = (config if config is not None else CIMConfig()).replace(tile=CIMConfig().tile)
    one_tile = LayerWorkload("256x256", "linear", 256, 256, 1, 256, 256)
    model = estimate_energy([one_tile], config, constants)[0].cim_total
    measured = 2 * 256 * 256 / 9.76e12  # two operations per MAC, J per MVM at 9.76 TOPS/W
    return model, measured
