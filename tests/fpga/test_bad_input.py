"""Bad input to `codesign build`: a one-line error, exit code 2, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_build


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    text = err.strip()
    assert text.startswith("codesign: error:") and "\n" not in text, err
    for needle in needles:
        assert needle in text, (needle, text)


def test_unknown_target_lists_the_valid_ones(capsys, tmp_path):
    code, _, err = run_build(capsys, "kan_online", "--target", "xcku040", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "unknown target 'xcku040'", "xcvu9p (VCU118)", "xc7z020 (PYNQ-Z2)", "xczu9eg")
    assert not (tmp_path / "o").exists()


def test_unknown_model_name(capsys, tmp_path):
    code, _, err = run_build(capsys, "rnn_online", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "unknown learner 'rnn_online'", "kan_online", "mlp_online")


@pytest.mark.parametrize(
    "text, needles",
    [
        ("grid_sise = 8\n", ("grid_sise",)),  # unknown field
        ("activation = 'relu'\n", ("activation",)),  # an MLP field on the KAN
        ('grid_size = "eight"\n', ("grid_size",)),  # ill-typed
        ("widths = 5\n", ("widths",)),  # ill-typed: not a list
        ('grid_range = "ab"\n', ("grid_range",)),  # ill-typed
        ("act_t = 16\n", ("act_t",)),  # not a type string
        ('coef_t = "ap_fixed<16,6,AP_RND_NEAR,AP_SAT>"\n', ("AP_RND_NEAR",)),  # unknown mode
        ("lut_bits = 40\n", ("lut_bits",)),  # out of range
    ],
)
def test_unknown_or_ill_typed_config_field_is_named(capsys, tmp_path, text, needles):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    code, _, err = run_build(capsys, "kan_online", "--config", str(config), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, *needles)
    assert not (tmp_path / "o").exists()


def test_yaml_config_field_is_named(capsys, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("widths: [2, 4, 1]\nlearning_rate: 0.1\n")
    code, _, err = run_build(capsys, "mlp_online", "--config", str(config), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "learning_rate")


def test_existing_output_folder_is_refused_without_force(capsys, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    for extra in ((), ("--force",)):  # a folder codesign did not write is refused, --force or not
        code, _, err = run_build(capsys, "kan_online", "--out", str(out), *extra)
        assert_one_line_error(code, err, "codesign did not write")
        assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_missing_compiler_from_cxx(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-g++")
    code, _, err = run_build(capsys, "kan_online", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "g++ not found", "CXX=no-such-compiler-g++")
    assert not (tmp_path / "o").exists()


def test_missing_compiler_on_path(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, _, err = run_build(capsys, "kan_online", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "g++ not found: install it (e.g. apt-get install g++) or set CXX")


def test_output_path_that_is_a_file(capsys, tmp_path):
    out = tmp_path / "o"
    out.write_text("")
    code, _, err = run_build(capsys, "kan_online", "--out", str(out))
    assert_one_line_error(code, err, "is a file, not a folder")


def test_samples_must_be_positive(capsys, tmp_path):
    code, _, err = run_build(capsys, "kan_online", "--samples", "0", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "--samples=0")


def test_nothing_left_behind_in_the_working_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_build(capsys, "kan_online", "--target", "nope")
    assert code == 2 and not Path("codesign_out").exists()


def test_unknown_task_is_refused_before_writing(capsys, tmp_path):
    code, _, err = run_build(capsys, "kan_online", "--task", "weather", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "weather")
    assert not (tmp_path / "o").exists()
