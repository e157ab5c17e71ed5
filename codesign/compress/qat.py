"""Quantization-aware training of linear layers: k-means QAT, integer QAT, LC-QAT 2-bit VQ, and WinQ on top.

`QATLinear` keeps a full-precision latent weight W and computes with its quantized value Q(W):
- kmeans: per-group absmax scales, a per-layer codebook; straight-through estimator (STE)
  (forward Q(W), backward identity). Every `refit_every` steps the centroids are refit to the
  current weights (Lloyd from the current codebook).
- int: the same with the fixed mid-rise uniform codebook of integer.py, each group's scale its absmax
  times the clip ratio the post-training integer quantizer chose for that group (kept fixed).
- vq (LC-QAT style, 2 bits): starts from the post-training VQ fit (vq.py);
  W_q = s * (B A^T + mu) with sign vectors B fixed between re-encodings (refit_every = 0: the
  post-training codes are kept, as `codesign compress --method lcqat-vq` does: re-encoding the latent
  W every 10 steps raised MiniLM block 0's distillation loss from 0.079 to 0.129) and
  A, mu, s trained by their exact gradients — a dense product, no codebook lookup in the
  forward; W gets the STE gradient, and every `refit_every` steps its vectors are re-encoded
  (nearest of the 256 codewords).
- export(): the trained layer in its storage format (ScalarQuantizedWeight / VQWeight in a
  QuantizedLinear). Codebooks and scales are kept fp16-representable during training, so the exported
  weights equal the eval-mode forward's quantized weights exactly.
- WinQ (winq=True, any of the above): every `reset_every` steps W <- (1 - alpha) W + alpha Q(W)
  (closer to the grid), and gradients are taken at W + noise, noise ~ N(0, (noise * rms(W - Q(W)))^2)
  per layer, so the update sees a neighbourhood of W rather than one point.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from codesign.compress.formats import pack_codes
from codesign.compress.integer import IntConfig, quantize_int, uniform_codebook
from codesign.compress.kmeans import group_absmax, lloyd_max, nearest_level
from codesign.compress.linear import QuantizedLinear
from codesign.compress.qtensor import VQ_CODE_BITS, VQ_DIM, ScalarQuantizedWeight, VQWeight, vq_sign_table
from codesign.compress.registry import qat_grids, register_qat_grid, register_quantizer
from codesign.compress.vq import VQConfig, _encode, quantize_vq, vq_training_weight

__all__ = ["QAT_QUANTIZERS", "QATConfig", "QATLinear", "qat_model", "train_qat", "distillation_loss"]



@dataclass(frozen=True)
class QATConfig:
    """QAT settings.

    quantizer: a registered quantizer with a QAT grid (@register_qat_grid): "kmeans", "int" or "vq" (2-bit only).
    bits: code width.
    group_size: weights per scale along the input dimension.
    refit_every: steps between centroid refits (kmeans) / re-encodings (vq); 0 = never.
    winq: apply WinQ; reset_every: steps between resets; alpha: reset interpolation weight of Q(W);
    noise: std of the injected weight noise relative to the layer's rms quantization error.
    WinQ's defaults (alpha 0.01, noise 0.05) are the best setting with both parts on in a sweep on
    validation sentences (benchmarks/qat_curves.py --tune-winq, docs/compress_models.md).
    """

    quantizer: str = "kmeans"
    bits: int = 2
    group_size: int = 64
    refit_every: int = 10
    winq: bool = False
    reset_every: int = 10
    alpha: float = 0.01
    noise: float = 0.05

    def __post_init__(self) -> None:
        if self.quantizer not in qat_grids():
            raise ValueError(f"unknown QAT quantizer {self.quantizer!r}: choose one of {', '.join(qat_grids())}")
        fixed = qat_grids()[self.quantizer].fixed_bits
        if fixed is not None and self.bits != fixed:
            raise ValueError(f"{self.quantizer} QAT is {fixed}-bit, got bits {self.bits}")
        if not 1 <= self.bits <= 8:
            raise ValueError(f"bits must be in 1..8, got {self.bits}")
        if self.refit_every < 0 or self.reset_every < 1:
            raise ValueError(f"refit_every must be >= 0 and reset_every >= 1, got {self.refit_every}, {self.reset_every}")
        if not 0 <= self.alpha <= 1 or self.noise < 0:
            raise ValueError(f"alpha must lie in [0, 1] and noise be >= 0, got {self.alpha}, {self.noise}")


register_quantizer("qat", QATConfig)(None)  # trained by QATLinear, not a one-shot weight quantizer


class _ScalarGrid:
    """Per-group absmax scales and a codebook (fp16-representable); STE to W."""

    method = "scalar-qat"
    fixed_bits: int | None = None  # any width
    group_multiple = 1

    def __init__(self, layer: QATLinear) -> None:
        c = layer.config
        layer.register_buffer("codebook", uniform_codebook(c.bits).half().float())  # the stored codebook is fp16
        layer.register_buffer("clip", None)  # int: the clip ratio per group

    def group_scales(self, layer: QATLinear, weight: torch.Tensor) -> torch.Tensor:
        """[N, K / group_size] fp16-representable scales: the group absmax (times the clip ratio for int)."""
        amax = group_absmax(weight.detach(), layer.config.group_size)
        return amax.float() if layer.clip is None else (amax.float() * layer.clip).half().float()

    def units(self, layer: QATLinear, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scale = self.group_scales(layer, weight)
        return (weight.detach() / scale.repeat_interleave(layer.config.group_size, 1)).reshape(1, -1), scale

    def quantized(self, layer: QATLinear, weight: torch.Tensor) -> torch.Tensor:
        units, scale = self.units(layer, weight)
        codes = nearest_level(units, layer.codebook[None])
        q = layer.codebook[codes].view_as(weight) * scale.repeat_interleave(layer.config.group_size, 1)
        return q + (weight - weight.detach())  # value exactly Q(W) (w - w.detach() is 0), gradient 1

    def refit(self, layer: QATLinear) -> None:
        pass

    def export(self, layer: QATLinear) -> ScalarQuantizedWeight:
        c, (n, k) = layer.config, layer.weight.shape
        units, scale = self.units(layer, layer.weight)
        codes = nearest_level(units, layer.codebook[None]).view(n, k).to(torch.uint8)
        return ScalarQuantizedWeight(pack_codes(codes, c.bits), scale.half().contiguous(), layer.codebook.half(),
                                     c.bits, c.group_size, (n, k), method=self.method)


@register_qat_grid("kmeans")
class _KMeansGrid(_ScalarGrid):
    """The codebook refit by Lloyd to the current weights every refit_every steps."""

    method = "kmeans-qat"

    def __init__(self, layer: QATLinear) -> None:
        super().__init__(layer)
        self.fitted = False
        self.refit(layer)

    def refit(self, layer: QATLinear) -> None:
        units, _ = self.units(layer, layer.weight)
        book = lloyd_max(units, layer.codebook.numel(), iterations=10,
                         init=layer.codebook[None] if self.fitted else None)[0]
        layer.codebook.copy_(book.half().float())  # the stored codebook is fp16
        self.fitted = True


@register_qat_grid("int")
class _IntGrid(_ScalarGrid):
    """The fixed integer grid, each group's scale its absmax times the post-training quantizer's clip ratio."""

    method = "int-qat"

    def __init__(self, layer: QATLinear) -> None:
        super().__init__(layer)
        c = layer.config
        start = quantize_int(layer.weight.detach(), IntConfig(c.bits, c.group_size))
        amax = group_absmax(layer.weight.detach(), c.group_size).float()
        layer.clip = start.scales.float() / amax


@register_qat_grid("vq")
class _VQGrid:
    """LC-QAT: W_q = s * (B A^T + mu), sign vectors B fixed between re-encodings, A, mu, s trained exactly."""

    fixed_bits = 2
    group_multiple = VQ_DIM

    def __init__(self, layer: QATLinear) -> None:
        c = layer.config
        start = quantize_vq(layer.weight.detach(), VQConfig(group_size=c.group_size))
        layer.basis = torch.nn.Parameter(start.basis.clone())
        layer.offset = torch.nn.Parameter(start.offset.clone())
        layer.scales = torch.nn.Parameter(start.scales.float())
        layer.register_buffer("signs", start.signs().contiguous())
        if c.refit_every == 0:  # the codes stay: W would only matter to a re-encoding
            layer.weight.requires_grad_(False)

    def quantized(self, layer: QATLinear, weight: torch.Tensor) -> torch.Tensor:
        s = layer.scales
        s = s + (s.detach().half().float() - s.detach())  # fp16 scales as stored, straight-through
        q = vq_training_weight(layer.signs, layer.basis, layer.offset, s, layer.config.group_size)
        return q + (weight - weight.detach())

    def refit(self, layer: QATLinear) -> None:
        """Nearest codeword of every 4-weight vector of W / s."""
        n, k = layer.weight.shape
        scale = layer.scales.detach().clamp(min=1e-8).repeat_interleave(layer.config.group_size, 1)
        units = (layer.weight / scale).reshape(-1, VQ_DIM)
        table = vq_sign_table(layer.weight.device)
        codes = _encode(units, table @ layer.basis.T + layer.offset)
        layer.signs.copy_(table[codes].view(n, k // VQ_DIM, 8))

    def export(self, layer: QATLinear) -> VQWeight:
        n, k = layer.weight.shape
        bit_values = 1 << torch.arange(VQ_CODE_BITS, device=layer.signs.device)
        codes = ((layer.signs > 0).long() * bit_values).sum(dim=-1).to(torch.uint8)
        return VQWeight(codes.contiguous(), layer.scales.detach().half().contiguous(),
                        layer.basis.detach().float().contiguous(), layer.offset.detach().float().contiguous(),
                        layer.config.group_size, (n, k), method="lcqat-vq")


QAT_QUANTIZERS = tuple(qat_grids())


class QATLinear(torch.nn.Module):
    """nn.Linear whose forward uses the quantized value of a trainable full-precision weight (grid: config.quantizer)."""

    def __init__(self, linear: torch.nn.Linear, config: QATConfig) -> None:
        super().__init__()
        n, k = linear.weight.shape
        grid = qat_grids()[config.quantizer]
        if k % config.group_size or config.group_size % grid.group_multiple:
            raise ValueError(f"group size {config.group_size} does not fit a layer with {k} inputs")
        self.config = config
        self.weight = torch.nn.Parameter(linear.weight.detach().float().clone())
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach().float().clone())
        with torch.no_grad():
            self.grid = grid(self)

    def quantized(self, weight: torch.Tensor | None = None) -> torch.Tensor:
        """Q(W) with gradients: STE to W (and exact to A, mu, s for vq)."""
        return self.grid.quantized(self, self.weight if weight is None else weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x W_q^T + b; in training with WinQ, W_q is taken at a noise-injected W."""
        w = self.weight
        if self.training and self.config.winq and self.config.noise > 0:
            with torch.no_grad():
                rms = (self.quantized() - w).pow(2).mean().sqrt()
            w = w + torch.randn_like(w) * (self.config.noise * rms)
        return torch.nn.functional.linear(x, self.quantized(w), self.bias)

    @torch.no_grad()
    def refit(self) -> None:
        """kmeans: Lloyd refit of the centroids to the current weights; vq: re-encode the sign vectors."""
        self.grid.refit(self)

    @torch.no_grad()
    def export(self) -> QuantizedLinear:
        """The layer in its storage format: exactly the quantized weights of the eval-mode forward."""
        bias = None if self.bias is None else self.bias.detach()
        return QuantizedLinear(self.grid.export(self), bias)

    @torch.no_grad()
    def winq_reset(self) -> None:
        """WinQ: W <- (1 - alpha) W + alpha Q(W)."""
        a = self.config.alpha
        self.weight.copy_((1 - a) * self.weight + a * self.quantized())


def qat_model(model: torch.nn.Module, config: QATConfig, names: Iterable[str] | None = None) -> torch.nn.Module:
    """A deep copy of model with the named (default: all) nn.Linear replaced by QATLinear; only those train."""
    student = copy.deepcopy(model)
    student.requires_grad_(False)
    modules = dict(student.named_modules())
    names = [n for n, m in modules.items() if isinstance(m, torch.nn.Linear)] if names is None else list(names)
    for name in names:
        parent_name, _, leaf = name.rpartition(".")
        parent = student.get_submodule(parent_name) if parent_name else student
        setattr(parent, leaf, QATLinear(modules[name], config))
    return student


def distillation_loss(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean squared error of hidden states relative to the teacher's mean squared norm."""
    m = mask.unsqueeze(-1).to(student_hidden.dtype)
    err = ((student_hidden - teacher_hidden) ** 2 * m).sum()
    return err / ((teacher_hidden ** 2) * m).sum().clamp(min=1e-12)


def train_qat(
    student: torch.nn.Module,
    loss_fn: Callable[[torch.nn.Module, int], torch.Tensor],
    steps: int,
    lr: float = 1e-4,
    on_step: Callable[[int, float], None] | None = None,
    dropout: bool = False,
) -> list[float]:
    """Adam on the student's trainable parameters for `steps` steps; refits/resets on their schedules; losses.

    The student trains in train mode (WinQ's noise) with its dropout layers off, as the teacher's
    targets were made, unless dropout=True.
    """
    params = [p for p in student.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the student has no trainable parameters (no QATLinear layers)")
    layers = [m for m in student.modules() if isinstance(m, QATLinear)]
    optimizer = torch.optim.Adam(params, lr=lr)
    student.train()
    if not dropout:
        for module in student.modules():
            if isinstance(module, torch.nn.modules.dropout._DropoutNd):
                module.eval()
    losses = []
    for step in range(steps):
        loss = loss_fn(student, step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        for layer in layers:
            c = layer.config
            if c.refit_every and (step + 1) % c.refit_every == 0:
                layer.refit()
            if c.winq and (step + 1) % c.reset_every == 0:
                layer.winq_reset()
        if on_step is not None:
            on_step(step, losses[-1])
    student.eval()
    return losses
