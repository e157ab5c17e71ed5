"""What ``codesign cim train`` and ``codesign cim eval`` do, callable from Python too.

``train_to_folder`` trains one network and writes ``model.pt`` into a new (or empty) folder;
``evaluate_checkpoint`` runs a sweep on the checkpoint's test split, returns the printed
tables and writes the PNG next to the checkpoint (or into ``out``).
"""

from __future__ import annotations

from pathlib import Path

from codesign.cim.config import CIMConfig
from codesign.cim.dwp.checkpoint import (
    CHECKPOINT_NAME,
    load_checkpoint,
    save_checkpoint,
)
from codesign.cim.dwp.data import load_dataset
from codesign.cim.dwp.evaluate import (
    drift_sweep,
    format_sweep,
    mismatch_sweep,
    plot_sweeps,
)
from codesign.cim.dwp.training import TrainConfig, accuracy, train
from codesign.outputs import OutputFile, OutputFolder

__all__ = ["SWEEPS", "evaluate_checkpoint", "train_to_folder"]

SWEEPS = ("mismatch", "drift")


def train_to_folder(config: TrainConfig, out: str | Path, force: bool = False, progress: bool = False) -> tuple[Path, str]:
    """Train under config and save out/model.pt; returns the checkpoint path and a one-line summary."""
    out = Path(out)
    folder = OutputFolder(out, "cim train", force=force, expected=(CHECKPOINT_NAME,))  # checked before training
    result = train(config, progress=progress)
    with folder.writing() as work:
        save_checkpoint(result, work / CHECKPOINT_NAME)
    path = out / CHECKPOINT_NAME
    test = accuracy(result.model, load_dataset(config.dataset).test)
    summary = (f"{config.method} {config.model} on {config.dataset}: {config.epochs} epochs in "
               f"{result.train_seconds:.1f} s, validation {100 * result.history[-1]['val_accuracy']:.2f} %, "
               f"test (float) {100 * test:.2f} %; checkpoint {path}")
    return path, summary


def evaluate_checkpoint(checkpoint: str | Path, sweep: str, n_chips: int = 20, seed: int = 0,
                        out: str | Path | None = None, force: bool = False) -> tuple[str, Path]:
    """Run one sweep ("mismatch" or "drift") of a checkpoint on its test split; tables and the PNG path."""
    if sweep not in SWEEPS:
        raise ValueError(f"unknown sweep {sweep!r}: choose one of {', '.join(SWEEPS)}")
    if not isinstance(n_chips, int) or isinstance(n_chips, bool) or n_chips < 1:
        raise ValueError(f"--chips {n_chips!r}: must be a positive integer")
    result = load_checkpoint(checkpoint)
    folder = Path(out) if out is not None else (Path(checkpoint) if Path(checkpoint).is_dir() else Path(checkpoint).parent)
    png = folder / f"{sweep}.png"
    plot_file = OutputFile(png, "cim eval", force=force)  # checked before the sweep
    cfg = result.config
    test = load_dataset(cfg.dataset).test
    name = f"{cfg.method} {cfg.model} on {cfg.dataset}"
    where = f"{len(test)} test samples, {n_chips} chips, seed {seed}"
    if sweep == "mismatch":
        points = mismatch_sweep(result.model, test, n_chips=n_chips, seed=seed)
        conv = CIMConfig().converter  # the sweep's chips: mismatch devices behind the default converters
        converters = f"{conv.dac_bits}-bit DAC and {conv.adc_bits}-bit ADC"
        text = format_sweep(points, f"accuracy vs multiplicative mismatch level: {name} ({where}; every chip with "
                            f"{converters})", "mismatch")
        # the 0 row is not the float model: the converters still quantize; say so on that row, and give the float one
        text = "\n".join(line + f"  <- no mismatch, the {converters} only" if line.split()[:1] == ["0"] else line
                         for line in text.splitlines())
        text += f"\nfloat model, no chip: {100 * accuracy(result.model, test):.2f} %"
        curves = {cfg.method: points}
        x_label, log_x = "mismatch level σ", False
    else:
        both = drift_sweep(result.model, test, n_chips=n_chips, seed=seed)
        text = "\n\n".join(format_sweep(points, f"accuracy vs time, PCM, {key}: {name} ({where})", "time")
                           for key, points in both.items())
        curves = {f"{cfg.method}, {key}": points for key, points in both.items()}
        x_label, log_x = "time after programming", True
    with plot_file.writing() as partial:
        plot_sweeps(curves, partial, f"{name}: {sweep} ({where})", x_label, log_x=log_x)
    return text, png
