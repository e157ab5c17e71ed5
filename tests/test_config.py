"""Configs: the generated schema, typed fields, --print-config round trips, the examples, and no field dropped."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from codesign.cli import main
from codesign.config import LEARNERS, load_config_spec, load_spec, schema_markdown
from codesign.fpga.boards import find_board
from codesign.fpga.build import build
from codesign.fpga.explore import design_points, sweep_axes
from codesign.fpga.plan import load_build_spec
from codesign.kan.kinds import KINDS
from codesign.kan.run import task_spec
from codesign.kan.spec import KANSpec
from codesign.kan.spec_fields import GridRangeRule, IntRule, RealRule, WidthsRule, field_rule
from codesign.resources import resource_dir

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir() if p.suffix in (".toml", ".yaml"))


def _fields(rule_type):
    """(spec class, field name) of every spec field whose rule is of the given type."""
    return [(cls, f.name) for cls in (k.spec_class for k in KINDS.values()) for f in dataclasses.fields(cls)
            if isinstance(field_rule(f), rule_type)]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_docs_config_md_is_generated_from_the_spec_rules():
    text = (ROOT / "docs" / "config.md").read_text()
    assert text == schema_markdown(), "docs/config.md is stale: run `python -m codesign.config > docs/config.md`"
    for cls in (k.spec_class for k in KINDS.values()):
        for f in dataclasses.fields(cls):
            rule = field_rule(f)
            assert rule.doc and rule.range_text()
            assert f"| `{f.name}` | {rule.type_name()} | {rule.range_text()} |" in text


@pytest.mark.parametrize("cls, name", _fields(IntRule))
@pytest.mark.parametrize("bad", [True, False, 8.0, 2.5, "8"])
def test_integer_fields_refuse_booleans_floats_and_strings(cls, name, bad):
    with pytest.raises(ValueError) as info:
        cls(**{name: bad})
    message = str(info.value)
    assert message.startswith(f"{name}={bad!r}: expected an integer in ") and "\n" not in message


@pytest.mark.parametrize("cls, name", _fields(RealRule))
@pytest.mark.parametrize("bad", [True, "250", [250.0], float("nan")])
def test_number_fields_refuse_booleans_strings_and_lists(cls, name, bad):
    with pytest.raises(ValueError, match=f"^{name}=.*expected a number"):
        cls(**{name: bad})


def test_number_fields_take_an_integer_as_that_number():
    assert KANSpec(clock_mhz=300) == KANSpec(clock_mhz=300.0)
    assert isinstance(KANSpec(clock_mhz=300).clock_mhz, float)


@pytest.mark.parametrize("cls, name", _fields(WidthsRule) + _fields(GridRangeRule))
@pytest.mark.parametrize("bad", ["2,4,1", 5, [2.0, 1.0], [True, 1], {"a": 1}])
def test_list_fields_refuse_strings_scalars_and_ill_typed_items(cls, name, bad):
    with pytest.raises(ValueError, match=f"^{name}="):
        cls(**{name: bad})


@pytest.mark.parametrize("name, bad", [("act_t", 16), ("basis_t", 1.5), ("dbasis_t", True)])
def test_type_fields_refuse_numbers(name, bad):
    with pytest.raises(ValueError, match=f"^{name}={bad!r}: expected an ap_fixed type string"):
        KANSpec(**{name: bad})


def test_fields_beside_a_spec_table_are_refused_not_dropped(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("grid_size = 4\n[spec]\nwidths = [2, 3, 1]\n")
    with pytest.raises(ValueError, match="grid_size outside the \\[spec\\] table"):
        load_spec("kan_online", config)


def test_grid_size_true_in_a_config_is_refused_by_every_command(capsys, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("grid_size = true\n")
    for argv in (["learn", "kan_online", "--samples", "10"], ["estimate", "kan_online"],
                 ["build", "kan_online", "--out", str(tmp_path / "o")],
                 ["profile", "kan_online", "--samples", "10", "--out", str(tmp_path / "p")],
                 ["explore", "kan_online", "--samples", "10", "--out", str(tmp_path / "e")]):
        code, _, err = run_cli(capsys, *argv, "--config", str(config))
        assert code == 2 and err.count("\n") == 1, (argv, err)
        assert "grid_size=True: expected an integer in 1..8192, got a boolean" in err
    assert not any((tmp_path / d).exists() for d in ("o", "p", "e"))


def test_learn_keeps_config_widths_or_refuses_them(capsys, tmp_path):
    wide = tmp_path / "wide.toml"
    wide.write_text("widths = [1000, 1000]\n")
    code, _, err = run_cli(capsys, "learn", "kan_online", "--samples", "10", "--config", str(wide))
    assert code == 2 and err.count("\n") == 1 and "config widths=[1000, 1000]" in err
    # function_tracking is generated at the config's input width: a 3-5-1 learner runs, not a 2-x-1 one
    three = tmp_path / "three.toml"
    three.write_text("widths = [3, 5, 1]\ngrid_size = 5\n")
    spec, stream, _ = task_spec("kan_online", str(three), "function_tracking", 10, 0)
    assert spec.widths == (3, 5, 1) and stream.n_inputs == 3
    code, out, _ = run_cli(capsys, "learn", "kan_online", "--samples", "10", "--config", str(three))
    assert code == 0 and f"{spec.num_parameters} parameters" in out
    # a task with fixed widths: a config that does not match is refused, naming both
    code, _, err = run_cli(capsys, "learn", "kan_online", "--task", "mackey_glass", "--samples", "10",
                           "--config", str(three))
    assert code == 2 and "config widths=[3, 5, 1]: task mackey_glass has 4 input(s)" in err
    # without widths in the config, the task's widths replace the default's first and last
    spec, _, _ = task_spec("kan_online", None, "mackey_glass", 10, 0)
    assert spec.widths == (4, 4, 1)


def test_explore_sweeps_only_what_the_config_leaves_open(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('grid_size = 5\nwidths = [2, 3, 1]\ncoef_t = "ap_fixed<20,6,AP_RND,AP_SAT>"\n')
    base, fields = load_config_spec("kan_online", config)
    grid, bits, hidden = sweep_axes(base, fields, None, None, None)
    assert (grid, bits, hidden) == ((5,), (None,), ((3,),))
    (point,) = design_points(base, grid, bits, hidden)
    assert point["name"] == "2-3-1 G5"
    for option, value in (("--grid", [4, 8]), ("--bits", [12]), ("--hidden", [(4,)])):
        given = {"grid": None, "bits": None, "hidden": None, option[2:]: value}
        with pytest.raises(ValueError, match=f"^{option} and the config's"):
            sweep_axes(base, fields, **given)
    # nothing set: the default axes
    grid, bits, hidden = sweep_axes(KANSpec(), {}, None, None, None)
    assert len(grid) > 1 and len(bits) > 1 and len(hidden) > 1


@pytest.mark.parametrize("command", ["build", "estimate", "learn"])
def test_print_config_loads_back_to_the_same_spec(capsys, tmp_path, command):
    config = tmp_path / "c.yaml"
    config.write_text("widths: [2, 3, 1]\ngrid_size: 5\nlut_bits: 7\nact_t: 'ap_fixed<14,5,AP_RND,AP_SAT>'\n")
    extra = ["--target", "xc7z020"] if command != "learn" else []
    out_dir = tmp_path / "o"
    argv = [command, "kan_online", "--config", str(config), *extra, "--print-config"]
    if command == "build":
        argv += ["--out", str(out_dir)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and err == "" and not out_dir.exists()
    printed = tmp_path / "printed.toml"
    printed.write_text(out)
    if command == "learn":
        expected = task_spec("kan_online", str(config), "function_tracking", 1, 0)[0]
        assert load_spec("kan_online", printed) == expected
    else:
        board = find_board("xc7z020")
        expected = load_build_spec("kan_online", config, board)
        assert expected.clock_mhz == board.clock_mhz  # the board's clock: the config sets none
        assert load_build_spec("kan_online", printed, board) == expected
    assert expected.widths == (2, 3, 1) and expected.lut_bits == 7


def test_examples_ship_with_the_package():
    shipped = sorted(p.name for p in resource_dir("examples").iterdir() if p.suffix in (".toml", ".yaml"))
    assert shipped == EXAMPLES and len(EXAMPLES) >= 4


def _learner_of(example: str) -> str:
    return next(name for name in LEARNERS if example.startswith(name.split("_")[0] + "_"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_configs_load_and_build_bit_exact(tmp_path, example):
    path = ROOT / "examples" / example
    learner = _learner_of(example)
    spec = load_spec(learner, path)
    assert spec.to_dict()  # loads
    report = build(learner, config=path, out=tmp_path / "o", samples=20, stream=open("/dev/null", "w"))
    assert report["csim"]["bit_exact"], report["csim"]
