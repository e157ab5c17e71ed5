"""The emitted HLS and SV of the default spec against the checked-in golden files.

On a mismatch the failure shows the unified diff of what changed in the generated hardware. When
the change is intended, regenerate with ``python -m tests.golden.regenerate`` and commit the diff.
"""

from __future__ import annotations

import difflib

import pytest

from tests.golden.emit import GOLDEN_DIR, LEARNERS, emit_sources, golden_files

REGENERATE = "python -m tests.golden.regenerate"
_MAX_DIFF_LINES = 400


@pytest.mark.parametrize("learner", LEARNERS)
def test_emitted_sources_match_the_golden_files(learner, tmp_path):
    golden_folder = GOLDEN_DIR / learner
    assert golden_folder.is_dir(), f"no golden files for {learner}: run `{REGENERATE}`"
    emit_sources(learner, tmp_path)
    emitted, golden = golden_files(tmp_path), golden_files(golden_folder)
    problems = []
    for rel in sorted(set(emitted) | set(golden)):
        if rel not in golden:
            problems.append(f"new file {rel} (not in tests/golden/{learner})")
        elif rel not in emitted:
            problems.append(f"file {rel} is no longer emitted")
        elif emitted[rel] != golden[rel]:
            problems.extend(difflib.unified_diff(golden[rel].splitlines(), emitted[rel].splitlines(),
                                                 f"golden/{learner}/{rel}", f"emitted/{rel}", lineterm=""))
    if problems:
        shown = problems[:_MAX_DIFF_LINES]
        if len(problems) > _MAX_DIFF_LINES:
            shown.append(f"... {len(problems) - _MAX_DIFF_LINES} more lines")
        pytest.fail(f"the emitted sources of {learner} differ from the golden files (if intended: `{REGENERATE}`, "
                    "then commit the diff):\n" + "\n".join(shown), pytrace=False)
