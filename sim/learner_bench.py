"""cocotb bench of an online learner top (our RTL, or the RTL Vitis HLS makes from our HLS project).

The bench reads everything about the design from its manifest (the ports, their widths and
valids, where the state can be read back) and its settings from the JSON file named by
``CODESIGN_BENCH_CONFIG``; it writes its measurements to ``CODESIGN_BENCH_RESULT``.

Roles (one loop, one step per clock, at the falling edge where every signal is stable):

* driver   presents the stimulus with ap_start / x_ap_vld / y_ap_vld, inserts random bubbles
           and the configured resets (a reset while a chosen sample is in flight);
* monitor  records each handshake: a sample accepted (ap_start && ap_ready), a prediction
           (y_hat_ap_vld), a finished sample (ap_done), and the resets the DUT saw;
* model    the bit-exact Python learner, run afterwards over the accepted samples; a sample
           that a reset dropped before its ap_done is modelled as train = 0 (no update);
* checker  compares every observed prediction and, when the manifest says where the state
           lives, the final coefficients, integer for integer; it also measures latency and II.

A bench cannot hang: it fails when no handshake happens for ``stall_cycles`` cycles, when the
run exceeds ``max_cycles`` or ``wall_seconds``, naming the last handshake it saw.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from dataclasses import dataclass, field

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly

from codesign.fpga.rtl_emit import initial_state_of
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.run import make_learner


def _to_signed(raw: int, bits: int) -> int:
    return raw - (1 << bits) if raw >> (bits - 1) & 1 else raw


def _unpack(word: int, count: int, bits: int) -> list[int]:
    mask = (1 << bits) - 1
    return [_to_signed((word >> (k * bits)) & mask, bits) for k in range(count)]


def _pack(values, bits: int) -> int:
    word = 0
    for k, v in enumerate(values):
        word |= (int(v) & ((1 << bits) - 1)) << (k * bits)
    return word


class Ports:
    """The DUT's ports by role, resolved from the manifest's port list."""

    def __init__(self, dut, manifest: dict):
        by_name = {p["name"]: p for p in manifest["ports"]}
        for needed in ("ap_clk", "ap_rst", "ap_start", "ap_done", "ap_ready", "x", "y", "train", "y_hat"):
            if needed not in by_name:
                raise ValueError(f"the manifest has no port {needed!r}")
        self.dut = dut
        self.clk = dut.ap_clk
        self.rst = dut.ap_rst
        self.start = dut.ap_start
        self.done = dut.ap_done
        self.ready = dut.ap_ready
        self.x, self.y, self.train = dut.x, dut.y, dut.train
        self.y_hat = dut.y_hat
        self.x_vld = getattr(dut, by_name["x"]["valid"]) if "valid" in by_name["x"] else None
        self.y_vld = getattr(dut, by_name["y"]["valid"]) if "valid" in by_name["y"] else None
        self.y_hat_vld = getattr(dut, by_name["y_hat"]["valid"])
        self.n_in = by_name["x"]["elements"]
        self.n_out = by_name["y_hat"]["elements"]
        self.w_act = by_name["x"]["element_width"]


@dataclass
class Events:
    """What the monitor saw, per sample and per cycle."""

    accept_cycle: dict[int, int] = field(default_factory=dict)
    pred_cycle: dict[int, int] = field(default_factory=dict)
    done_cycle: dict[int, int] = field(default_factory=dict)
    predictions: dict[int, list[int]] = field(default_factory=dict)
    aborted: set[int] = field(default_factory=set)
    back_to_back: list[int] = field(default_factory=list)  # accept intervals with no bubble or reset between
    resets: int = 0
    last: str = "none"  # the last handshake seen, for failure messages


class Driver:
    """Presents samples in order; bubbles and resets come from the config and a seeded RNG."""

    def __init__(self, ports: Ports, x: np.ndarray, y: np.ndarray, train: np.ndarray, config: dict):
        self.p = ports
        self.x, self.y, self.train = x, y, train
        self.n = x.shape[0]
        self.rng = np.random.default_rng(config.get("rng_seed", 0))
        self.bubble = float(config.get("bubble_probability", 0.0))
        # sample index -> (cycles after its acceptance, reset length)
        self.reset_plan = {int(k): (int(d), int(l)) for k, d, l in config.get("resets", [])}
        self.next = 0  # next sample to present
        self.presenting = False
        self.reset_from = -1
        self.reset_until = -1  # reset is high for cycles in [reset_from, reset_until)
        self.gap = False  # a bubble or reset since the last acceptance

    def sample_accepted(self, index: int, cycle: int) -> None:
        self.next = index + 1
        self.presenting = False
        if index in self.reset_plan:
            delay, length = self.reset_plan[index]
            self.reset_from, self.reset_until = cycle + 1 + delay, cycle + 1 + delay + length

    def drive(self, cycle: int) -> bool:
        """Set the inputs for the next clock edge; returns whether reset is high for that edge."""
        p = self.p
        rst = self.reset_from <= cycle < self.reset_until
        p.rst.value = int(rst)
        if rst:
            self.gap = True
        if self.next >= self.n:
            p.start.value = 0
            return rst
        if not self.presenting:
            if self.bubble and self.rng.random() < self.bubble:
                p.start.value = 0
                self.gap = True
                return rst
            k = self.next
            p.x.value = _pack(self.x[k], p.w_act)
            p.y.value = _pack(self.y[k], p.w_act)
            p.train.value = int(self.train[k])
            self.presenting = True
        p.start.value = 1
        if p.x_vld is not None:
            p.x_vld.value = 1
        if p.y_vld is not None:
            p.y_vld.value = 1
        return rst


class Monitor:
    """Turns the DUT's valid and done signals into per-sample events."""

    def __init__(self, ports: Ports, events: Events):
        self.p = ports
        self.ev = events
        self.awaiting_pred: deque[int] = deque()
        self.awaiting_done: deque[int] = deque()
        self.last_accept = -1

    def reset_seen(self, cycle: int, first: bool) -> None:
        """A reset reached the DUT at this edge: every sample not yet done is dropped."""
        self.ev.resets += int(first)
        self.ev.aborted.update(self.awaiting_done)
        self.awaiting_pred.clear()
        self.awaiting_done.clear()
        self.ev.last = f"reset at cycle {cycle}"

    def outputs(self, cycle: int) -> bool:
        """Record the registered outputs of this cycle; returns whether any handshake happened."""
        p, ev = self.p, self.ev
        seen = False
        if p.y_hat_vld.value == 1:
            if not self.awaiting_pred:
                raise AssertionError(f"y_hat_ap_vld at cycle {cycle} with no sample in flight (last: {ev.last})")
            k = self.awaiting_pred.popleft()
            ev.pred_cycle[k] = cycle
            ev.predictions[k] = _unpack(p.y_hat.value.to_unsigned(), p.n_out, p.w_act)
            ev.last = f"prediction of sample {k} at cycle {cycle}"
            seen = True
        if p.done.value == 1:
            if not self.awaiting_done:
                raise AssertionError(f"ap_done at cycle {cycle} with no sample in flight (last: {ev.last})")
            k = self.awaiting_done.popleft()
            ev.done_cycle[k] = cycle
            ev.last = f"ap_done of sample {k} at cycle {cycle}"
            seen = True
        return seen

    def accepted(self, index: int, cycle: int, gap: bool) -> None:
        ev = self.ev
        ev.accept_cycle[index] = cycle
        if self.last_accept >= 0 and not gap:
            ev.back_to_back.append(cycle - self.last_accept)
        self.last_accept = cycle
        self.awaiting_pred.append(index)
        self.awaiting_done.append(index)
        ev.last = f"sample {index} accepted at cycle {cycle}"

    @property
    def idle(self) -> bool:
        return not self.awaiting_pred and not self.awaiting_done


def read_state(dut, manifest: dict, spec) -> list[np.ndarray] | None:
    """The learner's state read from the DUT's memories, per layer, in the reference's layout."""
    state = manifest.get("state")
    if not state:
        return None

    def handle(path: str):
        h = dut
        for part in path.split("."):
            h = h[part]
        return h

    w = state["element_width"]
    layers = []
    if state["layout"] == "kan_banks":
        banks, depth, n_coef = state["banks"], state["depth"], state["n_coef"]
        for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
            coef = np.zeros((n_out, n_in, banks * depth), dtype=np.int64)
            for i in range(n_in):
                for b in range(banks):
                    mem = handle(state["memory"].format(layer=layer, i=i, b=b))
                    for q in range(depth):
                        coef[:, i, q * banks + b] = _unpack(mem[q].value.to_unsigned(), n_out, w)
            layers.append(coef[:, :, :n_coef])
    elif state["layout"] == "mlp_rows":
        for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
            mem = handle(state["memory"].format(layer=layer))
            layers.append(np.array([_unpack(mem[o].value.to_unsigned(), n_in + 1, w) for o in range(n_out)], dtype=np.int64))
    else:
        raise ValueError(f"unknown state layout {state['layout']!r} in the manifest")
    return layers


def reference_state(learner) -> list[np.ndarray]:
    """The reference learner's state per layer in the layout read_state returns."""
    if hasattr(learner, "coefficients_raw"):
        return learner.coefficients_raw()
    return [np.concatenate([w, b[:, None]], axis=1) for w, b in learner.params_raw()]


def load_config() -> tuple[dict, dict]:
    """The bench settings (CODESIGN_BENCH_CONFIG) and the RTL manifest they name."""
    with open(os.environ["CODESIGN_BENCH_CONFIG"]) as f:
        config = json.load(f)
    with open(config["manifest"]) as f:
        manifest = json.load(f)
    return config, manifest


@cocotb.test()
async def learner_stream(dut):
    """Stream the stimulus through the top; every prediction and the final state equal the reference."""
    config, manifest = load_config()
    data = np.load(config["stimulus"])
    x, y, train = data["x"], data["y"], data["train"]
    spec = spec_from_mapping(config["kind"], config["spec"])
    ports = Ports(dut, manifest)
    events = Events()
    driver = Driver(ports, x, y, train, config)
    monitor = Monitor(ports, events)
    stall_cycles = int(config.get("stall_cycles", 1000))
    max_cycles = int(config.get("max_cycles", 100 * x.shape[0] + 1000))
    wall_limit = float(config.get("wall_seconds", 600.0))
    started = time.monotonic()

    cocotb.start_soon(Clock(ports.clk, float(config.get("clock_period_ns", 10.0)), unit="ns").start())
    # initial reset: two edges with ap_rst high and nothing started
    ports.rst.value = 1
    ports.start.value = 0
    for s in (ports.x_vld, ports.y_vld):
        if s is not None:
            s.value = 0
    ports.x.value = 0
    ports.y.value = 0
    ports.train.value = 0
    for _ in range(3):
        await FallingEdge(ports.clk)
    ports.rst.value = 0

    cycle = 0
    last_progress = 0
    rst_at_edge = False  # reset high at the edge that ended the previous cycle
    rst_before = False
    while True:
        await FallingEdge(ports.clk)
        cycle += 1
        if rst_at_edge:
            monitor.reset_seen(cycle, first=not rst_before)
        rst_before = rst_at_edge
        if monitor.outputs(cycle):
            last_progress = cycle
        rst_at_edge = driver.drive(cycle)  # ap_start drops once every sample is accepted
        await ReadOnly()
        if ports.start.value == 1 and ports.ready.value == 1 and not rst_at_edge:
            monitor.accepted(driver.next, cycle, driver.gap)
            driver.gap = False
            driver.sample_accepted(driver.next, cycle)
            last_progress = cycle
        if driver.next >= driver.n and monitor.idle and not rst_at_edge:
            break
        if cycle - last_progress > stall_cycles:
            raise AssertionError(f"no handshake for {stall_cycles} cycles at cycle {cycle}; last handshake seen: {events.last}")
        if cycle > max_cycles:
            raise AssertionError(f"simulated-time limit of {max_cycles} cycles reached; last handshake seen: {events.last}")
        if cycle % 512 == 0 and time.monotonic() - started > wall_limit:
            raise AssertionError(f"wall-clock limit of {wall_limit:g} s reached at cycle {cycle}; last handshake seen: {events.last}")
    await FallingEdge(ports.clk)
    loop_seconds = time.monotonic() - started

    # model: the reference over the accepted samples; a dropped sample does not update
    accepted = sorted(events.accept_cycle)
    idx = np.array(accepted, dtype=np.int64)
    effective_train = np.array([int(train[k]) if k in events.done_cycle else 0 for k in accepted], dtype=np.int64)
    learner = make_learner(spec, seed=int(config["seed"]), initial=initial_state_of(manifest, os.path.dirname(config["manifest"])))
    expected = learner.run_raw(x[idx], y[idx], effective_train) if idx.size else np.zeros((0, ports.n_out), np.int64)

    # checker
    mismatches = []
    checked = 0
    for row, k in enumerate(accepted):
        if k not in events.predictions:
            continue
        checked += 1
        got = events.predictions[k]
        if got != [int(v) for v in expected[row]] and len(mismatches) < 10:
            mismatches.append({"sample": k, "rtl": got, "reference": [int(v) for v in expected[row]]})
    n_pred_mismatch = sum(
        1 for row, k in enumerate(accepted) if k in events.predictions and events.predictions[k] != [int(v) for v in expected[row]]
    )
    state = read_state(dut, manifest, spec)
    state_values = state_mismatches = 0
    state_diff = []
    if state is not None:
        for layer, (got, want) in enumerate(zip(state, reference_state(learner))):
            state_values += want.size
            state_mismatches += int(np.count_nonzero(got != want))
            for idx in np.argwhere(got != want)[: 10 - len(state_diff)]:
                state_diff.append({"layer": layer, "index": [int(v) for v in idx], "rtl": int(got[tuple(idx)]),
                                   "reference": int(want[tuple(idx)])})

    pred_lat = [events.pred_cycle[k] - events.accept_cycle[k] for k in events.pred_cycle]
    done_lat = [events.done_cycle[k] - events.accept_cycle[k] for k in events.done_cycle]
    result = {
        "samples": len(accepted),
        "stimulus_samples": int(x.shape[0]),
        "predictions_checked": checked,
        "prediction_mismatches": n_pred_mismatch,
        "first_mismatches": mismatches,
        "state_checked": state is not None,
        "state_values": state_values,
        "state_mismatches": state_mismatches,
        "first_state_mismatches": state_diff,
        "bit_exact": n_pred_mismatch == 0 and state_mismatches == 0 and checked > 0,
        "latency_cycles": max(pred_lat) if pred_lat else None,
        "latency_cycles_min": min(pred_lat) if pred_lat else None,
        "update_latency_cycles": max(done_lat) if done_lat else None,
        "update_latency_cycles_min": min(done_lat) if done_lat else None,
        "ii": max(events.back_to_back) if events.back_to_back else None,
        "ii_min": min(events.back_to_back) if events.back_to_back else None,
        "cycles": cycle,
        "resets": events.resets,
        "dropped_samples": len(events.aborted),
        "dropped_with_prediction": len([k for k in events.aborted if k in events.predictions]),
        "wall_seconds": round(time.monotonic() - started, 2),
        "loop_seconds": round(loop_seconds, 2),
    }
    with open(os.environ["CODESIGN_BENCH_RESULT"], "w") as f:
        json.dump(result, f, indent=1)
    missing = [k for k in accepted if k not in events.aborted and k not in events.predictions]
    assert not missing, f"{len(missing)} finished samples have no prediction, first: sample {missing[0]}"
    assert n_pred_mismatch == 0, f"{n_pred_mismatch} predictions differ from the reference, first: {mismatches[0]}"
    assert state_mismatches == 0, f"{state_mismatches} of {state_values} final state values differ from the reference"
