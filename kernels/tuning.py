"""Launch configurations of the low-bit matmul kernels: heuristics, the search space, the on-disk cache.

Everything here is data plus pure functions: the candidate space is tuning_space.json (shipped),
a problem's candidates are that space pruned by `valid_config`, an untuned problem gets
`heuristic_config`, and tuned winners live in one JSON file per GPU model under the user cache
dir (read through a cache keyed by the file's mtime, so a new result is seen without reloads).
Autotuning is opt-in and stops when its time budget is spent.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from codesign.resources import cache_dir

__all__ = [
    "GEMV_MAX_M",
    "KernelConfig",
    "Problem",
    "kernel_kind",
    "heuristic_config",
    "valid_config",
    "prune_configs",
    "search_space",
    "cache_dir",
    "cache_file",
    "read_tuned",
    "lookup_config",
    "autotune",
]

#: up to this many activation rows the broadcast-reduce GEMV kernel runs; above it the tl.dot GEMM.
GEMV_MAX_M = 4
_SPACE_FILE = Path(__file__).with_name("tuning_space.json")


@dataclass(frozen=True)
class KernelConfig:
    """Tile sizes and launch parameters of one kernel launch."""

    block_m: int
    block_n: int
    block_k: int
    split_k: int = 1
    num_warps: int = 4
    num_stages: int = 2


@dataclass(frozen=True)
class Problem:
    """What a launch computes: y[M, N] = x[M, K] W^T with W in `bits`-bit codes."""

    m: int
    n: int
    k: int
    bits: int
    group_size: int
    rank: int = 0
    dtype: str = "float16"
    table_mode: int = 0

    @property
    def kind(self) -> str:
        """'gemv' or 'gemm'."""
        return kernel_kind(self.m)

    def cache_key(self) -> str:
        """Key of this problem in a tuning cache; M is bucketed to the next power of two."""
        m_bucket = 1 << max(0, (self.m - 1).bit_length())
        return (
            f"{self.kind}|m{m_bucket}|n{self.n}|k{self.k}|b{self.bits}|g{self.group_size}"
            f"|r{self.rank}|{self.dtype}|t{self.table_mode}"
        )


def kernel_kind(m: int) -> str:
    """The kernel family for M activation rows."""
    return "gemv" if m <= GEMV_MAX_M else "gemm"


def _pow2_at_least(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


def _pow2_at_most(value: int) -> int:
    return 1 << max(0, value.bit_length() - 1)


def heuristic_config(problem: Problem) -> KernelConfig:
    """A valid configuration for any problem, from its shape alone."""
    if problem.kind == "gemv":
        block_m = _pow2_at_least(problem.m)
        block_k = 128 if block_m == 1 else 64
        block_n = 64 if block_m == 1 else 32
        programs = -(-problem.n // block_n)
        # enough programs to fill a large GPU (~500), while each keeps >= 8 K tiles
        split = max(1, min(problem.k // (block_k * 8), 512 // programs))
        return KernelConfig(block_m, block_n, block_k, split_k=_pow2_at_most(split), num_warps=4, num_stages=2)
    block_m = 16 if problem.m <= 16 else 32 if problem.m <= 32 else 64 if problem.m <= 64 else 128
    block_n = 64 if problem.m <= 64 else 128
    warps = 4 if block_m * block_n <= 64 * 64 else 8
    return KernelConfig(block_m, block_n, 64, split_k=1, num_warps=warps, num_stages=3)


def valid_config(config: KernelConfig, problem: Problem) -> bool:
    """Whether a configuration can run the problem (tile constraints, register budget of the GEMV)."""
    pow2 = all(v > 0 and v & (v - 1) == 0 for v in (config.block_m, config.block_n, config.block_k, config.split_k))
    if not pow2 or config.block_k < 16:
        return False
    if problem.kind == "gemv":
        if config.block_m < problem.m or config.block_m > GEMV_MAX_M:
            return False
        if config.block_m * config.block_n * config.block_k > 16384:
            return False
        return config.split_k * config.block_k <= max(problem.k, config.block_k)
    return config.split_k == 1 and min(config.block_m, config.block_n) >= 16


def prune_configs(candidates: Iterable[KernelConfig], problem: Problem) -> list[KernelConfig]:
    """The candidates that can run the problem, in their given order, without duplicates."""
    seen: list[KernelConfig] = []
    for config in candidates:
        if config not in seen and valid_config(config, problem):
            seen.append(config)
    return seen


@lru_cache(maxsize=1)
def search_space() -> dict[str, tuple[KernelConfig, ...]]:
    """The shipped candidate configurations per kernel kind (tuning_space.json)."""
    data = json.loads(_SPACE_FILE.read_text())
    return {kind: tuple(KernelConfig(**entry) for entry in data[kind]) for kind in ("gemv", "gemm")}


def cache_file(device_name: str) -> Path:
    """The tuning cache of one GPU model, e.g. ~/.cache/codesign/kernels/nvidia-h100-80gb-hbm3.json."""
    slug = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "unknown"
    return cache_dir() / "kernels" / f"{slug}.json"


@lru_cache(maxsize=16)
def _read_tuned(path: str, mtime_ns: int) -> dict[str, KernelConfig]:
    try:
        data = json.loads(Path(path).read_text())
        return {key: KernelConfig(**entry) for key, entry in data.get("configs", {}).items()}
    except (OSError, ValueError, TypeError):
        return {}  # an unreadable cache is the same as no cache


def read_tuned(path: Path) -> dict[str, KernelConfig]:
    """Tuned configurations in a cache file ({} when absent or unreadable)."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return {}
    return _read_tuned(str(path), mtime)


def lookup_config(problem: Problem, device_name: str | None) -> KernelConfig:
    """The tuned configuration of this problem on this GPU model if cached and valid, else the heuristic."""
    if device_name:
        tuned = read_tuned(cache_file(device_name)).get(problem.cache_key())
        if tuned is not None and valid_config(tuned, problem):
            return tuned
    return heuristic_config(problem)


def _write_entry(path: Path, device_name: str, key: str, config: KernelConfig, micros: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data["device"] = device_name
    data.setdefault("configs", {})[key] = asdict(config)
    data.setdefault("micros", {})[key] = round(micros, 3)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def autotune(
    problem: Problem,
    device_name: str,
    run: Callable[[KernelConfig], None],
    budget_s: float = 20.0,
    reps: int = 10,
    synchronize: Callable[[], None] = lambda: None,
    candidates: Iterable[KernelConfig] | None = None,
) -> KernelConfig:
    """Time the problem's pruned candidates (heuristic first) until budget_s is spent; cache and return the best.

    `run(config)` launches the kernel once; `synchronize()` waits for the device (torch.cuda.synchronize
    on a GPU). A candidate that raises is skipped.
    """
    if budget_s <= 0:
        raise ValueError(f"autotune budget must be positive, got {budget_s}")
    pool = [heuristic_config(problem), *(candidates if candidates is not None else search_space()[problem.kind])]
    deadline = time.perf_counter() + budget_s
    best: tuple[float, KernelConfig] | None = None
    for config in prune_configs(pool, problem):
        if best is not None and time.perf_counter() > deadline:
            break
        try:
            run(config)  # compile and warm up
            synchronize()
            start = time.perf_counter()
            for _ in range(reps):
                run(config)
            synchronize()
        except Exception:  # noqa: BLE001 - a config the compiler or device rejects is not a winner
            continue
        micros = (time.perf_counter() - start) / reps * 1e6
        if best is None or micros < best[0]:
            best = (micros, config)
    if best is None:
        return heuristic_config(problem)
    _write_entry(cache_file(device_name), device_name, problem.cache_key(), best[1], best[0])
    return best[1]
