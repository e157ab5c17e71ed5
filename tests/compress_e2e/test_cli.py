"""`codesign compress` bad input: one line on stderr naming the bad value, exit status 2, no file touched."""

import json
import math

import pytest
import torch

from codesign.cli import main
from codesign.compress.cli import format_report
from tests.support import requires_llm

pytestmark = requires_llm


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codesign: error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["bert", "--method", "kmeans", "--bits", "4"], "unknown model 'bert'"),
    (["minilm", "--method", "gptq", "--bits", "4"], "unknown method 'gptq'"),
    (["minilm", "--method", "kmeans", "--bits", "9"], "unsupported bits 9"),
    (["minilm", "--method", "kmeans", "--bits", "0"], "unsupported bits 0"),
    (["minilm", "--method", "vq", "--bits", "3"], "vq is a 2-bit format"),
    (["minilm", "--method", "kmeans", "--bits", "4", "--rank", "8"], "--rank applies"),
    (["minilm", "--method", "kmeans", "--bits", "4", "--winq"], "--winq apply to the QAT methods"),
    (["minilm", "--method", "lcqat-vq", "--bits", "3"], "lcqat-vq is a 2-bit format"),
    (["minilm", "--method", "kmeans", "--bits", "4", "--group-size", "0"], "group size must be a positive multiple"),
    (["minilm", "--method", "kmeans", "--bits", "3", "--block-tune"], "--block-tune is an option of --error-feedback"),
    (["minilm", "--method", "vq", "--bits", "2", "--e2e-tune"], "--e2e-tune applies to the scalar grids"),
    (["minilm", "--method", "kmeans", "--bits", "3", "--e2e-tune", "1"], "minilm is a sentence encoder"),
    (["minilm", "--method", "qer-scaled", "--bits", "3", "--model-guard"], "it applies to srr"),
    (["minilm", "--method", "srr", "--bits", "3", "--model-guard"], "minilm is a sentence encoder"),
    (["minilm", "--method", "srr", "--bits", "3", "--model-guard", "mse"], "--model-guard takes nll or kl"),
])
def test_bad_model_method_bits(capsys, tmp_path, args, message):
    out = tmp_path / "out"
    assert message in _error(capsys, ["compress", *args, "--out", str(out)])
    assert not out.exists()


def test_rank_larger_than_the_layer_allows(capsys, tmp_path, minilm):
    # MiniLM's linears are at most 384 wide on their short side
    line = _error(capsys, ["compress", "minilm", "--method", "srr", "--bits", "2", "--rank", "500",
                           "--out", str(tmp_path / "o")])
    assert "rank 500 is larger than layer encoder.layer.0.attention.self.query [384x384] allows" in line


def test_blocks_and_layer_patterns_that_do_not_exist(capsys, tmp_path, minilm):
    line = _error(capsys, ["compress", "minilm", "--method", "kmeans", "--bits", "4", "--blocks", "6",
                           "--out", str(tmp_path / "o")])
    assert "block 6 does not exist: minilm has blocks 0..5" in line
    line = _error(capsys, ["compress", "minilm", "--method", "kmeans", "--bits", "4", "--layers", "*.nothing",
                           "--out", str(tmp_path / "o")])
    assert "layer pattern '*.nothing' matches no linear layer of minilm" in line


def test_existing_output_folder_is_refused_and_kept(capsys, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    for extra in ([], ["--force"]):  # --force never deletes a folder codesign did not write
        line = _error(capsys, ["compress", "minilm", "--method", "kmeans", "--bits", "4", "--out", str(out), *extra])
        assert f"--out {out} holds files codesign did not write" in line
    for given in (tmp_path, tmp_path / "notes.txt"):  # the working directory, a plain file
        (tmp_path / "notes.txt").write_text("mine")
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(tmp_path)
            line = _error(capsys, ["compress", "minilm", "--method", "kmeans", "--bits", "4", "--out",
                                   "." if given == tmp_path else "notes.txt", "--force"])
        assert "working directory" in line or "is a file, not a folder" in line
        assert (tmp_path / "notes.txt").read_text() == "mine"
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and (out / "keep.txt").read_text() == "user data"


def test_lc_qat_from_the_command_line(capsys, tmp_path, minilm):
    out = tmp_path / "lcqat"
    argv = ["compress", "minilm", "--method", "lcqat-vq", "--bits", "2", "--steps", "3", "--blocks", "0",
            "--eval", "16", "--out", str(out)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "model minilm: lcqat-vq 2-bit" in captured.out and "QAT 3 steps: distillation loss" in captured.out
    assert "step 3/3: loss" in captured.err  # progress on stderr
    from codesign.compress.checkpoint import compressed_layers, load_compressed

    loaded = compressed_layers(load_compressed(out))
    assert len(loaded) == 6 and all(m.qweight.method == "lcqat-vq" for m in loaded.values())


def test_group_size_reaches_the_stored_format(capsys, tmp_path, minilm):
    out = tmp_path / "g32"
    argv = ["compress", "minilm", "--method", "kmeans", "--bits", "4", "--group-size", "32", "--layers",
            "encoder.layer.0.attention.self.query", "--eval", "16", "--out", str(out)]
    assert main(argv) == 0
    assert "kmeans 4-bit, group 32" in capsys.readouterr().out
    from codesign.compress.checkpoint import compressed_layers, load_compressed

    (module,) = compressed_layers(load_compressed(out)).values()
    assert module.qweight.group_size == 32 and tuple(module.qweight.scales.shape) == (384, 384 // 32)


def test_a_local_transformers_folder_is_compressed_and_reloads(tmp_path, minilm, capsys):
    # a tiny random Llama saved with a real tokenizer (MiniLM's), as a user's save_pretrained folder
    import copy

    import transformers

    from codesign.compress.checkpoint import compressed_layers, load_compressed

    tokenizer = copy.deepcopy(minilm[1])
    tokenizer.bos_token = "[CLS]"  # the token stream separates articles with BOS
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "mine")
    tokenizer.save_pretrained(tmp_path / "mine")
    out = tmp_path / "out"
    argv = ["compress", str(tmp_path / "mine"), "--method", "kmeans", "--bits", "4", "--group-size", "32",
            "--calib-tokens", "64", "--eval-tokens", "64", "--context", "32", "--out", str(out), "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["layers"] == 15 and report["metric"]["n_tokens"] > 0  # every linear, the untied lm_head too
    metric = report["metric"]  # per-window NLLs of both models, and the paired interval they give
    assert sum(metric["window_tokens"]) == metric["n_tokens"] and len(metric["reference_window_nll"]) == 2
    assert math.isclose(math.exp(sum(metric["window_nll"]) / metric["n_tokens"]), metric["perplexity"], rel_tol=1e-9)
    assert "95 % CI" in format_report(report) and "over 2 windows" in format_report(report)
    loaded = load_compressed(out)
    assert type(loaded).__name__ == "LlamaForCausalLM" and len(compressed_layers(loaded)) == 15
    tuned = tmp_path / "tuned"  # error feedback with block-wise tuning, on the user's own model
    assert main(argv[:-3] + ["--error-feedback", "--act-order", "--block-tune", "2", "--out", str(tuned), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["block_tune"] == 2 and report["sequential"] and report["layers"] == 15
    assert len(compressed_layers(load_compressed(tuned))) == 15
    distilled = tmp_path / "distilled"  # end-to-end tuning to the original's next-token distribution
    assert main(argv[:-3] + ["--error-feedback", "--e2e-tune", "1", "--out", str(distilled), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["e2e_tune"] == 1 and report["e2e_holdout_kl_after"] <= report["e2e_holdout_kl_before"]
    assert "end-to-end tuning, 1 epochs" in format_report(report)
    assert len(compressed_layers(load_compressed(distilled))) == 15
    guarded = tmp_path / "guarded"  # SRR with the whole-model guard
    srr = ["--method", "srr", "--bits", "2", "--rank", "8"]
    assert main(argv[:2] + srr + argv[6:-3] + ["--model-guard", "--out", str(guarded), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model_guard"] == report["guard_objective"] == "nll" and report["layers"] == 15
    assert report["guard_chosen"] <= report["guard_layers"]
    assert "model guard: " in format_report(report)
    assert len(compressed_layers(load_compressed(guarded))) == 15
    line = _error(capsys, ["compress", str(tmp_path), "--method", "kmeans", "--bits", "4", "--out",
                           str(tmp_path / "o2")])
    assert "a folder without config.json" in line


def test_threads_must_be_positive(capsys):
    with pytest.raises(SystemExit) as info:
        main(["compress", "minilm", "--method", "kmeans", "--bits", "4", "--threads", "0", "--out", "x"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(lines) == 1 and "--threads: must be a positive integer, got 0" in lines[0]


def test_bare_tuning_flags_take_the_configs_default_epochs(tmp_path):
    # The CLI keeps the epoch counts as literals so that building the parser does not import torch's modules.
    from codesign.cli import build_parser
    from codesign.compress.block_tune import BlockTuneConfig
    from codesign.compress.e2e_tune import EndToEndConfig

    args = build_parser().parse_args(["compress", "gemma3-270m", "--method", "kmeans", "--bits", "3", "--block-tune", "--e2e-tune",
                                    "--out", str(tmp_path)])
    assert args.block_tune == BlockTuneConfig().epochs and args.e2e_tune == EndToEndConfig().epochs
