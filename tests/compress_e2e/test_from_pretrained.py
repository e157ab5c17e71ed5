"""transformers' from_pretrained on a folder save_compressed wrote: the same model as load_compressed, or a clear refusal.

The models are tiny ones built from a config (random weights, nothing downloaded). The children run in tmp_path:
from the repository root, its kernels/ folder would shadow the `kernels` distribution transformers imports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from codesign.compress import IntConfig, KMeansConfig, quantize_
from codesign.compress.checkpoint import compressed_layers, load_compressed, save_compressed
from codesign.compress.linear import QuantizedLinear
from codesign.compress.lowrank import LowRankLinear
from codesign.llm.swap import replace_modules
from tests.support import requires_llm

pytestmark = requires_llm
transformers = pytest.importorskip("transformers")

IDS = torch.arange(24).reshape(2, 12) % 128


def _llama(dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """A 2-layer Llama, k-means 3-bit in block 0, integer 4-bit in block 1, one low-rank layer, the head compressed."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(config).eval()
    quantize_(model, KMeansConfig(bits=3, group_size=32), filter=lambda name, m: "layers.1" not in name)
    quantize_(model, IntConfig(bits=4, group_size=32), filter="model.layers.1.*")
    down = model.get_submodule("model.layers.1.mlp.down_proj").qweight.dequantize().float()
    u, s, vh = torch.linalg.svd(down, full_matrices=False)
    replace_modules(model, {"model.layers.1.mlp.down_proj": LowRankLinear(u[:, :8] * s[:8], vh[:8])})
    return model.to(dtype)


def _bert() -> torch.nn.Module:
    """A 2-layer BERT encoder (MiniLM's kind), k-means 4-bit."""
    torch.manual_seed(1)
    config = transformers.BertConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4)
    return quantize_(transformers.BertModel(config).eval(), KMeansConfig(bits=4, group_size=32))


def _outputs(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=IDS)[0]


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory) -> Path:
    return save_compressed(_llama(), tmp_path_factory.mktemp("llama") / "saved")


def _child(tmp_path: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("first", ["codesign", "codesign.compress.hf_quantizer"])
def test_from_pretrained_in_a_fresh_process_gives_the_logits_of_load_compressed(llama_folder, tmp_path, first):
    # codesign registers when from_pretrained imports transformers' registry; the quantizer's module, when imported
    child = (f"import sys, torch, {first}, transformers; "
             "m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1]); "
             "from codesign.compress.checkpoint import compressed_layers; "
             "print(type(m).__name__, sorted({type(x).__name__ for x in compressed_layers(m).values()})); "
             "torch.save(m(input_ids=torch.arange(24).reshape(2, 12) % 128).logits.detach(), sys.argv[2])")
    done = _child(tmp_path, child, str(llama_folder), str(tmp_path / "logits.pt"))
    assert done.returncode == 0 and "cannot load codesign-compressed" not in done.stderr, done.stderr
    assert done.stdout.splitlines() == ["LlamaForCausalLM ['LowRankLinear', 'QuantizedLinear']"]
    loaded = load_compressed(llama_folder)
    assert len(compressed_layers(loaded)) == 15
    assert torch.equal(torch.load(tmp_path / "logits.pt"), _outputs(loaded))


def test_without_codesign_transformers_stops_with_a_line_naming_codesign(llama_folder, tmp_path):
    # then codesign, imported after transformers' quantizer registry, registers at once and the folder loads
    child = ("import sys, torch, transformers\n"
             "try:\n"
             "    transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])\n"
             "except ValueError as error:\n"
             "    print('refused:', error, 'codesign' in sys.modules, 'transformers.quantizers.auto' in sys.modules)\n"
             "import codesign\n"
             "m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])\n"
             "torch.save(m(input_ids=torch.arange(24).reshape(2, 12) % 128).logits.detach(), sys.argv[2])\n")
    done = _child(tmp_path, child, str(llama_folder), str(tmp_path / "logits.pt"))
    assert done.returncode == 0 and "cannot load codesign-compressed" not in done.stderr, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("refused: ") and line.endswith(" False True")
    assert "model.safetensors holds layers compressed by codesign: import codesign before from_pretrained" in line
    assert torch.equal(torch.load(tmp_path / "logits.pt"), _outputs(load_compressed(llama_folder)))


def test_the_model_is_the_one_load_compressed_builds(llama_folder):
    loaded, ours = load_compressed(llama_folder), transformers.AutoModelForCausalLM.from_pretrained(llama_folder)
    assert not ours.training and ours.config._attn_implementation == loaded.config._attn_implementation
    state, expected = ours.state_dict(), loaded.state_dict()
    assert state.keys() == expected.keys()
    assert all(state[k].dtype == t.dtype and torch.equal(state[k], t) for k, t in expected.items())
    assert torch.equal(_outputs(ours), _outputs(loaded))


def test_a_half_precision_model_loads_as_load_compressed_loads_it(tmp_path):
    # both build the model in float16 as transformers does: its rotary frequencies stay float32
    folder = save_compressed(_llama(torch.float16), tmp_path / "half")
    ours, loaded = transformers.AutoModelForCausalLM.from_pretrained(folder), load_compressed(folder)
    assert ours.dtype == torch.float16 and ours.model.rotary_emb.inv_freq.dtype == torch.float32
    assert torch.equal(_outputs(ours), _outputs(loaded))


def test_auto_model_loads_an_encoder_and_the_base_of_a_causal_lm(llama_folder, tmp_path):
    folder = save_compressed(_bert(), tmp_path / "bert")
    encoder = transformers.AutoModel.from_pretrained(folder)
    assert type(encoder).__name__ == "BertModel" and len(compressed_layers(encoder)) == 13  # the pooler too
    assert torch.equal(_outputs(encoder), _outputs(load_compressed(folder)))
    base = transformers.AutoModel.from_pretrained(llama_folder)  # the head's tensors are dropped, as transformers does
    assert type(base).__name__ == "LlamaModel" and len(compressed_layers(base)) == 14
    assert torch.equal(_outputs(base), _outputs(load_compressed(llama_folder).model))


def _damage(folder: Path, target: Path, how: str) -> Path:
    import shutil

    shutil.copytree(folder, target)
    weights, config = target / "model.safetensors", target / "config.json"
    if how == "missing model.safetensors":
        weights.unlink()
    elif how == "truncated model.safetensors":
        weights.write_bytes(weights.read_bytes()[:-100])
    else:
        data = json.loads(config.read_text())
        quantization = data["quantization_config"]
        if how == "other format version":
            quantization["format_version"] = 1
        elif how == "no layer records":
            del quantization["layers"]
        elif how == "damaged layer record":
            del quantization["layers"]["lm_head"]["layout"]
        elif how == "layout the tensors do not fit":
            quantization["layers"]["lm_head"]["layout"]["shape"] = [3, 64]
        config.write_text(json.dumps(data))
    return target


@pytest.mark.parametrize("how, error, message", [
    ("missing model.safetensors", OSError, "no file named model.safetensors"),
    ("truncated model.safetensors", ValueError, "model.safetensors is not a readable safetensors file (truncated or "),
    ("other format version", ValueError, "quantization_config has format version 1; this codesign reads version 2"),
    ("no layer records", ValueError, "quantization_config names no compressed layers"),
    ("damaged layer record", ValueError, "the record of layer lm_head is damaged (KeyError: 'layout')"),
    ("layout the tensors do not fit", ValueError, "layer lm_head: packed codes must have shape (3, 24)"),
])
def test_a_damaged_folder_is_one_clear_error(llama_folder, tmp_path, how, error, message):
    folder = _damage(llama_folder, tmp_path / "damaged", how)
    with pytest.raises(error) as raised:
        transformers.AutoModelForCausalLM.from_pretrained(folder)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_damaged_compressed_json_stops_load_compressed_not_from_pretrained(llama_folder, tmp_path):
    # config.json carries every layer record: a folder of config.json and model.safetensors alone loads (the Hub's)
    folder = _damage(llama_folder, tmp_path / "damaged", "")
    (folder / "compressed.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"compressed.json is not a readable manifest \(JSONDecodeError\)"):
        load_compressed(folder)
    ours = transformers.AutoModelForCausalLM.from_pretrained(folder)
    assert isinstance(ours.lm_head, QuantizedLinear)
    assert torch.equal(_outputs(ours), _outputs(load_compressed(llama_folder)))
