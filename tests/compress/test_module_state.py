"""Quantized modules keep their stored tensors as buffers: state_dict, .to, deepcopy, save/load through safetensors."""

import copy
import json

import pytest
import torch

from codesign.compress import IntConfig, KMeansConfig, QERConfig, QuantizedLinear, VQConfig
from codesign.compress.checkpoint import compressed_layers, load_compressed, read_manifest, save_compressed
from codesign.llm.swap import replace_modules

CONFIGS = [KMeansConfig(bits=3, group_size=32), IntConfig(bits=4, group_size=32), VQConfig(group_size=32),
           QERConfig(method="plain", rank=4, base=KMeansConfig(bits=2, group_size=32))]


def _layer(config, seed=0):
    torch.manual_seed(seed)
    return QuantizedLinear.from_linear(torch.nn.Linear(64, 48), config, kernel="torch")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_state_dict_round_trip_is_exact(config):
    layer, other = _layer(config, 0), _layer(config, 1)
    state = layer.state_dict()
    assert {"bias"} < set(state) and len(state) >= 4  # the stored format is in the state, not just the bias
    other.load_state_dict(state)
    for name, tensor in other.state_dict().items():
        assert tensor.dtype == state[name].dtype and torch.equal(tensor, state[name])  # integers with ==
    x = torch.randn(5, 64)
    assert torch.equal(other(x), layer(x))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_to_dtype_keeps_the_format_and_deepcopy_is_independent(config):
    layer = _layer(config)
    twin = copy.deepcopy(layer)
    stored = {n: t.clone() for n, t in layer.state_dict().items() if n != "bias"}
    layer.to(torch.float16)
    assert layer.bias.dtype == torch.float16
    for name, tensor in stored.items():
        assert torch.equal(layer.state_dict()[name], tensor)  # dtype and values unchanged
    x = torch.randn(3, 64)
    assert layer(x.half()).dtype == torch.float16
    assert torch.allclose(layer(x.half()).float(), twin(x), atol=2e-2)
    twin.get_buffer(layer._stored[0]).zero_()
    assert not torch.equal(layer.get_buffer(layer._stored[0]), twin.get_buffer(layer._stored[0]))


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))


def _saved(tmp_path):
    model = _model()
    replace_modules(model, {"0": QuantizedLinear.from_linear(model[0], KMeansConfig(bits=4, group_size=32)),
                            "2": QuantizedLinear.from_linear(model[2], VQConfig(group_size=32))})
    save_compressed(model, tmp_path, {"note": "mine"})
    return model


def test_save_load_rebuilds_the_model_from_its_skeleton(tmp_path):
    model = _saved(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["codesign-output.json", "compressed.json", "model.safetensors"]
    with pytest.raises(FileExistsError, match="pass --force"):
        save_compressed(model, tmp_path)  # an earlier save is replaced only with force
    save_compressed(model, tmp_path, {"note": "mine"}, force=True)
    skeleton = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
    loaded = load_compressed(tmp_path, model=skeleton)
    assert sorted(compressed_layers(loaded)) == ["0", "2"] and read_manifest(tmp_path)["note"] == "mine"
    x = torch.randn(4, 64)
    assert torch.equal(loaded(x), model(x))
    with pytest.raises(ValueError, match="not a transformers model"):
        load_compressed(tmp_path)


def test_other_format_version_and_truncated_file_are_one_line_errors(tmp_path):
    _saved(tmp_path)
    manifest = tmp_path / "compressed.json"
    document = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**document, "format_version": 1}))
    with pytest.raises(ValueError, match="format version 1; this codesign reads version 2") as info:
        load_compressed(tmp_path, model=_model())
    assert "\n" not in str(info.value)
    manifest.write_text(json.dumps(document))
    tensors = tmp_path / "model.safetensors"
    tensors.write_bytes(tensors.read_bytes()[:-100])
    with pytest.raises(ValueError, match="not a readable safetensors file") as info:
        load_compressed(tmp_path, model=_model())
    assert "\n" not in str(info.value)
