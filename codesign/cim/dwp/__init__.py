"""DWP: diversity-aware weight perturbation training for noisy CIM chips, baselines and sweeps.

Data with fixed splits (:mod:`.data`), the MLP and CNN (:mod:`.models`), disagreement
measures and sample weights (:mod:`.weighting`), standard / noise-injection / DWP training
(:mod:`.training`), checkpoints (:mod:`.checkpoint`), mismatch and drift sweeps over simulated
chips (:mod:`.evaluate`), the ``codesign cim train`` / ``cim eval`` commands (:mod:`.cli`), and the
chips × times × mismatch grid (:mod:`.grid`) whose points (:mod:`.sweep_points`) run on codesign.sweep.
See docs/cim_dwp.md.
"""

from codesign.cim.dwp.checkpoint import load_checkpoint, save_checkpoint
from codesign.cim.dwp.cli import evaluate_checkpoint, train_to_folder
from codesign.cim.dwp.data import DATASETS, load_dataset
from codesign.cim.dwp.evaluate import (
    DRIFT_TIMES,
    MISMATCH_LEVELS,
    drift_sweep,
    mismatch_sweep,
)
from codesign.cim.dwp.models import MODELS, build_model
from codesign.cim.dwp.training import METHODS, TrainConfig, TrainResult, accuracy, train
from codesign.cim.dwp.weighting import MEASURES, disagreement, disagreement_weights

__all__ = [
    "DATASETS",
    "DRIFT_TIMES",
    "MEASURES",
    "METHODS",
    "MISMATCH_LEVELS",
    "MODELS",
    "TrainConfig",
    "TrainResult",
    "accuracy",
    "build_model",
    "disagreement",
    "disagreement_weights",
    "drift_sweep",
    "evaluate_checkpoint",
    "load_checkpoint",
    "load_dataset",
    "mismatch_sweep",
    "save_checkpoint",
    "train",
    "train_to_folder",
]
