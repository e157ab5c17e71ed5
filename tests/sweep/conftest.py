"""A tiny trained checkpoint shared by the CIM sweep tests (one epoch of standard training on digits)."""

from __future__ import annotations

import pytest

from tests.support import one_torch_thread


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """model.pt of a one-epoch digits MLP (about a second to train)."""
    from codesign.cim.dwp.cli import train_to_folder
    from codesign.cim.dwp.training import TrainConfig

    with one_torch_thread():  # small tensors on a shared 2-core machine: a second thread only waits
        path, _ = train_to_folder(TrainConfig(method="standard", epochs=1), tmp_path_factory.mktemp("cim") / "run")
    return path
