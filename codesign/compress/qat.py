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
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import torch

from codesign.compress.formats import pack_codes
from codesign.compress.integer import IntConfig, quantize_int, uniform_codebook
from codesign.compress.kmeans import group_absmax, lloyd_max, nearest_level
from codesign.compress.linear import QuantizedLinear
from codesign.compress.registry import register_quantizer
from codesign.compress.qtensor import VQ_CODE_BITS, VQ_DIM, ScalarQuantizedWeight, VQWeight, vq_sign_table
from codesign.compress.vq import VQConfig, _encode, quantize_vq, vq_training_weight

__all__ = ["QAT_QUANTIZERS", "QATConfig", "QATLinear", "qat_model", "train_qat", "distillation_loss"]

QAT_QUANTIZERS = ("kmeans", "int", "vq")


@dataclass(frozen=True)
class QATConfig:
    """QAT settings.

    quantizer: "kmeans", "int" or "vq" (2-bit only). bits: code width (scalar quantizers).
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
        if self.quantizer not in QAT_QUANTIZERS:
            raise ValueError(f"unknown QAT quantizer {self.quantizer!r}: choose one of {', '.join(QAT_QUANTIZERS)}")
        if self.quantizer == "vq" and self.bits != 2:
            raise ValueError(f"vq QAT is 2-bit, got bits {self.bits}")
        if not 1 <= self.bits <= 8:
            raise ValueError(f"bits must be in 1..8, got {self.bits}")
        if self.refit_every < 0 or self.reset_every < 1:
            raise ValueError(f"refit_every must be >= 0 and reset_every >= 1, got {self.refit_every}, {self.reset_every}")
        if not 0 <= self.alpha <= 1 or self.noise < 0:
            raise ValueError(f"alpha must lie in [0, 1] and noise be >= 0, got {self.alpha}, {self.noise}")


register_quantizer("qat", QATConfig)(None)  # trained by QATLinear, not a one-shot weight quantizer


class QATLinear(torch.nn.Module):
    """nn.Linear whose forward uses the quantized value of a trainable full-precision weight."""

    def __init__(self, linear: torch.nn.Linear, config: QATConfig) -> None:
        super().__init__()
        n, k = linear.weight.shape
        if k % config.group_size or (config.quantizer == "vq" and config.group_size % VQ_DIM):
            raise ValueError(f"group size {config.group_size} does not fit a layer with {k} inputs")
        self.config = config
        self.weight = torch.nn.Parameter(linear.weight.detach().float().clone())
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach().float().clone())
        self.register_buffer("clip", None)  # int: clip ratio per group
        if config.quantizer == "vq":
            start = quantize_vq(self.weight.detach(), VQConfig(group_size=config.group_size))
            self.basis = torch.nn.Parameter(start.basis.clone())
            self.offset = torch.nn.Parameter(start.offset.clone())
            self.scales = torch.nn.Parameter(start.scales.float())
            self.register_buffer("signs", start.signs().contiguous())
            if config.refit_every == 0:  # the codes stay: W would only matter to a re-encoding
                self.weight.requires_grad_(False)
        else:
            book = uniform_codebook(config.bits).half().float()  # the stored codebook is fp16
            self.register_buffer("codebook", book)
            if config.quantizer == "kmeans":
                self.refit()
            else:  # the clip ratio per group that post-training integer quantization chose
                start = quantize_int(self.weight.detach(), IntConfig(config.bits, config.group_size))
                amax = group_absmax(self.weight.detach(), config.group_size).float()
                self.register_buffer("clip", start.scales.float() / amax)

    def _group_scales(self, weight: torch.Tensor) -> torch.Tensor:
        """[N, K / group_size] fp16-representable scales: the group absmax (times the clip ratio for int)."""
        amax = group_absmax(weight.detach(), self.config.group_size)
        return amax.float() if self.clip is None else (amax.float() * self.clip).half().float()

    def _scales(self, weight: torch.Tensor) -> torch.Tensor:
        return self._group_scales(weight).repeat_interleave(self.config.group_size, 1)

    def _scalar_quantize(self, weight: torch.Tensor) -> torch.Tensor:
        scale = self._scales(weight)
        units = (weight.detach() / scale).reshape(1, -1)
        codes = nearest_level(units, self.codebook[None])
        return self.codebook[codes].view_as(weight) * scale

    def quantized(self, weight: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Q(W) with gradients: STE to W (and exact to A, mu, s for vq)."""
        w = self.weight if weight is None else weight
        if self.config.quantizer == "vq":
            s = self.scales
            s = s + (s.detach().half().float() - s.detach())  # fp16 scales as stored, straight-through
            q = vq_training_weight(self.signs, self.basis, self.offset, s, self.config.group_size)
            return q + (w - w.detach())
        return self._scalar_quantize(w) + (w - w.detach())  # value exactly Q(W) (w - w.detach() is 0), gradient 1

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
        if self.config.quantizer == "vq":
            self.reencode()
        elif self.config.quantizer == "kmeans":
            units = (self.weight / self._scales(self.weight)).reshape(1, -1)
            init = None if not hasattr(self, "_fitted") else self.codebook[None]
            book = lloyd_max(units, self.codebook.numel(), iterations=10, init=init)[0]
            self.codebook.copy_(book.half().float())  # the stored codebook is fp16
            self._fitted = True

    @torch.no_grad()
    def reencode(self) -> None:
        """Nearest codeword of every 4-weight vector of W / s (vq only)."""
        n, k = self.weight.shape
        scale = self.scales.detach().clamp(min=1e-8).repeat_interleave(self.config.group_size, 1)
        units = (self.weight / scale).reshape(-1, VQ_DIM)
        table = vq_sign_table(self.weight.device)
        codes = _encode(units, table @ self.basis.T + self.offset)
        self.signs.copy_(table[codes].view(n, k // VQ_DIM, 8))

    @torch.no_grad()
    def export(self) -> QuantizedLinear:
        """The layer in its storage format: exactly the quantized weights of the eval-mode forward."""
        n, k = self.weight.shape
        c = self.config
        bias = None if self.bias is None else self.bias.detach()
        if c.quantizer == "vq":
            bit_values = 1 << torch.arange(VQ_CODE_BITS, device=self.signs.device)
            codes = ((self.signs > 0).long() * bit_values).sum(dim=-1).to(torch.uint8)
            weight = VQWeight(codes.contiguous(), self.scales.detach().half().contiguous(),
                              self.basis.detach().float().contiguous(), self.offset.detach().float().contiguous(),
                              c.group_size, (n, k), method="lcqat-vq")
        else:
            scale = self._group_scales(self.weight)
            units = (self.weight / scale.repeat_interleave(c.group_size, 1)).reshape(1, -1)
            codes = nearest_level(units, self.codebook[None]).view(n, k).to(torch.uint8)
            weight = ScalarQuantizedWeight(pack_codes(codes, c.bits), scale.half().contiguous(), self.codebook.half(),
                                           c.bits, c.group_size, (n, k), method=f"{c.quantizer}-qat")
        return QuantizedLinear(weight, bias)

    @torch.no_grad()
    def winq_reset(self) -> None:
        """WinQ: W <- (1 - alpha) W + alpha Q(W)."""
        a = self.config.alpha
        self.weight.copy_((1 - a) * self.weight + a * self.quantized())


def qat_model(model: torch.nn.Module, config: QATConfig, names: Optional[Iterable[str]] = None) -> torch.nn.Module:
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
    on_step: Optional[Callable[[int, float], None]] = None,
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
