"""`--data FILE`: a user's own stream (.npz or .csv, any number of inputs and outputs) through learn, profile,
explore and build, checked once at the command line's edge; and every default shown in --help."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from codesign.cli import build_parser, main
from codesign.fpga.stimulus import CORNER_SAMPLES
from codesign.kan.run import make_learner
from codesign.kan.spec import KANSpec
from codesign.tasks import load_data, online_metrics
from codesign.tasks.data_file import DataStream

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def smooth_stream(n: int = 200, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """A smooth, non-stationary function of 3 inputs with 2 outputs: the second half changes both outputs."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    x = np.stack([np.sin(2 * np.pi * (2 * t + rng.uniform())), np.cos(2 * np.pi * 3 * t), rng.uniform(-1, 1, n)], axis=1)
    x = 0.9 * x
    switch = np.where(t < 0.5, 1.0, -1.0)
    y = np.stack([0.5 * switch * np.sin(np.pi * x[:, 0]) + 0.2 * x[:, 1] * x[:, 2],
                  0.3 * np.cos(np.pi * x[:, 1]) + 0.2 * switch * x[:, 2]], axis=1)
    return x, y


def write_npz(path: Path, n: int = 200, seed: int = 11, **extra: np.ndarray) -> Path:
    x, y = smooth_stream(n, seed)
    np.savez(path, x=x, y=y, **extra)
    return path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_learn_streams_a_3_input_2_output_file_and_reports_each_output(tmp_path, capsys):
    data = write_npz(tmp_path / "my.npz")
    code, out, err = run(["learn", "kan_online", "--data", str(data)], capsys)
    assert code == 0, err
    # the learner's widths come from the data, the default hidden width kept
    spec = KANSpec(widths=(3, KANSpec().widths[1], 2))
    assert f"widths {list(spec.widths)}" in out
    x, y = smooth_stream()
    pred = make_learner(spec, seed=0).run(x, y)  # the same run, made independently
    mse = np.mean((pred - y) ** 2, axis=0)
    for j in range(2):
        line = re.search(rf"y{j} mse: (\S+)  rmse (\S+)", out)
        assert line, out
        assert float(line.group(1)) == pytest.approx(mse[j], rel=1e-3)
        assert float(line.group(2)) == pytest.approx(np.sqrt(mse[j]), rel=1e-3)
    overall = float(re.search(r"\bmse: (\S+)", out).group(1))
    assert overall == pytest.approx(mse.mean(), rel=1e-3)
    assert overall < np.mean(y**2)  # it learns: better than predicting 0
    assert "accuracy" not in out  # no labels: no accuracy is invented
    assert hashlib.sha256(data.read_bytes()).hexdigest() in out


def test_train_flags_reach_the_learner(tmp_path, capsys):
    x, y = smooth_stream()
    train = (np.arange(len(x)) < 50).astype(np.int8)  # the rest predict only
    data = write_npz(tmp_path / "my.npz", train=train)
    from codesign.kan.data_run import learn_on_data

    pred, metrics = learn_on_data("kan_online", load_data(data))
    spec = KANSpec(widths=(3, KANSpec().widths[1], 2))
    assert np.array_equal(pred, make_learner(spec).run(x, y, train))
    assert not np.array_equal(pred, make_learner(spec).run(x, y))
    assert "(50 with train on)" in capsys.readouterr().out


def test_csv_and_npz_of_the_example_are_the_same_stream(tmp_path):
    npz, csv = load_data(EXAMPLES / "stream_3in_2out.npz"), load_data(EXAMPLES / "stream_3in_2out.csv")
    for a, b in ((npz.x, csv.x), (npz.y, csv.y), (npz.train, csv.train)):
        assert np.array_equal(a, b)
    assert (npz.n_inputs, npz.n_outputs, len(npz)) == (3, 2, 1000) and 0 < npz.train.sum() < len(npz)
    # the shipped files are what the example script makes (seeded), and small
    from codesign.examples.stream_3in_2out import write_example

    for made in write_example(tmp_path):
        shipped = EXAMPLES / made.name
        assert shipped.read_bytes() == made.read_bytes(), f"{shipped} is stale: python examples/stream_3in_2out.py"
        assert shipped.stat().st_size < 100_000


def test_csv_columns_in_any_order_and_other_columns_named(tmp_path, capsys):
    path = tmp_path / "log.csv"
    path.write_text("time,y1,x1,train,x0,y0\n0.0,0.5,0.2,1,0.1,-0.5\n1.0,0.25,0.4,0,0.3,-0.25\n")
    data = load_data(path)
    assert np.array_equal(data.x, [[0.1, 0.2], [0.3, 0.4]]) and np.array_equal(data.y, [[-0.5, 0.5], [-0.25, 0.25]])
    assert list(data.train) == [1, 0] and data.ignored == ("time",)
    code, out, err = run(["learn", "mlp_online", "--data", str(path)], capsys)
    assert code == 0, err
    assert "ignored (not x, y or train): time" in out


def test_widths_from_the_data_unless_the_config_sets_them(tmp_path, capsys):
    data = write_npz(tmp_path / "my.npz")
    ok = tmp_path / "ok.toml"
    ok.write_text("widths = [3, 6, 2]\n")
    code, out, err = run(["learn", "kan_online", "--data", str(data), "--config", str(ok)], capsys)
    assert code == 0 and "widths [3, 6, 2]" in out, err
    bad = tmp_path / "bad.toml"
    bad.write_text("widths = [2, 4, 1]\n")
    code, out, err = run(["learn", "kan_online", "--data", str(data), "--config", str(bad)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "config widths=[2, 4, 1]" in err and "3 input(s) and 2 output(s)" in err
    code, out, err = run(["learn", "kan_online", "--data", str(data), "--print-config"], capsys)
    assert code == 0 and "widths = [3, 4, 2]" in out


def test_fraction_outside_the_grid_is_reported_per_input(tmp_path, capsys):
    x, y = smooth_stream(100)
    x[:10, 1] = 1.5  # 10 % of input 1 past the grid's upper edge
    x[:3, 2] = -2.0  # 3 % of input 2 below its lower edge
    path = tmp_path / "wide.npz"
    np.savez(path, x=x, y=y)
    code, out, err = run(["learn", "kan_online", "--data", str(path)], capsys)
    assert code == 0, err
    assert "outside the grid range [-1, 1] (x0 x1 x2): 0%, 10%, 3%" in out
    assert "clamped" in out and "docs/arithmetic.md" in out


def _bad_files(tmp: Path) -> list[tuple[str, str]]:
    """(path, a phrase the one-line error must hold) for every way a data file can be wrong."""
    x, y = smooth_stream(20)
    cases = []

    def npz(name: str, phrase: str, **arrays) -> None:
        np.savez(tmp / name, **arrays)
        cases.append((str(tmp / name), phrase))

    def text(name: str, content: str, phrase: str) -> None:
        (tmp / name).write_text(content)
        cases.append((str(tmp / name), phrase))

    cases.append((str(tmp / "absent.npz"), "no such file"))
    (tmp / "folder.npz").mkdir()
    cases.append((str(tmp / "folder.npz"), "is a folder"))
    text("data.txt", "x0,y0\n1,2\n", "expected a .npz")
    text("broken.npz", "not a zip", "not a readable .npz")
    npz("no_y.npz", "no array 'y'", x=x, target=y)
    npz("flat_x.npz", "it must be 2-D", x=x[:, 0], y=y)
    npz("rows.npz", "x has 20 rows (samples) but y has 19", x=x, y=y[:19])
    y_nan = y.copy()
    y_nan[5, 1] = np.nan
    npz("nan.npz", "y holds nan at row 5 (column 1)", x=x, y=y_nan)
    x_inf = x.copy()
    x_inf[7, 0] = np.inf
    npz("inf.npz", "x holds inf at row 7", x=x_inf, y=y)
    npz("empty.npz", "holds no samples", x=np.zeros((0, 3)), y=np.zeros((0, 2)))
    npz("train2.npz", "train holds 2 at row 3", x=x, y=y, train=np.array([1, 1, 1, 2] + [1] * 16))
    npz("trainlen.npz", "one 0 or 1 per sample", x=x, y=y, train=np.ones(5))
    npz("strings.npz", "it must hold numbers", x=np.array([["a"] * 3] * 20), y=y)
    np.savez(tmp / "pickled.npz", x=np.array([{"a": 1}] * 20, dtype=object).reshape(20, 1), y=y)
    cases.append((str(tmp / "pickled.npz"), "Python objects"))
    text("no_y.csv", "x0,x1\n1,2\n", "no column y0")
    text("gap.csv", "x0,x2,y0\n1,2,3\n", "column x1 is missing")
    text("word.csv", "x0,y0\n1,2\n3,abc\n", "line 3: 'abc' is not a number")
    text("short.csv", "x0,y0\n1,2\n3\n", "line 3 has 1 values")
    text("head_only.csv", "x0,y0\n", "holds no samples")
    text("blank.csv", "", "empty")
    text("dup.csv", "x0,x0,y0\n1,2,3\n", "appears more than once")
    text("nan.csv", "x0,y0\n1,2\nnan,3\n", "x holds nan at row 1")
    return cases


def test_every_bad_data_file_is_one_line_and_status_2(tmp_path, capsys):
    for path, phrase in _bad_files(tmp_path):
        for command in (["learn", "kan_online"], ["build", "kan_online", "--out", str(tmp_path / "never")]):
            code, out, err = run([*command, "--data", path], capsys)
            assert code == 2, (path, out, err)
            assert err.startswith("codesign: error: ") and err.count("\n") == 1, (path, err)
            assert phrase in err, (path, phrase, err)
    assert not (tmp_path / "never").exists()


def test_data_and_task_together_and_too_many_samples(tmp_path, capsys):
    data = write_npz(tmp_path / "my.npz", n=50)
    code, _, err = run(["learn", "kan_online", "--data", str(data), "--task", "mackey_glass"], capsys)
    assert code == 2 and "--data and --task" in err and err.count("\n") == 1
    code, _, err = run(["profile", "kan_online", "--data", str(data), "--samples", "51", "--out", str(tmp_path / "p")], capsys)
    assert code == 2 and "holds only 50 samples" in err and not (tmp_path / "p").exists()
    code, out, err = run(["learn", "kan_online", "--data", str(data), "--samples", "20"], capsys)
    assert code == 0 and "20 samples" in out, err


def test_a_stream_refuses_train_flags_other_than_0_and_1():
    x, y = smooth_stream(4)
    with pytest.raises(ValueError, match="one 0 or 1 per sample"):
        DataStream("d", x, y, (), {}, np.array([1, 0, 2, 1]))
    assert list(DataStream("d", x, y, ()).train) == [1, 1, 1, 1]


def test_profile_takes_the_data_and_its_train_flags(tmp_path, capsys):
    x, y = smooth_stream()
    train = (np.arange(len(x)) % 3 != 0).astype(np.int64)
    data = write_npz(tmp_path / "my.npz", train=train)
    code, out, err = run(["profile", "kan_online", "--data", str(data), "--out", str(tmp_path / "prof")], capsys)
    assert code == 0, err
    profile = json.loads((tmp_path / "prof" / "profile.json").read_text())["profile"]
    spec = KANSpec(widths=(3, KANSpec().widths[1], 2))
    pred = make_learner(spec).run(x, y, train)
    assert profile["mse"] == pytest.approx(online_metrics(pred, load_data(data))["mse"], rel=1e-12)
    assert {"input[2]", "target[1]"} <= {s["name"] for s in profile["signals"]}


def test_explore_takes_the_data(tmp_path, capsys):
    data = write_npz(tmp_path / "my.npz", n=120)
    out = tmp_path / "exp"
    code, printed, err = run(["explore", "kan_online", "--data", str(data), "--grid", "8", "--bits", "16", "--hidden", "4",
                              "--workers", "1", "--out", str(out)], capsys)
    assert code == 0, err
    (point,) = [json.loads(line) for line in (out / "points.jsonl").read_text().splitlines()]
    assert point["name"] == "3-4-2 16b G8"
    x, y = smooth_stream(120)
    spec = KANSpec(widths=(3, 4, 2), grid_size=8)
    assert point["mse"] == pytest.approx(float(np.mean((make_learner(spec).run(x, y) - y) ** 2)), rel=1e-12)
    settings = json.loads((out / "explore.json").read_text())
    assert settings["data"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert "my.npz" in (out / "pareto.md").read_text()


def test_build_c_simulates_the_data_then_the_corner_samples(tmp_path, capsys):
    x, y = smooth_stream(60)
    train = (np.arange(60) % 4 != 0).astype(np.int64)
    data = tmp_path / "my.npz"
    np.savez(data, x=x, y=y, train=train)
    out = tmp_path / "b"
    code, printed, err = run(["build", "kan_online", "--data", str(data), "--out", str(out)], capsys)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["csim"]["bit_exact"] and report["spec"]["widths"] == [3, 4, 2]
    stream = report["stream"]
    assert stream["data"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert stream["data"]["path"] == str(data.resolve())
    assert (stream["task_samples"], stream["corner_samples"], stream["samples"]) == (60, CORNER_SAMPLES, 60 + CORNER_SAMPLES)
    rows = np.loadtxt(out / "tb_data" / "stimulus.txt", dtype=np.int64, ndmin=2)
    act = KANSpec().act_t
    assert np.array_equal(rows[:60, 0], train)
    assert np.array_equal(rows[:60, 1:4], act.quantize(x)) and np.array_equal(rows[:60, 4:], act.quantize(y))
    assert rows.shape == (60 + CORNER_SAMPLES, 6)
    assert "sha256" in (out / "tb_data" / "stimulus.txt").read_text().splitlines()[0]
    assert "60 of data file" in printed


def _options(command: str) -> list[argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions if a.option_strings and a.help not in (None, argparse.SUPPRESS)
            and not isinstance(a, (argparse._HelpAction, argparse._StoreTrueAction))]


@pytest.mark.parametrize("command", ["learn", "profile", "explore", "build", "estimate", "sim"])
def test_help_shows_every_default(command):
    for action in _options(command):
        assert "default" in action.help, f"{command} {action.option_strings[0]}: help does not say its default"
        if action.default is not None:
            value = f"{action.default:g}" if isinstance(action.default, float) else str(action.default)
            assert value in action.help, f"{command} {action.option_strings[0]}: help does not show {value}"
    helps = {a.option_strings[0]: a.help for a in _options(command)}
    for option, shown in (("--target", "xcvu9p"), ("--task", "function_tracking"), ("--seed", "default 0")):
        if option in helps:
            assert shown in helps[option], f"{command} {option}"


def test_example_files_ship_in_the_wheel_config():
    import tomllib

    data = tomllib.loads((EXAMPLES.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["codesign.examples"]
    assert "*.npz" in patterns and "*.csv" in patterns
    assert zipfile.is_zipfile(EXAMPLES / "stream_3in_2out.npz")
