"""`codesign profile`: profile a learner on a task stream and write the table, JSON and PNG."""

from __future__ import annotations

from pathlib import Path

from codesign.kan.data_run import data_spec, describe_data
from codesign.kan.profile_report import plot_profile, profile_table, write_profile_json
from codesign.kan.profiler import Profile, profile_stream, propose_types
from codesign.kan.run import task_spec
from codesign.outputs import OutputFolder, Progress
from codesign.tasks import DataStream

__all__ = ["run_profile", "PROFILE_FILES"]

PROFILE_FILES = ("profile.txt", "profile.json", "profile.png")


def run_profile(learner: str, config: str | None, task: str, samples: int, seed: int, out: str | None, force: bool,
                data: DataStream | None = None) -> Profile:
    """Profile, propose types, print the table, and write profile.{txt,json,png} into the output folder.

    With ``data`` (a user's file, read at the command line's edge) the stream is that file's
    samples with their train flags, and ``task`` and ``samples`` are not used.
    """
    if data is None and samples < 1:
        raise ValueError(f"--samples={samples}: need at least one sample")
    out_dir = Path(out) if out else Path("codesign_out") / f"profile_{learner}"
    folder = OutputFolder(out_dir, "profile", force=force, expected=PROFILE_FILES)  # checked before any work
    if data is None:
        spec, stream, _ = task_spec(learner, config, task, samples, seed)
        what = f"{samples} samples of {task}"
    else:
        spec, _ = data_spec(learner, config, data)
        stream, what = data, f"{len(data)} samples of {data.path}"
        print("\n".join(describe_data(spec, data)))
    progress = Progress(3)
    with folder.writing() as work:
        with progress.step("profile", f"profiling {learner} on {what}"):
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
