"""A fuzz test of `codesign compress` on a user's own folders: models shorter than the default context, an encoder
of few positions, and a folder codesign compressed itself.

As tests/test_cli_fuzz.py: each case ends with exit status 0 or 2, no traceback, at most two lines on stderr
besides the per-layer progress (a refusal: exactly one), and no file touched outside its --out: the canaries in
the working directory and in an existing --out, and every file of the model folders, stay as they were. The
cases come from a seeded generator, so a failure reproduces.
"""

from __future__ import annotations

import random
import re

from codesign.cli import main
from tests.compress_e2e.own_models import user_folder, user_tokenizer
from tests.support import requires_llm
from tests.test_cli_errors import run_many
from tests.test_cli_fuzz import _snapshot, assert_only_out_changed

pytestmark = requires_llm

# folder -> the positions of a causal LM (None: an encoder, or refused whatever its positions)
MODELS = {"opt128": 128, "llama256": 256, "bert32": None, "compressed": None}
CONTEXTS = ["0", "1", "2", "16", "127", "128", "129", "256", "257", "512", "abc", "-1"]
SMALL = ["--group-size", "32", "--calib-tokens", "64", "--eval-tokens", "64", "--calib", "4", "--eval", "4"]
PROGRESS = re.compile(r"^  \[\d+/\d+\] \S+$")


def generated_cases(n_per_model: int = 4, seed: int = 20261205) -> list[list[str]]:
    """Each model with the default context and with one past its positions, then seeded variations."""
    rng = random.Random(seed)
    cases = []
    for i, model in enumerate(MODELS):
        base = ["compress", model, "--method", "kmeans", "--bits", "4", *SMALL]
        cases.append([*base, "--out", f"default_{i}"])
        cases.append([*base, "--context", "512", "--out", f"long_{i}"])
        for j in range(n_per_model):
            argv = ["compress", model, "--method", rng.choice(["kmeans", "int", "int", "nope"]),
                    "--bits", rng.choice(["4", "4", "3", "9"]), *SMALL]
            if rng.random() < 0.8:
                argv += ["--context", rng.choice(CONTEXTS)]
            argv += ["--out", rng.choice([f"o_{i}_{j}", f"o_{i}_{j}", "out_existing"])]
            if rng.random() < 0.3:
                argv.append("--force")  # may replace only what codesign wrote: never the canary
            cases.append(argv)
    return cases


def _valid(argv: list[str]) -> bool:
    """Everything on the line is acceptable: the run must succeed."""
    value = dict(zip(argv, argv[1:]))
    positions = MODELS[argv[1]]
    context = value.get("--context")
    if argv[1] == "compressed" or value["--method"] == "nope" or value["--bits"] == "9" or value["--out"] == "out_existing":
        return False
    if context is not None and (not context.isdigit() or int(context) < 2):
        return False
    return positions is None or context is None or int(context) <= positions


def test_own_models_never_give_a_traceback_or_touch_a_file_outside_out(tmp_path, minilm, capsys):
    tmp_path = tmp_path.resolve()
    tokenizer = user_tokenizer(minilm)
    user_folder(tmp_path / "opt128", "opt", tokenizer, max_position_embeddings=128)
    user_folder(tmp_path / "llama256", "llama", tokenizer, max_position_embeddings=256)
    user_folder(tmp_path / "bert32", "bert", tokenizer, max_position_embeddings=32)
    assert main(["compress", str(tmp_path / "llama256"), "--method", "kmeans", "--bits", "4", *SMALL,
                 "--out", str(tmp_path / "compressed")]) == 0
    tokenizer.save_pretrained(tmp_path / "compressed")  # a compressed folder made to look like a model folder
    capsys.readouterr()
    (tmp_path / "canary.txt").write_text("canary in the working directory\n")
    (tmp_path / "out_existing").mkdir()
    (tmp_path / "out_existing" / "canary.txt").write_text("canary in --out\n")
    before = _snapshot(tmp_path)
    cases = generated_cases()
    previous = before
    succeeded = 0
    # codesign's once-per-process warning that the CPU runs the torch reference matmul is not what this is about
    quiet = ["env", "PYTHONWARNINGS=ignore:codesign:RuntimeWarning"]
    for argv, done in zip(cases, run_many(cases, tmp_path, prefix=quiet, watch=tmp_path)):
        err = done.stderr.strip()
        assert done.returncode in (0, 2), (argv, done.returncode, err)
        lines = [line for line in err.splitlines() if not PROGRESS.match(line)]
        assert "Traceback" not in err and len(lines) <= 2, (argv, err)
        value = dict(zip(argv, argv[1:]))
        if _valid(argv):
            assert done.returncode == 0, (argv, err)
            succeeded += 1
            positions = MODELS[argv[1]]
            shortened = positions is not None and "--context" not in value and positions < 512
            assert any("codesign: note:" in line for line in lines) == (shortened or argv[1] == "bert32"), (argv, err)
        else:
            assert done.returncode == 2 and len(lines) == 1 and ": error: " in lines[0], (argv, err)
            assert not any(PROGRESS.match(line) for line in err.splitlines()), argv  # refused before any work
            if argv[1] == "compressed":
                assert "already compressed" in lines[0] or "--context" in lines[0], (argv, err)
        previous = assert_only_out_changed(argv, done.files, before, previous, tmp_path)
    assert succeeded >= 5
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert leftovers == [], leftovers  # no partial folder of a refused run
