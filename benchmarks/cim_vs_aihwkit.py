"""codesign.cim beside IBM's aihwkit-lightning (hardware-aware training) and aihwkit (PCM drift), run for real.

    nice -n 10 python benchmarks/cim_vs_aihwkit.py --part hwa [--dataset digits --model mlp --seeds 0 1 2 3 4 --epochs 20]
    nice -n 10 python benchmarks/cim_vs_aihwkit.py --part speed [--dataset mnist5k]   (step time only)
    nice -n 10 python benchmarks/cim_vs_aihwkit.py --part drift [--chips 20]   (needs aihwkit, built from its sdist)

``hwa``: the MLP (flatten, 256, 128, 10) or the CNN (--model cnn) of docs/cim_dwp.md on the fixed splits, trained once per seed by each
tool with matched knobs and everything else equal (initialisation, data order, Adam at lr 2e-3, batch 64):

- additive Gaussian weight noise, σ = --w-noise times the largest |w| of the weight's tile (one new draw per
  mini-batch): aihwkit-lightning's ``WeightNoiseInjectionType.ADD_NORMAL`` on 256-input slices; codesign's
  ``MismatchConfig(kind="additive")`` chip drawn by ``sample_model`` on 256×256 tiles;
- weight clipping at --clip-sigma standard deviations of the layer's weights after every optimizer step
  (lightning's ``LAYER_GAUSSIAN`` clip, through its ``AnalogOptimizer``; codesign has no clip option, so the
  loop clamps the float weights with the same formula);
- an 8-bit DAC on inputs scaled by their own max |x| (lightning: dynamic input range, ``inp_res`` 254 steps) and
  an 8-bit ADC saturating at ±12 full-scale units (``out_res`` 254, ``out_bound`` 12).

Reported per tool: TEST accuracy of the trained float weights (mean ± std over seeds), wall seconds per training
step (the median over seeds of each run's median, the tools' runs interleaved in one process, one torch thread;
and ``speed``: both tools' steps in alternating blocks of 20 on the same mini-batches, which a changing load on a
shared machine moves less), the outputs beyond the ADC range per layer, and every network read on --chips programmed
PCM chips of codesign's default chip (8-bit DAC/ADC) at 1 s, 1 day and 1 year, with and without global drift
compensation. ``--ablate-adc-gradient`` adds lightning with its ADC clamp's gradient passed straight through (as
codesign's HWA backward passed it before it stopped the gradient of saturated outputs). ``--bits 0`` makes both tools'
converters ideal.

``drift``: every trained network of ``hwa`` (the same float weights, bit for bit) converted once to codesign's
CIM layers and once to aihwkit's AnalogSequential with the InferenceRPUConfig that ``to_aihwkit_rpu_config``
makes of the same CIMConfig (PCMLikeNoiseModel, 8-bit DAC/ADC at ±12, no bound management, weights scaled per
tile), each read on --chips chips at 1 s, 1 h, 1 day, 1 month and 1 year with and without global drift
compensation; then aihwkit's own defaults (bound management, unscaled weights, 7/9 bits, out_noise 0.06).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch import nn

from codesign.cim import CIMConfig, ConverterConfig, MismatchConfig, TileConfig, chip_inputs, chip_twin, sample_model
from codesign.cim.dwp.data import load_dataset
from codesign.cim.dwp.evaluate import chip_accuracies
from codesign.cim.dwp.models import build_model
from codesign.resources import cache_dir

HWA_TIMES = {"1 s": 1.0, "1 day": 86400.0, "1 year": 365.25 * 86400.0}
DRIFT_TIMES = {"1 s": 1.0, "1 h": 3600.0, "1 day": 86400.0, "1 month": 30 * 86400.0, "1 year": 365.25 * 86400.0}


def _lightning_config(w_noise: float, clip_sigma: float, bits: int):  # noqa: ANN202
    from aihwkit_lightning.simulator.configs import (
        TorchInferenceRPUConfig,
        WeightClipType,
        WeightNoiseInjectionType,
    )

    rpu = TorchInferenceRPUConfig()
    rpu.forward.inp_res = 2**bits - 2 if bits else -1  # bits 0: ideal converters
    rpu.forward.out_res = 2**bits - 2 if bits else -1
    rpu.forward.out_bound = 12.0 if bits else 0.0
    rpu.forward.out_noise = 0.0
    rpu.pre_post.input_range.enable = True
    rpu.pre_post.input_range.dynamic = True  # each input vector scaled by its own max |x|, as codesign's DAC
    rpu.modifier.noise_type = WeightNoiseInjectionType.ADD_NORMAL
    rpu.modifier.std_dev = w_noise
    rpu.clip.type = WeightClipType.LAYER_GAUSSIAN
    rpu.clip.sigma = clip_sigma
    rpu.mapping.max_input_size = 256
    return rpu


def _codesign_config(w_noise: float, bits: int) -> CIMConfig:
    return CIMConfig(device=MismatchConfig(sigma=w_noise, kind="additive"),
                     converter=ConverterConfig(dac_bits=bits or None, adc_bits=bits or None, adc_range=12.0),
                     tile=TileConfig(rows=256, cols=256), drift_compensation="none")


def _clip_(model: nn.Module, sigma: float) -> None:
    """Lightning's LAYER_GAUSSIAN clip: every weight within ±sigma·std of its layer's weights."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                bound = sigma * m.weight.std()
                m.weight.clamp_(-bound, bound)


def _plain_copy(model: nn.Module, template: nn.Module) -> nn.Module:
    """A plain torch model with the trained weights (lightning's analog layers keep weight and bias as nn.Linear)."""
    state = {k: v for k, v in model.state_dict().items() if k.endswith(("weight", "bias"))}
    plain = template
    plain.load_state_dict({k.removeprefix("module."): v for k, v in state.items()}, strict=True)
    return plain.eval()


class _StraightThroughClamp(torch.autograd.Function):
    """clamp in the forward, the identity in the backward (codesign's ADC gradient)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        return torch.clamp(x, lo, hi)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:  # noqa: ANN001
        return grad, None, None


@contextlib.contextmanager
def _lightning_adc_straight_through() -> Iterator[None]:
    """The ablation: lightning's ADC saturation (its only tensor-bound clamp) passes the gradient straight through."""
    from aihwkit_lightning.nn.modules.torch_utils import torch_linear

    original = torch_linear.clamp

    def clamp(x: torch.Tensor, min=None, max=None) -> torch.Tensor:  # noqa: A002, ANN001
        if isinstance(min, torch.Tensor) and isinstance(max, torch.Tensor) and x.requires_grad:
            return _StraightThroughClamp.apply(x, min, max)
        return original(x, min=min, max=max)

    torch_linear.clamp = clamp
    try:
        yield
    finally:
        torch_linear.clamp = original


def _trainer(tool: str, seed: int, args: argparse.Namespace, shape: tuple[int, int, int]) -> tuple[Callable, nn.Module]:
    """One tool's training step (x, y, step index) on a new seeded MLP, and the module that holds its weights."""
    torch.manual_seed(seed)
    model = build_model(args.model, shape, 10)
    if tool == "lightning":
        from aihwkit_lightning.nn.conversion import convert_to_analog
        from aihwkit_lightning.optim import AnalogOptimizer

        net = convert_to_analog(model, _lightning_config(args.w_noise, args.clip_sigma, args.bits))
        opt = AnalogOptimizer(torch.optim.Adam, net.analog_layers, net.parameters(), lr=args.lr)
        net.train()

        def lightning_step(x: torch.Tensor, y: torch.Tensor, i: int) -> None:
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()  # the clip runs in the optimizer's post-step hook
        return lightning_step, net
    twin = chip_twin(model, _codesign_config(args.w_noise, args.bits))
    adam = torch.optim.Adam(model.parameters(), lr=args.lr)

    def codesign_step(x: torch.Tensor, y: torch.Tensor, i: int) -> None:
        sample_model(twin, seed=seed * 1_000_003 + i, t_seconds=0.0, n_chips=1)
        loss = nn.functional.cross_entropy(twin(chip_inputs(x, 1)), y)
        adam.zero_grad()
        loss.backward()
        adam.step()
        _clip_(model, args.clip_sigma)
    return codesign_step, model


def train_one(tool: str, seed: int, args: argparse.Namespace, data) -> tuple[nn.Module, list[float]]:  # noqa: ANN001
    """One HWA network of one tool: the trained plain model and the wall seconds of every step."""
    if tool == "lightning-ste":
        with _lightning_adc_straight_through():
            return train_one("lightning", seed, args, data)
    step, trained = _trainer(tool, seed, args, data.image_shape)
    gen = torch.Generator().manual_seed(seed)
    x_fit, y_fit = data.fit.x, data.fit.y
    times, i = [], 0
    for _ in range(args.epochs):
        order = torch.randperm(len(y_fit), generator=gen)
        for s in range(0, len(order), args.batch):
            idx = order[s : s + args.batch]
            start = time.perf_counter()
            step(x_fit[idx], y_fit[idx], i)
            times.append(time.perf_counter() - start)
            i += 1
    return _plain_copy(trained, build_model(args.model, data.image_shape, 10)), times


def run_speed(args: argparse.Namespace, data, blocks: int = 15, block_steps: int = 20) -> dict:  # noqa: ANN001
    """Seconds per training step of each tool, in alternating blocks of back-to-back steps (after a warm-up block)."""
    tools = ("codesign", "lightning")
    steps = {t: _trainer(t, args.seeds[0], args, data.image_shape)[0] for t in tools}
    gen = torch.Generator().manual_seed(0)
    batches = [torch.randint(len(data.fit.y), (args.batch,), generator=gen) for _ in range(block_steps)]
    per_step: dict[str, list[float]] = {t: [] for t in tools}
    for block in range(blocks + 1):
        for tool in (tools if block % 2 == 0 else tools[::-1]):
            start = time.perf_counter()
            for j, idx in enumerate(batches):
                steps[tool](data.fit.x[idx], data.fit.y[idx], block * block_steps + j)
            if block:  # block 0 warms up (codesign's first draw builds its sampling table)
                per_step[tool].append((time.perf_counter() - start) / block_steps)
    return {"blocks": per_step, "median": {t: statistics.median(v) for t, v in per_step.items()}}


def saturated_fractions(model: nn.Module, x: torch.Tensor, adc_range: float = 12.0) -> list[float]:
    """Per Linear or Conv2d layer, the fraction of outputs beyond the ADC's ±adc_range (one full-scale input on one
    full-scale weight: the layer's largest |w| times each input vector's largest |x|, a convolution's vector being
    its window; the layer read as one tile)."""
    inputs: list[tuple[nn.Module, torch.Tensor]] = []
    layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    hooks = [m.register_forward_pre_hook(lambda m, a: inputs.append((m, a[0]))) for m in layers]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    fractions = []
    with torch.no_grad():
        for layer, h in inputs:
            if isinstance(layer, nn.Conv2d):
                h = nn.functional.unfold(h, layer.kernel_size, layer.dilation, layer.padding, layer.stride)
                h = h.transpose(1, 2).reshape(-1, h.shape[1])
            w = layer.weight.reshape(layer.weight.shape[0], -1)
            z = h.flatten(1) @ w.T
            bound = adc_range * w.abs().max() * h.flatten(1).abs().amax(1, keepdim=True)
            fractions.append(float((z.abs() > bound).float().mean()))
    return fractions


def _accuracy(model: nn.Module, split) -> float:  # noqa: ANN001
    with torch.no_grad():
        return float((model(split.x).argmax(-1) == split.y).float().mean())


def _ms(values: list[float]) -> str:
    if len(values) < 2:
        return f"{100 * values[0]:.1f}"
    return f"{100 * statistics.mean(values):.1f} ± {100 * statistics.stdev(values):.1f}"


def run_hwa(args: argparse.Namespace, data) -> dict:  # noqa: ANN001
    """Train both tools' networks (seeds interleaved), time their steps and read them on codesign's PCM chips."""
    tools = ("codesign", "lightning", "lightning-ste") if args.ablate_adc_gradient else ("codesign", "lightning")
    result: dict = {"runs": [], "chips": args.chips}
    for seed in args.seeds:
        for tool in (tools if seed % 2 == 0 else tools[::-1]):  # alternate who goes first
            model, times = train_one(tool, seed, args, data)
            args.work.mkdir(parents=True, exist_ok=True)
            torch.save(model.state_dict(), args.work / f"{args.dataset}_{args.model}_{tool}_seed{seed}.pt")
            pcm = {}
            for comp in (True, False):
                config = CIMConfig(drift_compensation=comp)
                pcm["compensated" if comp else "uncompensated"] = {
                    label: float(chip_accuracies(model, config, data.test, args.chips, seed=1000 + seed, t_seconds=t).mean())
                    for label, t in HWA_TIMES.items()}
            run = {"tool": tool, "seed": seed, "float_accuracy": _accuracy(model, data.test),
                   "saturated_fit": saturated_fractions(model, data.fit.x),
                   "step_seconds_median": statistics.median(times), "steps": len(times), "pcm": pcm}
            print(json.dumps(run), file=sys.stderr)
            result["runs"].append(run)
    return result


def _paired(a: list[float], b: list[float]) -> str:
    """Mean of the paired differences a − b in points ± its 95 % t-interval."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    half = _t95(len(diffs) - 1) * statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan
    return f"{100 * statistics.mean(diffs):+.2f} ± {100 * half:.2f}"


def hwa_report(result: dict, command: str) -> str:
    """The markdown tables of the hwa part."""
    runs = result["runs"]
    names = {"codesign": "codesign", "lightning": "aihwkit-lightning", "lightning-ste": "lightning, straight-through ADC"}
    tools = [t for t in names if any(r["tool"] == t for r in runs)]
    by = {t: sorted((r for r in runs if r["tool"] == t), key=lambda r: r["seed"]) for t in tools}
    step = {t: statistics.median(r["step_seconds_median"] for r in by[t]) for t in tools}
    acc = {t: [r["float_accuracy"] for r in by[t]] for t in tools}
    L = [f"Generated by `{command}`.", "",
         "| | " + " | ".join(names[t] for t in tools) + " |", "|---|" + "---:|" * len(tools),
         "| TEST accuracy of the trained weights, % | " + " | ".join(_ms(acc[t]) for t in tools) + " |",
         "| codesign − this tool, paired by seed (points, 95 % interval) | | "
         + " | ".join(_paired(acc["codesign"], acc[t]) for t in tools[1:]) + " |",
         "| ms per training step (median over seeds of each run's median) | "
         + " | ".join(f"{1e3 * step[t]:.2f}" for t in tools) + " |",
         "| codesign's step time / this tool's | | " + " | ".join(f"{step['codesign'] / step[t]:.2f}×" for t in tools[1:]) + " |",
    ]
    if "speed" in result:
        med = result["speed"]["median"]
        L.append(f"| ms per step, alternating blocks of 20 steps (median of 15 blocks) | {1e3 * med['codesign']:.2f} "
                 f"| {1e3 * med['lightning']:.2f} |" + (" |" if len(tools) > 2 else ""))
        L.append(f"| codesign / lightning, alternating blocks | | {med['codesign'] / med['lightning']:.2f}× |"
                 + (" |" if len(tools) > 2 else ""))
    if all("saturated_fit" in r for r in runs):
        L.append("| outputs beyond the ADC range on the fit split, % per layer (range over seeds) | " + " | ".join(
             ", ".join(f"{100 * min(r['saturated_fit'][i] for r in by[t]):.1f}-{100 * max(r['saturated_fit'][i] for r in by[t]):.1f}"
                       for i in range(len(by[t][0]["saturated_fit"]))) for t in tools) + " |")
    L += ["", "Every network on codesign's default PCM chip (8-bit DAC/ADC), TEST accuracy %, mean ± std over seeds of the "
         f"mean over {result.get('chips', 20)} chips:", "",
         "| compensation | time | " + " | ".join(f"{names[t]}-trained" for t in tools) + " |",
         "|---|---|" + "---:|" * len(tools)]
    for comp in ("compensated", "uncompensated"):
        for label in HWA_TIMES:
            L.append(f"| {comp} | {label} | " + " | ".join(_ms([r["pcm"][comp][label] for r in by[t]]) for t in tools) + " |")
    return "\n".join(L) + "\n"


def _aihwkit_accuracies(model: nn.Module, rpu, split, n_chips: int, seed: int) -> torch.Tensor:  # noqa: ANN001
    """aihwkit: accuracy (times, chips); each chip programmed once (torch seeded per chip) and drifted to every time."""
    from aihwkit.nn.conversion import convert_to_analog

    analog = convert_to_analog(model, rpu).eval()
    acc = torch.zeros(len(DRIFT_TIMES), n_chips)
    with torch.no_grad():
        for chip in range(n_chips):
            torch.manual_seed(seed * 10_007 + chip)
            analog.program_analog_weights()
            for i, t in enumerate(DRIFT_TIMES.values()):
                analog.drift_analog_weights(t)
                acc[i, chip] = (analog(split.x).argmax(-1) == split.y).float().mean()
    return acc


def _codesign_accuracies(model: nn.Module, config: CIMConfig, split, n_chips: int, seed: int) -> torch.Tensor:  # noqa: ANN001
    """codesign: accuracy (times, chips) on the same n_chips chips at every time."""
    return torch.stack([chip_accuracies(model, config, split, n_chips, seed=seed, t_seconds=t) for t in DRIFT_TIMES.values()])


def drift_settings() -> dict[str, tuple[CIMConfig, object]]:
    """Each compared setting: codesign's CIMConfig and aihwkit's InferenceRPUConfig of the same chip."""
    from aihwkit.simulator.configs import InferenceRPUConfig
    from aihwkit.simulator.parameters.enums import BoundManagementType

    from codesign.cim.aihwkit_config import cim_config_from_aihwkit, to_aihwkit_rpu_config

    settings: dict[str, tuple[CIMConfig, object]] = {}
    for comp in ("global", "none"):
        config = CIMConfig(drift_compensation=comp)  # PCM, 8-bit DAC/ADC at ±12, 256×256 tiles
        settings[f"matched, {comp}"] = (config, to_aihwkit_rpu_config(config))
    for comp in (True, False):
        rpu = InferenceRPUConfig()  # aihwkit's defaults; codesign reads them with the two fields it lacks ignored
        if not comp:
            rpu.drift_compensation = None
        config = cim_config_from_aihwkit(rpu, ignore=("forward.bound_management", "mapping.weight_scaling_omega"))
        settings[f"aihwkit defaults, {'global' if comp else 'none'}"] = (config, rpu)
        for name, change in (("weight_scaling_omega=1", lambda r: setattr(r.mapping, "weight_scaling_omega", 1.0)),
                             ("bound_management=NONE",
                              lambda r: setattr(r.forward, "bound_management", BoundManagementType.NONE))):
            changed = InferenceRPUConfig()
            if not comp:
                changed.drift_compensation = None
            change(changed)
            settings[f"aihwkit defaults + {name}, {'global' if comp else 'none'}"] = (config, changed)
        # with 392-input tiles both split MNIST's 784 inputs alike (392 + 392; at 512 aihwkit splits 392 + 392 and
        # codesign fills 512 + 272): the tile split, apart from everything else
        same_split = InferenceRPUConfig()
        same_split.mapping.weight_scaling_omega = 1.0
        same_split.mapping.max_input_size = 392
        if not comp:
            same_split.drift_compensation = None
        settings[f"aihwkit defaults + weight_scaling_omega=1 + max_input_size=392, {'global' if comp else 'none'}"] = (
            cim_config_from_aihwkit(same_split, ignore=("forward.bound_management",)), same_split)
        no_bm = copy.deepcopy(same_split)
        no_bm.forward.bound_management = BoundManagementType.NONE  # then every field is codesign's
        settings[f"aihwkit defaults + weight_scaling_omega=1 + max_input_size=392 + bound_management=NONE, "
                 f"{'global' if comp else 'none'}"] = (cim_config_from_aihwkit(no_bm), no_bm)
    return settings


def run_drift(args: argparse.Namespace, data) -> dict:  # noqa: ANN001
    """Every trained network of the hwa part on codesign's and aihwkit's chips of each setting."""
    result: dict = {"runs": []}
    wanted = set(args.settings) if args.settings else None
    for name, (config, rpu) in drift_settings().items():
        if wanted is not None and name not in wanted:
            continue
        for tool in ("codesign", "lightning"):
            for seed in args.seeds:
                path = args.work / f"{args.dataset}_{args.model}_{tool}_seed{seed}.pt"
                if not path.is_file():
                    raise SystemExit(f"error: {path} is missing: run --part hwa first (same --dataset, --seeds)")
                model = build_model(args.model, data.image_shape, 10)
                model.load_state_dict(torch.load(path))
                model.eval()
                start = time.perf_counter()
                ours = _codesign_accuracies(model, config, data.test, args.chips, seed=2000 + seed)
                mid = time.perf_counter()
                theirs = _aihwkit_accuracies(model, rpu, data.test, args.chips, seed=3000 + seed)
                end = time.perf_counter()
                run = {"setting": name, "trained_by": tool, "seed": seed, "codesign": ours.tolist(), "aihwkit": theirs.tolist(),
                       "codesign_seconds": mid - start, "aihwkit_seconds": end - mid}
                print(json.dumps({k: v for k, v in run.items() if k not in ("codesign", "aihwkit")}), file=sys.stderr)
                result["runs"].append(run)
    return result


# two-sided 95 % Student t quantiles by degrees of freedom
_T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 14: 2.14, 19: 2.09}


def _t95(df: int) -> float:
    return _T95.get(df, 2.09 if df < 19 else 1.96 + 2.4 / df)


def drift_report(result: dict, command: str) -> str:
    """Accuracy per setting and time: codesign and aihwkit side by side, and their difference paired by network."""
    L = [f"Generated by `{command}`.", "",
         "TEST accuracy %, mean ± std over all chips of all networks; the difference is codesign − aihwkit of each "
         "network's mean over chips, mean over networks ± its 95 % t-interval.", "",
         "| setting | time | codesign | aihwkit | codesign − aihwkit |", "|---|---|---:|---:|---:|"]
    settings = list(dict.fromkeys(r["setting"] for r in result["runs"]))
    for name in settings:
        runs = [r for r in result["runs"] if r["setting"] == name]
        for i, label in enumerate(DRIFT_TIMES):
            ours = [a for r in runs for a in r["codesign"][i]]
            theirs = [a for r in runs for a in r["aihwkit"][i]]
            diffs = [statistics.mean(r["codesign"][i]) - statistics.mean(r["aihwkit"][i]) for r in runs]
            half = _t95(len(diffs) - 1) * statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan
            L.append(f"| {name} | {label} | {_ms(ours)} | {_ms(theirs)} | {100 * statistics.mean(diffs):+.2f} ± {100 * half:.2f} |")
    runs = result["runs"]
    L += ["", f"Wall time to read one network on {len(runs[0]['codesign'][0])} chips at {len(DRIFT_TIMES)} times (median over "
          f"{len(runs)} networks × settings): codesign {statistics.median(r['codesign_seconds'] for r in runs):.1f} s, "
          f"aihwkit {statistics.median(r['aihwkit_seconds'] for r in runs):.1f} s."]
    return "\n".join(L) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("hwa", "speed", "drift"), default="hwa")
    parser.add_argument("--dataset", choices=("digits", "mnist5k"), default="digits")
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp", help="the network of docs/cim_dwp.md")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--w-noise", type=float, default=0.05, help="additive weight noise, times the tile's max |w|")
    parser.add_argument("--clip-sigma", type=float, default=2.5, help="weight clip, in std of the layer's weights")
    parser.add_argument("--bits", type=int, default=8, help="DAC and ADC bits")
    parser.add_argument("--chips", type=int, default=20)
    parser.add_argument("--ablate-adc-gradient", action="store_true",
                        help="hwa: also train lightning with its ADC saturation's gradient passed straight through")
    parser.add_argument("--settings", nargs="+", default=None, help="drift: only these settings (by name)")
    parser.add_argument("--work", type=Path, default=cache_dir() / "cim_vs_aihwkit",
                        help="where hwa keeps the trained networks that drift reads")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        if args.part in ("hwa", "speed"):
            import aihwkit_lightning  # noqa: F401
        else:
            import aihwkit  # noqa: F401
    except ImportError as exc:
        print(f"error: {exc.name} is not installed (docs/cim_vs_aihwkit.md gives the recipe)", file=sys.stderr)
        return 2
    data = load_dataset(args.dataset)
    command = "python benchmarks/cim_vs_aihwkit.py " + shlex.join(sys.argv[1:])
    if args.part == "hwa":
        result = run_hwa(args, data)
        result["speed"] = run_speed(args, data)
        text = hwa_report(result, command)
    elif args.part == "speed":
        result = run_speed(args, data)
        med = result["median"]
        text = (f"Generated by `{command}`.\n\nms per HWA step, alternating blocks of 20 steps (median of 15 blocks): "
                f"codesign {1e3 * med['codesign']:.2f}, aihwkit-lightning {1e3 * med['lightning']:.2f}, "
                f"ratio {med['codesign'] / med['lightning']:.2f}x\n")
    else:
        result = run_drift(args, data)
        text = drift_report(result, command)
    result["args"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.md:
        args.md.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
