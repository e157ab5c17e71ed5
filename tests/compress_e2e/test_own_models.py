"""`codesign compress` on a user's own transformers folders: short contexts, folders codesign compressed, GPT-2,
untied heads, and what the size lines count. Tiny models built from configs (tests/compress_e2e/own_models.py)."""

import json
import os

import pytest

from codesign.cli import main
from codesign.compress.cli import format_report
from tests.compress_e2e.own_models import user_folder, user_tokenizer
from tests.compress_e2e.test_cli import _error
from tests.support import requires_llm

pytestmark = requires_llm

SMALL = ["--method", "kmeans", "--bits", "4", "--group-size", "32", "--calib-tokens", "64", "--eval-tokens", "300",
         "--calib", "4", "--eval", "8"]


@pytest.fixture(scope="module")
def tokenizer(minilm):
    return user_tokenizer(minilm)


def _compress(capsys, folder, out, *extra):
    """Run `codesign compress FOLDER ... --json`: (report, stderr lines)."""
    assert main(["compress", str(folder), *SMALL, *extra, "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err.strip().splitlines()


@pytest.mark.parametrize("kind, positions", [("opt", 128), ("llama", 256), ("gpt2", 64)])
def test_a_causal_lm_is_scored_within_the_positions_it_was_trained_on(tmp_path, tokenizer, capsys, kind, positions):
    key = "n_positions" if kind == "gpt2" else "max_position_embeddings"
    folder = user_folder(tmp_path / kind, kind, tokenizer, **{key: positions})
    report, err = _compress(capsys, folder, tmp_path / "out")
    metric = report["metric"]
    assert metric["context"] == positions and len(metric["window_tokens"]) == -(-300 // positions)
    assert max(metric["window_tokens"]) == positions - 1  # a window's first token is not scored
    notes = [line for line in err if line.startswith("codesign: note:")]
    assert len(notes) == 1 and f"trained on {positions} positions" in notes[0] and "not the default 512" in notes[0]


@pytest.mark.parametrize("kind, positions", [("opt", 128), ("llama", 256)])
def test_a_context_longer_than_the_model_takes_is_refused_before_any_work(tmp_path, tokenizer, capsys, kind, positions):
    folder = user_folder(tmp_path / kind, kind, tokenizer, max_position_embeddings=positions)
    out = tmp_path / "out"
    line = _error(capsys, ["compress", str(folder), *SMALL, "--context", "512", "--out", str(out)])
    assert f"--context 512 is longer than the {positions} positions" in line
    assert f"give --context {positions} or less" in line and not out.exists()
    report, err = _compress(capsys, folder, out, "--context", str(positions // 2))  # a shorter one is taken as given
    assert report["metric"]["context"] == positions // 2 and not any("note:" in line for line in err)


def test_an_encoder_with_few_positions_gets_its_sentences_cut_to_them(tmp_path, tokenizer, capsys):
    folder = user_folder(tmp_path / "bert", "bert", tokenizer, max_position_embeddings=32)
    report, err = _compress(capsys, folder, tmp_path / "out")
    metric = report["metric"]
    assert metric["sentence_tokens"] == 32 and metric["n_sentences"] == 8 and metric["cosine_min"] > 0.9
    assert any("sentences are cut at 32 tokens" in line for line in err)
    assert "sentences cut at 32 tokens" in format_report(report)


def test_a_task_checkpoint_without_the_pooler_its_encoder_adds_is_compressed(tmp_path, tokenizer, capsys):
    # AutoModel gives the BERT a pooler that BertForMaskedLM's files lack: not a missing weight of the embeddings
    folder = user_folder(tmp_path / "mlm", "bert-mlm", tokenizer, max_position_embeddings=64)
    report, _ = _compress(capsys, folder, tmp_path / "out")
    assert report["metric"]["n_sentences"] == 8 and report["metric"]["cosine_min"] > 0.9


def test_a_folder_codesign_compressed_is_refused_and_missing_weights_too(tmp_path, tokenizer, capsys):
    folder = user_folder(tmp_path / "llama", "llama", tokenizer, max_position_embeddings=64)
    out = tmp_path / "compressed"
    _compress(capsys, folder, out)
    tokenizer.save_pretrained(out)  # as a user would, to use the folder as a model folder
    line = _error(capsys, ["compress", str(out), *SMALL, "--out", str(tmp_path / "again")])
    assert f"{out} holds a model codesign already compressed (compressed.json)" in line and "load_compressed" in line
    layers = json.loads((out / "compressed.json").read_text())["layers"]
    (out / "compressed.json").unlink()  # config.json's quantization_config (from_pretrained's) still shows it
    line = _error(capsys, ["compress", str(out), *SMALL, "--out", str(tmp_path / "again")])
    assert f"{out} holds a model codesign already compressed (config.json)" in line
    config = json.loads((out / "config.json").read_text())
    del config["quantization_config"], config["transformers_weights"]
    (out / "config.json").write_text(json.dumps(config))  # neither: transformers finds no weight of those layers
    line = _error(capsys, ["compress", str(out), *SMALL, "--out", str(tmp_path / "again")])
    assert f"{len(layers)} weights of the LlamaForCausalLM are missing from its files" in line
    assert not (tmp_path / "again").exists()


def test_the_size_lines_count_the_linear_layers_and_the_whole_saved_model(tmp_path, tokenizer, capsys):
    import safetensors.torch
    import transformers

    folder = user_folder(tmp_path / "llama", "llama", tokenizer, max_position_embeddings=64)
    umask = os.umask(0o027)
    try:
        report, _ = _compress(capsys, folder, tmp_path / "out")
    finally:
        os.umask(umask)
    saved = tmp_path / "out" / "model.safetensors"
    assert saved.stat().st_mode & 0o777 == 0o640  # the umask decides, as for the manifest beside it
    assert (tmp_path / "out" / "compressed.json").stat().st_mode & 0o777 == 0o640
    assert report["saved_bytes"] == saved.stat().st_size
    tensors = safetensors.torch.load_file(saved)
    assert report["model_bytes"] == sum(t.numel() * t.element_size() for t in tensors.values())
    original = transformers.AutoModelForCausalLM.from_pretrained(folder)  # untied: no tensor shared
    assert report["original_model_bytes"] == sum(t.numel() * t.element_size() for t in original.state_dict().values())
    assert report["original_dtype"] == "float32"
    # the embeddings stay float32: the whole model shrinks much less than its linear layers
    assert report["original_model_bytes"] / report["model_bytes"] < report["fp16_bytes"] / report["bytes"]
    text = format_report(report)
    assert "size of the compressed linear layers" in text and "size of the whole model" in text
    assert f"model.safetensors {saved.stat().st_size:,} B" in text


@pytest.mark.parametrize("tied", [False, True])
def test_the_command_line_and_quantize_agree_on_the_head(tmp_path, tokenizer, capsys, tied):
    import transformers

    from codesign.compress import KMeansConfig, quantize_
    from codesign.compress.checkpoint import compressed_layers, load_compressed

    folder = user_folder(tmp_path / "llama", "llama", tokenizer, max_position_embeddings=64, tie_word_embeddings=tied)
    _compress(capsys, folder, tmp_path / "out")
    by_cli = set(compressed_layers(load_compressed(tmp_path / "out")))
    model = quantize_(transformers.AutoModelForCausalLM.from_pretrained(folder), KMeansConfig(bits=4, group_size=32))
    assert by_cli == set(compressed_layers(model)) and ("lm_head" in by_cli) == (not tied)


def test_gpt2_is_compressed_through_its_conv1d_layers_and_reloads(tmp_path, tokenizer, capsys):
    import torch

    from codesign.compress.checkpoint import compressed_layers, load_compressed
    from codesign.llm import perplexity, token_stream

    folder = user_folder(tmp_path / "gpt2", "gpt2", tokenizer, n_positions=64)
    report, _ = _compress(capsys, folder, tmp_path / "out", "--error-feedback", "--sequential")
    assert report["layers"] == 8  # c_attn, attn.c_proj, c_fc, mlp.c_proj of 2 blocks; the head is tied
    loaded = load_compressed(tmp_path / "out")
    assert sorted(compressed_layers(loaded)) == sorted(
        f"transformer.h.{b}.{layer}" for b in (0, 1) for layer in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"))
    with torch.no_grad():  # the reloaded model scores the held-out text as the report says the compressed one did
        again = perplexity(loaded, token_stream(tokenizer, "test", 300), context=report["metric"]["context"])
    assert again.perplexity == pytest.approx(report["metric"]["perplexity"], rel=1e-4)
