"""benchmarks/compress_frontier.py: k-means read at a peer row's bits per weight, measured or interpolated per window."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

from compress_frontier import at_bits, calibration_free, convexity, frontier_table  # noqa: E402
from compress_models import KMEANS_GRID  # noqa: E402


def _row(method: str, bits: int, group: int, bpw: float, nll: list[float], **extra) -> dict:
    counts = [100] * len(nll)
    reference = [2.0 * c for c in counts]
    metric = {"perplexity": math.exp(sum(nll) / sum(counts)), "reference_perplexity": math.exp(2.0), "n_tokens": sum(counts),
              "window_nll": nll, "reference_window_nll": reference, "window_tokens": counts}
    return {"model": "m", "method": method, "bits": bits, "group_size": group, "bits_per_weight": bpw, "blocks": None,
            "metric": metric, "kmeans_grid": KMEANS_GRID if method == "kmeans" else None, **extra}


def test_a_peer_between_two_kmeans_rows_reads_the_chord_window_by_window():
    curve = [_row("kmeans", 4, 64, 4.375, [260.0, 240.0]), _row("kmeans", 4, 32, 4.75, [240.0, 230.0])]
    nll, how = at_bits(curve, 4.5)
    t = (4.5 - 4.375) / (4.75 - 4.375)
    assert nll == pytest.approx([260 + t * (240 - 260), 240 + t * (230 - 240)])
    assert how == "between groups 32 and 64"
    assert at_bits(curve, 4.375)[1] == "group 64, measured"
    assert at_bits(curve, 5.0) is None  # no extrapolation past the measured group sizes


def test_the_table_pairs_the_interpolated_kmeans_windows_with_the_peer():
    rows = [_row("kmeans", 4, 64, 4.375, [260.0, 240.0]), _row("kmeans", 4, 32, 4.75, [240.0, 230.0]),
            _row("hqq", 4, 64, 4.5, [250.0, 236.0]),
            _row("kmeans", 4, 64, 4.375, [999.0, 999.0], error_feedback=True),  # calibrated: not on the curve
            _row("int-asym", 4, 128, 4.19, [300.0, 280.0])]
    curves = calibration_free(rows, "m", "all")
    assert [r["group_size"] for r in curves[("kmeans", 4)]] == [64, 32]
    table = frontier_table(curves)
    t = 1 / 3
    kmeans_nll = (260 + t * -20) + (240 + t * -10)
    expected = 100 * (math.exp((kmeans_nll - 486.0) / 200) - 1)
    hqq_line = next(line for line in table.splitlines() if "HQQ" in line)
    assert f"{expected:+.1f} %" in hqq_line and "between groups 32 and 64" in hqq_line
    assert "outside the k-means rows' range" in next(line for line in table.splitlines() if "RTN" in line)


def test_convexity_is_checked_on_three_group_sizes():
    falling_slower = [_row("kmeans", 4, g, b, [n]) for g, b, n in ((128, 4.19, 300.0), (64, 4.375, 260.0), (32, 4.75, 250.0))]
    assert convexity(falling_slower) == "convex"
    falling_faster = [_row("kmeans", 4, g, b, [n]) for g, b, n in ((128, 4.19, 300.0), (64, 4.375, 295.0), (32, 4.75, 200.0))]
    assert convexity(falling_faster) == "NOT convex"
    assert "not checked" in convexity(falling_slower[:2])
