"""Compress every linear layer of a model: calibration statistics, one method per run, size/error report, save/load.

    spec = MethodSpec("kmeans", bits=4)
    stats = collect_statistics(model, run_calibration, names, inputs=spec.needs_input_covariance)
    replacements, layers = compress_linears(model, spec, stats, names)
    with swapped(model, replacements): ...            # codesign.llm.swap; or replace_modules to keep them
    with swapped(model, replacements): save_compressed(model, out_dir)   # codesign.compress.checkpoint

Methods: int (symmetric, clipped), int-asym (min-max with zero point), kmeans (1..8 bits), vq (2 bits),
qer-plain / qer-scaled / srr (k-means base of the given bits + rank-R correction) and lowrank (Swift-SVD factors
with the memory of B bits per weight, see lowrank.py); the QAT methods kmeans-qat, int-qat and lcqat-vq (2 bits), optionally with WinQ,
are trained by codesign.compress.pipeline (they need the model's data) and exported to the same
formats. Sizes count stored bytes (packed codes, fp16 scales, codebooks, factors, bias).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass

import torch

from codesign.compress.block_tune import check_objective
from codesign.compress.gptq import SCALE_SEARCH_FACTORS, ErrorFeedbackConfig
from codesign.compress.linear import CompressConfig, QuantizedLinear
from codesign.compress.lowrank import LowRankLinear, swift_svd_compress
from codesign.compress.metrics import activation_error, relative_error
from codesign.compress.qat import QATConfig
from codesign.compress.qer import QERConfig
from codesign.compress.registry import config_from_dict, needs_covariance

__all__ = [
    "METHODS",
    "BITS",
    "MethodSpec",
    "CalibrationStats",
    "LayerReport",
    "collect_statistics",
    "compress_linears",
    "layer_reports",
]

METHODS = ("int", "int-asym", "kmeans", "vq", "qer-plain", "qer-scaled", "srr", "lowrank", "kmeans-qat", "int-qat", "lcqat-vq")
BITS = tuple(range(1, 9))  # every packing format (1, 2, 3, 4, 8 bits; 5-7 in the byte layout)
_QER = {"qer-plain": "plain", "qer-scaled": "scaled", "srr": "srr"}
_QAT = {"kmeans-qat": "kmeans", "int-qat": "int", "lcqat-vq": "vq"}
DEFAULT_QAT_STEPS = 40
DEFAULT_QAT_LR = 1e-4
_BLOCK = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.\d+$")


@dataclass(frozen=True)
class MethodSpec:
    """One compression method applied to every linear layer.

    method: one of METHODS. bits: 1..8 (vq: 2 only; lowrank: the memory budget in bits per weight).
    rank: columns of the low-rank correction (qer-* and srr only; default 32).
    group_size: weights per fp16 scale along the input dimension (int, kmeans, vq and the QER base).
    steps, lr, winq: QAT methods only: training steps (default 40), Adam learning rate (default 1e-4)
    and WinQ on top (codesign.compress.qat).
    error_feedback, act_order: choose the codes of the grid (or of Q + L R's base) by GPTQ-style error
    feedback under each layer's input covariance (codesign.compress.gptq), optionally in act order.
    scale_search, refit_scales: options of error feedback on scalar grids: search each group's scale
    over SCALE_SEARCH_FACTORS before it, refit the group scales by least squares after it;
    refit_rounds: rounds of feedback + refit (each on the last round's scales), with refit_scales.
    weighted_codebook: k-means grids with error feedback: Hessian-diagonal-weighted Lloyd levels.
    sequential: calibrate block by block, each block under the outputs of the quantized blocks
    before it (codesign.compress.sequential); for the methods that calibrate on inputs.
    block_tune: epochs of block-wise tuning of the stored group scales (and k-means levels) against the
    original block's outputs after error feedback (codesign.compress.block_tune; 0: off); implies sequential.
    block_objective: the tuning's objective, "normalized" (default) or "mse" (block_tune.OBJECTIVES).
    e2e_tune: epochs of end-to-end distillation of every layer's stored group scales (and k-means levels) to
    the original model's next-token distribution, after everything above (codesign.compress.e2e_tune; 0: off);
    scalar grids (int, int-asym, kmeans) of a causal LM.
    model_guard: srr on a causal LM: "" (off), or the objective ("nll" or "kl") on which the whole model must gain,
    on text held aside from calibration, for a unit of layers to keep SRR's preserved subspaces
    (codesign.compress.model_guard).
    """

    method: str
    bits: int
    rank: int | None = None
    group_size: int = 64
    steps: int | None = None
    lr: float | None = None
    winq: bool = False
    error_feedback: bool = False
    act_order: bool = False
    sequential: bool = False
    scale_search: bool = False
    refit_scales: bool = False
    refit_rounds: int = 1
    weighted_codebook: bool = False
    block_tune: int = 0
    block_objective: str = "normalized"
    e2e_tune: int = 0
    model_guard: str = ""

    def __post_init__(self) -> None:
        if self.model_guard not in ("", "nll", "kl"):
            raise ValueError(f"--model-guard takes nll or kl, got {self.model_guard!r}")
        if self.model_guard and (self.method != "srr" or self.sequential or self.block_tune):
            raise ValueError("--model-guard chooses SRR's preserved subspaces: it applies to srr without --sequential"
                             + ("" if self.method == "srr" else f", not {self.method!r}"))
        if isinstance(self.e2e_tune, bool) or not isinstance(self.e2e_tune, int) or self.e2e_tune < 0:
            raise ValueError(f"end-to-end tuning epochs must be a non-negative integer, got {self.e2e_tune!r}")
        if self.e2e_tune and self.method not in ("int", "int-asym", "kmeans"):
            raise ValueError(f"--e2e-tune applies to the scalar grids (int, int-asym, kmeans), not {self.method!r}")
        if isinstance(self.block_tune, bool) or not isinstance(self.block_tune, int) or self.block_tune < 0:
            raise ValueError(f"block-tune epochs must be a non-negative integer, got {self.block_tune!r}")
        if self.block_tune and (not self.error_feedback or self.method not in ("int", "int-asym", "kmeans")):
            raise ValueError("--block-tune is an option of --error-feedback on the scalar grids (int, int-asym, kmeans), "
                             f"not {self.method!r}" + ("" if self.error_feedback else " without it"))
        check_objective(self.block_objective)
        if self.block_tune:
            object.__setattr__(self, "sequential", True)  # the tuning runs inside the block-by-block pass
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}: choose one of {', '.join(METHODS)}")
        if isinstance(self.bits, bool) or self.bits not in BITS:
            raise ValueError(f"unsupported bits {self.bits!r}: choose one of {', '.join(map(str, BITS))}")
        if self.method in ("vq", "lcqat-vq") and self.bits != 2:
            raise ValueError(f"{self.method} is a 2-bit format, got bits {self.bits}")
        if isinstance(self.group_size, bool) or not isinstance(self.group_size, int) or self.group_size < 8 \
                or self.group_size % 8:
            raise ValueError(f"group size must be a positive multiple of 8, got {self.group_size!r}")
        if not self.is_qat and (self.steps is not None or self.lr is not None or self.winq):
            raise ValueError(f"--steps, --lr and --winq apply to the QAT methods ({', '.join(_QAT)}), "
                             f"not {self.method!r}")
        if self.steps is not None and (isinstance(self.steps, bool) or not isinstance(self.steps, int)
                                       or self.steps < 1):
            raise ValueError(f"steps must be a positive integer, got {self.steps!r}")
        if self.lr is not None and not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ValueError(f"learning rate must lie in (0, 1), got {self.lr!r}")
        if (self.error_feedback or self.act_order) and (self.is_qat or self.method == "lowrank"):
            raise ValueError(f"--error-feedback and --act-order apply to the post-training quantizers, not {self.method!r}")
        if self.act_order and not self.error_feedback:
            raise ValueError("--act-order is an option of --error-feedback")
        if self.act_order and self.method == "vq":
            raise ValueError("--act-order applies to scalar grids (a VQ vector's 4 columns stay together)")
        if (self.scale_search or self.refit_scales) and not self.error_feedback:
            raise ValueError("--scale-search and --refit-scales are options of --error-feedback")
        if isinstance(self.refit_rounds, bool) or not isinstance(self.refit_rounds, int) or self.refit_rounds < 1 \
                or (self.refit_rounds > 1 and not self.refit_scales):
            raise ValueError(f"refit rounds must be a positive integer, above 1 only with --refit-scales, "
                             f"got {self.refit_rounds!r}")
        if self.weighted_codebook and (not self.error_feedback or self.method in ("int", "int-asym", "vq")):
            raise ValueError("--weighted-codebook is an option of --error-feedback on the k-means grid "
                             f"(kmeans, qer-*, srr), not {self.method!r}" + ("" if self.error_feedback else " without it"))
        if (self.scale_search or self.refit_scales) and self.method == "vq":
            raise ValueError("--scale-search and --refit-scales apply to scalar grids, not vq")
        if self.sequential and not self.needs_input_covariance:
            raise ValueError("--sequential applies to the methods that calibrate on each layer's inputs "
                             f"(--error-feedback, qer-scaled, srr), not {self.method!r} as given")
        if self.rank is not None:
            if self.method not in _QER:
                raise ValueError(f"--rank applies to qer-plain, qer-scaled and srr, not {self.method!r}")
            if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 0:
                raise ValueError(f"rank must be a non-negative integer, got {self.rank!r}")

    @property
    def is_qat(self) -> bool:
        """A quantization-aware training method (trained on the model's data, then exported)."""
        return self.method in _QAT

    def qat_config(self) -> QATConfig:
        """The QATConfig of a QAT method (k-means refits its centroids every 10 steps; int keeps its grid, vq its codes)."""
        if not self.is_qat:
            raise ValueError(f"method {self.method!r} is not a QAT method")
        quantizer = _QAT[self.method]
        return QATConfig(quantizer, self.bits, self.group_size, refit_every=10 if quantizer == "kmeans" else 0,
                         winq=self.winq)

    @property
    def qat_steps(self) -> int:
        """Training steps of a QAT method."""
        return DEFAULT_QAT_STEPS if self.steps is None else self.steps

    @property
    def qat_lr(self) -> float:
        """Adam learning rate of a QAT method."""
        return DEFAULT_QAT_LR if self.lr is None else float(self.lr)

    @property
    def qer_rank(self) -> int:
        """The correction rank of a Q + L R method (32 unless given)."""
        return 32 if self.rank is None else self.rank

    @property
    def needs_input_covariance(self) -> bool:
        """Scaled QER, SRR and error feedback weight the error by E[x x^T] of each layer's input."""
        return not self.is_qat and self.method != "lowrank" and needs_covariance(self.layer_config())

    @property
    def needs_output_covariance(self) -> bool:
        """Swift-SVD projects onto the top eigenvectors of E[y y^T] of each layer's output."""
        return self.method == "lowrank"

    def layer_config(self) -> CompressConfig:
        """The quantizer config of one layer (not for lowrank)."""
        if self.method in _QER:
            return QERConfig(method=_QER[self.method], rank=self.qer_rank, base=self._grid("kmeans"))
        if self.method not in _GRIDS:
            raise ValueError(f"method {self.method!r} has no per-layer quantizer config")
        return self._grid(self.method)

    def _grid(self, quantizer: str) -> CompressConfig:
        grid = _grid_config(quantizer, self)
        if not self.error_feedback:
            return grid
        return ErrorFeedbackConfig(base=grid, act_order=self.act_order, refit_scales=self.refit_scales,
                                   refit_rounds=self.refit_rounds, weighted_codebook=self.weighted_codebook,
                                   scale_search=SCALE_SEARCH_FACTORS if self.scale_search else ())

    def check_layers(self, shapes: Mapping[str, tuple[int, int]]) -> None:
        """Fail early (before calibration) on a rank or group size the layers cannot take."""
        for name, (n, k) in shapes.items():
            if self.method in _QER and self.qer_rank > min(n, k):
                raise ValueError(
                    f"rank {self.qer_rank} is larger than layer {name} [{n}x{k}] allows (min(N, K) = {min(n, k)})"
                )
            if self.method != "lowrank" and k % self.group_size:
                raise ValueError(f"group size {self.group_size} does not divide layer {name}'s input size {k}")


_GRIDS = ("int", "int-asym", "kmeans", "vq")  # methods that are a registered one-shot quantizer of the same name


def _grid_config(quantizer: str, spec: MethodSpec) -> CompressConfig:
    """The registered quantizer's config at the spec's bits and group size (fields it lacks are left out)."""
    fields = {"bits": spec.bits, "group_size": spec.group_size}
    probe = config_from_dict({"quantizer": quantizer})
    known = {f.name for f in dataclasses.fields(probe)}
    return config_from_dict({"quantizer": quantizer, **{k: v for k, v in fields.items() if k in known}})


@dataclass
class CalibrationStats:
    """Per-layer second moments of inputs / outputs (float64) and per-block importance (1 - cos(in, out))."""

    input_cov: dict[str, torch.Tensor]
    output_cov: dict[str, torch.Tensor]
    block_importance: dict[str, float]
    n_rows: int


@dataclass(frozen=True)
class LayerReport:
    """What compressing one layer produced: stored bytes (fp16_bytes: the weight in fp16, bias as is), errors, seconds."""

    name: str
    shape: tuple[int, int]
    bytes: int
    fp16_bytes: int
    relative_error: float
    activation_error: float | None
    seconds: float


def _linear_names(model: torch.nn.Module, names: Iterable[str] | None) -> list[str]:
    if names is not None:
        return list(names)
    return [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]


@torch.no_grad()
def collect_statistics(
    model: torch.nn.Module,
    run: Callable[[], None],
    names: Iterable[str],
    inputs: bool = True,
    outputs: bool = False,
    blocks: bool = False,
) -> CalibrationStats:
    """Run `run()` (forward passes over calibration data) with hooks accumulating the named linears' statistics."""
    names = list(names)
    in_sum: dict[str, torch.Tensor] = {}
    out_sum: dict[str, torch.Tensor] = {}
    rows: dict[str, int] = {}
    cos_sum: dict[str, float] = {}
    cos_count: dict[str, int] = {}
    hooks = []

    def linear_hook(name):
        def hook(module, args, output):
            # one batch's sum in float32 (exact enough for a few thousand rows, half the time of float64),
            # accumulated over batches in float64
            x = args[0].detach().reshape(-1, args[0].shape[-1]).float()
            rows[name] = rows.get(name, 0) + x.shape[0]
            if inputs:
                in_sum[name] = in_sum.get(name, 0) + (x.T @ x).double()
            if outputs:
                y = output.detach().reshape(-1, output.shape[-1]).float()
                if module.bias is not None:
                    y = y - module.bias.float()
                out_sum[name] = out_sum.get(name, 0) + (y.T @ y).double()
        return hook

    def block_hook(name):
        def hook(module, args, output):
            h_in = args[0] if args else None
            h_out = output[0] if isinstance(output, tuple) else output
            if isinstance(h_in, torch.Tensor) and isinstance(h_out, torch.Tensor) and h_in.shape == h_out.shape:
                cos = torch.nn.functional.cosine_similarity(h_in.double(), h_out.double(), dim=-1)
                cos_sum[name] = cos_sum.get(name, 0.0) + float(cos.sum())
                cos_count[name] = cos_count.get(name, 0) + cos.numel()
        return hook

    modules = dict(model.named_modules())
    for name in names:
        hooks.append(modules[name].register_forward_hook(linear_hook(name)))
    if blocks:
        for name, module in modules.items():
            if _BLOCK.search(name):
                hooks.append(module.register_forward_hook(block_hook(name)))
    try:
        run()
    finally:
        for h in hooks:
            h.remove()
    missing = [n for n in names if n not in rows]
    if missing:
        raise ValueError(f"calibration never reached layer {missing[0]} ({len(missing)} layers unreached)")
    return CalibrationStats(
        input_cov={n: in_sum[n] / rows[n] for n in in_sum},
        output_cov={n: out_sum[n] / rows[n] for n in out_sum},
        block_importance={n: 1.0 - cos_sum[n] / cos_count[n] for n in cos_sum},
        n_rows=max(rows.values()) if rows else 0,
    )


def layer_importance(name: str, block_importance: Mapping[str, float]) -> float:
    """Importance of a linear layer: that of the innermost block containing it (1.0 when none was measured)."""
    best = None
    for block, value in block_importance.items():
        if name.startswith(block + ".") and (best is None or len(block) > len(best[0])):
            best = (block, value)
    return 1.0 if best is None else best[1]


def _bias_bytes(module: torch.nn.Module) -> int:
    # biases are kept as they are (float32), in the original and the compressed model alike
    return 0 if module.bias is None else module.bias.numel() * module.bias.element_size()


def compress_linears(
    model: torch.nn.Module,
    spec: MethodSpec,
    stats: CalibrationStats | None = None,
    names: Iterable[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[dict[str, torch.nn.Module], list[LayerReport]]:
    """Compressed replacements for the named linears (default: all), and one LayerReport per layer."""
    if spec.is_qat:
        raise ValueError(f"{spec.method} trains on the model's data: run it through codesign.compress.pipeline."
                         "compress_model (or `codesign compress`)")
    modules = dict(model.named_modules())
    names = _linear_names(model, names)
    linears = {n: modules[n] for n in names}
    for n, m in linears.items():
        if not isinstance(m, torch.nn.Linear):
            raise ValueError(f"{n} is a {type(m).__name__}, not an nn.Linear")
    spec.check_layers({n: tuple(m.weight.shape) for n, m in linears.items()})
    needs_stats = spec.needs_input_covariance or spec.needs_output_covariance
    if needs_stats and stats is None:
        raise ValueError(f"method {spec.method!r} needs calibration statistics")
    if spec.method == "lowrank":
        importance = {n: layer_importance(n, stats.block_importance) for n in names}
        start = time.perf_counter()
        replacements = swift_svd_compress(linears, stats.output_cov, importance, spec.bits, progress=progress)
        per_layer = (time.perf_counter() - start) / max(len(names), 1)
        built = {n: (replacements[n], per_layer) for n in names}
    else:
        config = spec.layer_config()
        built = {}
        for i, (n, linear) in enumerate(linears.items()):
            if progress is not None:
                progress(i, len(linears), n)
            cov = stats.input_cov.get(n) if (stats is not None and spec.needs_input_covariance) else None
            start = time.perf_counter()
            module = QuantizedLinear.from_linear(linear, config, cov)
            built[n] = (module, time.perf_counter() - start)
    return {n: m for n, (m, _) in built.items()}, layer_reports(linears, built, stats)


def layer_reports(
    linears: Mapping[str, torch.nn.Linear],
    built: Mapping[str, tuple[torch.nn.Module, float]],
    stats: CalibrationStats | None = None,
) -> list[LayerReport]:
    """One LayerReport per compressed layer (built: name -> (module, seconds)) against its original linear."""
    reports = []
    for n, (module, seconds) in built.items():
        w = linears[n].weight.detach().float()
        approx = effective_weight(module)
        cov = stats.input_cov.get(n) if stats is not None else None
        reports.append(LayerReport(
            name=n,
            shape=tuple(w.shape),
            bytes=stored_bytes(module),
            fp16_bytes=w.numel() * 2 + _bias_bytes(linears[n]),
            relative_error=relative_error(w, approx),
            activation_error=None if cov is None else activation_error(w, approx, cov),
            seconds=seconds,
        ))
    return reports


def effective_weight(module: torch.nn.Module) -> torch.Tensor:
    """The float32 weight [N, K] a compressed linear applies."""
    if isinstance(module, QuantizedLinear):
        return module.qweight.dequantize()
    if isinstance(module, LowRankLinear):
        return module.left.float() @ module.right.float()
    raise ValueError(f"not a compressed linear: {type(module).__name__}")


def stored_bytes(module: torch.nn.Module) -> int:
    """Bytes a compressed linear stores: its weight format plus an fp16 bias."""
    bias = _bias_bytes(module)
    if isinstance(module, QuantizedLinear):
        return module.qweight.nbytes + bias
    if isinstance(module, LowRankLinear):
        return (module.left.numel() + module.right.numel()) * 2 + bias
    raise ValueError(f"not a compressed linear: {type(module).__name__}")


def spec_dict(spec: MethodSpec) -> dict:
    """The spec as JSON-ready data."""
    return asdict(spec)
