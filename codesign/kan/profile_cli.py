"""`codesign profile`: profile a learner on a task stream and write the table, JSON and PNG."""

from __future__ import annotations

from pathlib import Path

from codesign.kan.profile_report import plot_profile, profile_table, write_profile_json
from codesign.kan.profiler import Profile, profile_stream, propose_types
from codesign.kan.run import task_spec
from codesign.outputs import OutputFolder, Progress

__all__ = ["run_profile", "PROFILE_FILES"]

PROFILE_FILES = ("profile.txt", "profile.json", "profile.png")


def run_profile(learner: str, config: str | None, task: str, samples: int, seed: int, out: str | None, force: bool) -> Profile:
    """Profile, propose types, print the table, and write profile.{txt,json,png} into the output folder."""
    if samples < 1:
        raise ValueError(f"--samples={samples}: need at least one sample")
    out_dir = Path(out) if out else Path("codesign_out") / f"profile_{learner}"
    folder = OutputFolder(out_dir, "profile", force=force, expected=PROFILE_FILES)  # checked before any work
    spec, stream, _ = task_spec(learner, config, task, samples, seed)
    progress = Progress(3)
    with folder.writing() as work:
        with progress.step("profile", f"profiling {learner} on {samples} samples of {task}"):
            profile = profile_stream(spec, stream, seed)
        with progress.step("propose", "proposing the narrowest types (re-profiling each)"):
            _, proposed, proposals = propose_types(spec, stream, seed)
        with progress.step("write", f"writing {out_dir}/profile.{{txt,json,png}}"):
            text = profile_table(profile, proposals, proposed.mse)
            (work / "profile.txt").write_text(text + "\n")
            write_profile_json(work / "profile.json", profile, proposed, proposals)
            plot_profile(work / "profile.png", profile)
    print()
    print(text)
    return profile
