"""The two networks of the DWP experiments: an MLP and a small CNN, for any square 1-channel input.

Every weight layer is an nn.Linear or nn.Conv2d, so ``codesign.cim.convert_to_cim`` maps the
whole network onto crossbars (biases stay digital).

- ``mlp``: flatten, 256 ReLU, 128 ReLU, classes (digits: 64-256-128-10; MNIST: 784-256-128-10).
- ``cnn``: conv 3×3 stride 2, 8 ch, ReLU; conv 3×3 stride 2, 16 ch, ReLU; linear to classes
  (digits 8×8 → 4×4 → 2×2; MNIST 28×28 → 14×14 → 7×7). Strided convolutions instead of
  pooling: a quarter of the crossbar reads per image, which is what a chip simulation costs.
"""

from __future__ import annotations

from torch import nn

__all__ = ["MODELS", "build_model", "check_model", "weight_layers"]

MODELS: dict[str, str] = {
    "mlp": "MLP in-256-128-classes, ReLU",
    "cnn": "CNN conv3x3/2(8)-conv3x3/2(16)-linear, ReLU",
}


def check_model(name: object) -> str:
    """A known model name or a one-line ValueError."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: choose one of {', '.join(MODELS)}")
    return name  # type: ignore[return-value]


def build_model(name: str, image_shape: tuple[int, int, int], n_classes: int) -> nn.Sequential:
    """A freshly initialised network (torch's default init; seed torch first for a fixed one)."""
    check_model(name)
    channels, height, width = image_shape
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(channels * height * width, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, n_classes),
        )
    if height < 4 or width < 4:
        raise ValueError(f"image of {height}x{width}: the CNN needs at least 4x4 (two stride-2 layers)")
    side_h, side_w = (height + 1) // 2, (width + 1) // 2
    side_h, side_w = (side_h + 1) // 2, (side_w + 1) // 2
    return nn.Sequential(
        nn.Conv2d(channels, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(16 * side_h * side_w, n_classes),
    )


def weight_layers(model: nn.Module) -> list[str]:
    """Parameter names of the weights a CIM chip holds (every Linear/Conv2d weight, module order)."""
    return [f"{name}.weight" if name else "weight" for name, m in model.named_modules()
            if isinstance(m, (nn.Linear, nn.Conv2d))]
