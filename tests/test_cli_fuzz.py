"""A fuzz test of the command line: every subcommand on generated bad arguments and bad config files.

Each case must end with exit status 0, 2 or 3, no traceback, at most two lines on stderr, and no file
touched outside --out: a canary in the working directory and one in an existing --out folder stay as
they were. The cases come from a seeded generator (the same every run), so a failure reproduces.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from tests.test_cli_errors import run_many

BAD_NUMBERS = ["-1", "0", "abc", "", "1e3", "nan", "inf", "-inf", "10000000000", "0x", "3.5", "--", "1,2"]
BAD_NAMES = ["nope", "", "KAN_ONLINE", "../x", "kan_online;rm", "☃"]
BAD_PATHS = ["missing.toml", "canary.txt", ".", "out_existing", "/dev/null", "/proc/version"]

# subcommand -> (fixed arguments that keep an accepted run small, {option: bad values})
COMMANDS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "learn": (["learn", "kan_online", "--samples", "40"],
              {"--samples": BAD_NUMBERS, "--seed": BAD_NUMBERS, "--task": BAD_NAMES, "--config": BAD_PATHS}),
    "profile": (["profile", "kan_online", "--samples", "40", "--out", "out_existing"],
                {"--samples": BAD_NUMBERS, "--seed": BAD_NUMBERS, "--task": BAD_NAMES, "--config": BAD_PATHS,
                 "--out": BAD_PATHS}),
    "estimate": (["estimate", "kan_online"],
                 {"--target": BAD_NAMES, "--pipeline": BAD_NUMBERS + BAD_NAMES, "--config": BAD_PATHS}),
    "explore": (["explore", "kan_online", "--samples", "40", "--grid", "4", "--bits", "12", "--hidden", "2",
                 "--out", "out_existing"],
                {"--grid": BAD_NUMBERS, "--bits": BAD_NUMBERS, "--hidden": BAD_NUMBERS, "--workers": BAD_NUMBERS,
                 "--samples": BAD_NUMBERS, "--pipelines": BAD_NAMES, "--task": BAD_NAMES, "--out": BAD_PATHS}),
    "build": (["build", "kan_online", "--samples", "5", "--out", "out_existing"],
              {"--target": BAD_NAMES, "--samples": BAD_NUMBERS, "--seed": BAD_NUMBERS, "--task": BAD_NAMES,
               "--pipeline": BAD_NUMBERS + BAD_NAMES, "--config": BAD_PATHS, "--out": BAD_PATHS}),
    "sim": (["sim", "out_existing"], {"--wall-seconds": BAD_NUMBERS}),
    "cim energy": (["cim", "energy", "mlp_digits", "--no-sweep"],
                   {"--device": BAD_NAMES, "--dac-bits": BAD_NUMBERS, "--adc-bits": BAD_NUMBERS,
                    "--tile": BAD_NUMBERS, "--batch": BAD_NUMBERS, "--gpu-bytes": BAD_NUMBERS}),
    "cim train": (["cim", "train", "--epochs", "1", "--quiet", "--out", "out_existing"],
                  {"--method": BAD_NAMES, "--dataset": BAD_NAMES, "--model": BAD_NAMES, "--epochs": BAD_NUMBERS,
                   "--batch": BAD_NUMBERS, "--lr": BAD_NUMBERS, "--k": BAD_NUMBERS, "--sigma": BAD_NUMBERS,
                   "--strength": BAD_NUMBERS, "--out": BAD_PATHS}),
    "cim eval": (["cim", "eval", "canary.txt"], {"--sweep": BAD_NAMES, "--chips": BAD_NUMBERS, "--out": BAD_PATHS}),
    "compress": (["compress", "minilm", "--method", "kmeans", "--bits", "4", "--out", "out_existing"],
                 {"--method": BAD_NAMES, "--bits": BAD_NUMBERS, "--rank": BAD_NUMBERS, "--group-size": BAD_NUMBERS,
                  "--steps": BAD_NUMBERS, "--blocks": BAD_NUMBERS, "--out": BAD_PATHS}),
}

BAD_CONFIGS = {
    "bool_int.toml": "grid_size = true\n",
    "float_int.toml": "grid_size = 8.5\n",
    "huge.toml": "widths = [1000, 1000]\n",
    "negative.toml": "widths = [2, -4, 1]\n",
    "string_widths.toml": 'widths = "2,4,1"\n',
    "unknown.toml": "grid_sise = 8\n",
    "table.toml": "[grid_size]\nvalue = 8\n",
    "broken.toml": "widths = [2, 4\n",
    "empty_type.toml": 'act_t = ""\n',
    "list.yaml": "- 1\n- 2\n",
    "scalar.yaml": "8\n",
    "binary.toml": "\x00\x01\x02garbage",
    "lr_shift.toml": "lr_shift = -3\n",
    "clock.toml": "clock_mhz = 0\n",
}


def generated_cases(n_per_command: int = 8, seed: int = 20261201) -> list[list[str]]:
    """Bad command lines: each subcommand's small base with one or two options replaced by bad values."""
    rng = random.Random(seed)
    cases: list[list[str]] = []
    for base, options in COMMANDS.values():
        for _ in range(n_per_command):
            argv = list(base)
            for option in rng.sample(sorted(options), k=min(len(options), rng.choice((1, 2)))):
                value = rng.choice(options[option])
                if option in argv:
                    argv[argv.index(option) + 1] = value
                else:
                    argv += [option, value]
            if "--out" in argv and rng.random() < 0.5:
                argv.append("--force")  # --force may replace only what codesign wrote: never the canaries
            cases.append(argv)
        cases.append(base[:1] + ["--no-such-option"])
    for command in ("learn", "estimate", "build", "profile", "explore"):
        base = COMMANDS[command][0]
        cases += [[*base, "--config", name] for name in BAD_CONFIGS]
    return cases


def _snapshot(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under folder, as the child reports them after each case."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _out_of(argv: list[str], cwd: Path) -> Path:
    """The --out folder a command line names (its last one), or a path that holds nothing."""
    outs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--out"]
    return (cwd / outs[-1]).resolve() if outs and outs[-1] else cwd.resolve() / "no-out"


def assert_only_out_changed(argv: list[str], now: dict[str, str], before: dict[str, str], previous: dict[str, str],
                            cwd: Path) -> dict[str, str]:
    """No file there at the start changed or gone, every new file under the case's --out; returns ``now``."""
    assert {k: now.get(k) for k in before} == before, argv
    written = _out_of(argv, cwd)
    new = [k for k in now if k not in previous]
    assert all(written in (cwd / k).parents and written != cwd for k in new), (argv, new)
    return now


def test_no_bad_input_gives_a_traceback_or_touches_a_file_outside_out(tmp_path):
    tmp_path = tmp_path.resolve()
    (tmp_path / "canary.txt").write_text("canary in the working directory\n")
    out = tmp_path / "out_existing"
    out.mkdir()
    (out / "canary.txt").write_text("canary in --out\n")
    for name, text in BAD_CONFIGS.items():
        (tmp_path / name).write_text(text)
    before = _snapshot(tmp_path)
    cases = generated_cases()
    assert len(cases) > 150
    previous = before
    for argv, done in zip(cases, run_many(cases, tmp_path, watch=tmp_path)):
        err = done.stderr.strip()
        assert done.returncode in (0, 2, 3), (argv, done.returncode, err)
        assert "Traceback" not in err and len(err.splitlines()) <= 2, (argv, err)
        config = argv[argv.index("--config") + 1] if "--config" in argv else None
        if config in BAD_CONFIGS and config != "huge.toml":  # ill-typed or out of range: refused, never run
            assert done.returncode == 2 and err.startswith("codesign: error:"), (argv, err)
        previous = assert_only_out_changed(argv, done.files, before, previous, tmp_path)
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert leftovers == [], leftovers  # no partial folder of a refused run


# Files a user adds to an earlier result: beside the generated RTL and firmware, deeper down, and at the top.
USER_FILES = {"rtl/my_pins.xdc": "set_property PACKAGE_PIN E3 [get_ports clk]\n",
              "firmware/my_extra.cpp": "// the user's own code\n",
              "firmware/mine/notes.txt": "a folder of the user's inside a generated one\n",
              "tb_data/my_trace.txt": "1 2 3\n", "my_notes.md": "at the top\n"}


def test_forced_rewrites_keep_the_users_files_inside_generated_folders(tmp_path):
    tmp_path = tmp_path.resolve()
    small = ["--samples", "5"]
    first = run_many([["build", "kan_online", *small, "--out", "prev"],
                      ["profile", "kan_online", "--samples", "40", "--out", "prof"]], tmp_path)
    assert [d.returncode for d in first] == [0, 0], [d.stderr for d in first]
    for rel, text in USER_FILES.items():
        (tmp_path / "prev" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "prev" / rel).write_text(text)
    (tmp_path / "prof" / "my_profile_notes.txt").write_text("mine\n")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "at-all")
    rng = random.Random(20261204)
    _, options = COMMANDS["build"]
    bad = [["build", "kan_online", *small, "--out", "prev", "--force", option, rng.choice(values)]
           for option, values in sorted(options.items()) if option != "--out"]
    cases = [["build", "kan_online", *small, "--out", "prev", "--force"],  # the exact command
             ["build", "kan_online", *small, "--out", "prev", "--force", "--pipeline", "deep"],  # a result of another shape
             *bad,
             ["profile", "kan_online", "--samples", "40", "--out", "prev", "--force"],  # another command's folder
             ["build", "kan_online", *small, "--out", "prof", "--force"],
             ["profile", "kan_online", "--samples", "40", "--out", "prof", "--force"],
             ["build", "kan_online", *small, "--out", "dangling"],
             ["build", "kan_online", *small, "--out", "dangling/inside"],
             ["build", "kan_online", *small, "--out", "my build with spaces"]]
    done = run_many(cases, tmp_path)
    for argv, result in zip(cases, done):
        err = result.stderr.strip()
        assert result.returncode in (0, 2, 3), (argv, result.returncode, err)
        assert "Traceback" not in err and len(err.splitlines()) <= 2, (argv, err)
    assert done[0].returncode == 0 and done[1].returncode == 0, (done[0].stderr, done[1].stderr)
    for rel, text in USER_FILES.items():
        assert (tmp_path / "prev" / rel).read_text() == text, rel
    assert all("broken link" in d.stderr and d.returncode == 2 for d in done[-3:-1]), [d.stderr for d in done[-3:-1]]
    assert done[-1].returncode == 0 and (tmp_path / "my build with spaces" / "report.json").is_file()
    assert (tmp_path / "prof" / "my_profile_notes.txt").read_text() == "mine\n"
    assert (tmp_path / "dangling").is_symlink() and not (tmp_path / "nowhere").exists()
    assert json.loads((tmp_path / "prev" / "report.json").read_text())["learner"] == "kan_online"
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert leftovers == [], leftovers
