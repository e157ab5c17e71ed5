"""cocotb bench of a learner's AXI top (<kind>_online_axi) with cocotbext-axi bus models.

An AxiStreamSource sends the samples and an AxiStreamSink takes the predictions, both with
random pauses (back-pressure on the master stream, idle gaps on the slave stream); an
AxiLiteMaster checks ID and GEOMETRY, turns TRAIN_ENABLE off for the middle third of the
stream, and with a run-time learning-rate range writes LR_SHIFT (an out-of-range value, refused, then the
largest shift, then the second smallest, with the stream drained, so three shifts train; a reset restores
its reset value, the smallest, and the model follows), and reads the
counters at the end (SATURATIONS against the reference's overflow count
over the samples accepted after the last reset, codesign.kan.profiler.cast_overflows). Where the build has coefficient access it reads
every coefficient back before the stream (the initial state) and after it (the final state),
and writes random coefficients before the stream and after its first third (the reference
gets the same writes at the same points). The bench also pulses aresetn while chosen samples
are in flight. A per-cycle monitor (at the falling edge, where every signal is stable) records
every handshake on both streams and every reset; the reference learner then runs over the
accepted samples and every prediction taken and the final coefficients must equal it.

Reset model (learner_axi.sv, online_control.sv): a sample accepted at edge a commits its update
at edge a + stages - 1 unless aresetn is low at an edge in (a, a + stages - 1]; a prediction not
taken before a reset is dropped. Settings come from CODESIGN_BENCH_CONFIG, results go to
CODESIGN_BENCH_RESULT (codesign.fpga.simulator.run_bench).
"""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from learner_bench import load_config, read_state, reference_state

from codesign.fpga.axi import SHELL_ID, LearnerAxiDriver, coef_address, stream_layout
from codesign.fpga.rtl_emit import initial_state_of
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.profiler import cast_overflows
from codesign.kan.run import make_learner


def _pauses(rng: np.random.Generator, probability: float, burst: int):
    """An endless pause pattern: runs of 1..burst paused cycles, started with ``probability`` per cycle."""
    while True:
        if rng.random() < probability:
            for _ in range(int(rng.integers(1, burst + 1))):
                yield True
        else:
            yield False


class AxiLiteRegisters:
    """The driver's register pair over cocotbext-axi's AXI-Lite master (async reads collected first)."""

    def __init__(self, master: AxiLiteMaster):
        self.master = master
        self.values: dict[int, int] = {}

    async def load(self, offsets) -> None:
        for offset in offsets:
            self.values[offset] = int.from_bytes((await self.master.read(offset, 4)).data, "little")

    def read32(self, offset: int) -> int:
        return self.values[offset]


@cocotb.test()
async def axi_stream(dut):
    """Stream samples through the AXI top under back-pressure, gaps and resets; all equal the reference."""
    config, manifest = load_config()
    axi = manifest["axi"]
    data = np.load(config["stimulus"])
    x, y, train = data["x"], data["y"], data["train"]
    n = x.shape[0]
    spec = spec_from_mapping(config["kind"], config["spec"])
    layout = stream_layout(axi["n_in"], axi["n_out"], axi["element_width"])
    stages = int(manifest["pipeline"]["stages"])
    rng = np.random.default_rng(config.get("rng_seed", 0))
    wall_limit = float(config.get("wall_seconds", 600.0))
    stall_cycles = int(config.get("stall_cycles", 2000))
    started = time.monotonic()

    cocotb.start_soon(Clock(dut.aclk, 10.0, unit="ns").start())
    dut.aresetn.value = 0
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk)
    lite = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi"), dut.aclk, dut.aresetn, reset_active_level=False)
    source.set_pause_generator(_pauses(rng, float(config.get("source_pause", 0.2)), int(config.get("burst", 6))))
    sink.set_pause_generator(_pauses(rng, float(config.get("sink_pause", 0.3)), int(config.get("burst", 6))))
    for _ in range(3):
        await RisingEdge(dut.aclk)
    dut.aresetn.value = 1
    await RisingEdge(dut.aclk)

    registers = AxiLiteRegisters(lite)
    driver = LearnerAxiDriver(registers.read32, lambda offset, value: None)
    await registers.load([0x00, 0x18, 0x1C])
    driver.check_id()
    assert driver.layout() == layout, f"GEOMETRY/TDATA read {driver.layout()}, the manifest says {layout}"
    assert driver.read("TDATA") == layout.s_width | layout.m_width << 16
    assert driver.f_act() == spec.act_t.frac

    # TRAIN_ENABLE is 0 for samples [off_from, off_until): sent only after the stream before them is drained
    off_from, off_until = n // 3, 2 * n // 3
    # a run-time learning-rate range (LR_SHIFT MIN < MAX): the largest shift from off_until, then the second smallest
    # from lr_at, both written with the stream drained; the reference gets the same shift per sample
    lr_lo, lr_hi = (int(v) for v in axi.get("lr_shift_range", (spec.lr_shift, spec.lr_shift)))
    runtime_lr = lr_hi > lr_lo
    lr_at = off_until + (n - off_until) // 2
    lr_of: list[int] = []  # LR_SHIFT when each sample was accepted (a reset restores its reset value, MIN)
    reset_after = {int(k): (int(d), int(l)) for k, d, l in config.get("resets", [])
                   if not off_from - 2 <= k < off_until + 2 and not (runtime_lr and lr_at - 2 <= k < lr_at + 2)}
    beats = [layout.pack_sample(x[k], y[k], bool(train[k])).to_bytes(layout.s_width // 8, "little") for k in range(n)]

    accept_cycle: list[int] = []  # per accepted sample (all samples are accepted once, in order)
    enabled: list[int] = []       # TRAIN_ENABLE when it was accepted
    reset_cycles: list[int] = []
    predictions: dict[int, list[int]] = {}
    dropped_predictions: list[int] = []
    counts = {"SAMPLES": 0, "UPDATES": 0, "PREDICTIONS": 0}  # since the last reset, as the registers count
    pending_updates: list[int] = []  # accepted since the last reset, commit not yet seen
    next_pred = 0  # the sample whose prediction is next on the master stream
    reset_plan: list[tuple[int, int]] = []  # (from cycle, until cycle) of aresetn low
    train_enable = 1
    state = {"cycle": 0, "last": 0, "lr": lr_lo}

    async def monitor():
        nonlocal next_pred
        while True:
            await FallingEdge(dut.aclk)
            state["cycle"] += 1
            c = state["cycle"]
            low = any(a <= c < b for a, b in reset_plan)
            dut.aresetn.value = int(not low)
            await ReadOnly()
            # commits: sample accepted at edge a, last stage at edge a + stages - 1
            for a_index in list(pending_updates):
                if accept_cycle[a_index] + stages - 1 < c:
                    pending_updates.remove(a_index)
                    if train[a_index] and enabled[a_index]:
                        counts["UPDATES"] += 1
            if low:
                reset_cycles.append(c)
                pending_updates.clear()  # their commit edge is at or after this reset edge
                while next_pred < len(accept_cycle):
                    dropped_predictions.append(next_pred)
                    next_pred += 1
                counts.update(SAMPLES=0, UPDATES=0, PREDICTIONS=0)
                state["lr"] = lr_lo
                continue
            if dut.s_axis_tvalid.value == 1 and dut.s_axis_tready.value == 1:
                k = len(accept_cycle)
                assert dut.s_axis_tdata.value.to_unsigned() == int.from_bytes(beats[k], "little"), f"sample {k} out of order"
                accept_cycle.append(c)
                enabled.append(train_enable)
                lr_of.append(state["lr"])
                pending_updates.append(k)
                counts["SAMPLES"] += 1
                state["last"] = c
                if k in reset_after:
                    delay, length = reset_after[k]
                    reset_plan.append((c + 1 + delay, c + 1 + delay + length))
            if dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1:
                assert next_pred < len(accept_cycle), f"a prediction at cycle {c} with no sample accepted for it"
                predictions[next_pred] = layout.unpack_prediction(dut.m_axis_tdata.value.to_unsigned())
                next_pred += 1
                counts["PREDICTIONS"] += 1
                state["last"] = c

    cocotb.start_soon(monitor())

    async def drain(count: int):
        """Wait until ``count`` samples are accepted and each has its prediction taken or dropped."""
        while len(accept_cycle) < count or next_pred < count or pending_updates:
            await RisingEdge(dut.aclk)
            if state["cycle"] - state["last"] > stall_cycles:
                raise AssertionError(f"no stream handshake for {stall_cycles} cycles at cycle {state['cycle']}")
            if state["cycle"] % 512 == 0 and time.monotonic() - started > wall_limit:
                raise AssertionError(f"wall-clock limit of {wall_limit:g} s reached at cycle {state['cycle']}")
        while any(state["cycle"] < b for _, b in reset_plan):
            await RisingEdge(dut.aclk)

    async def send(lo: int, hi: int):
        for k in range(lo, hi):
            await source.send(AxiStreamFrame(beats[k]))
        await drain(hi)

    has_coef = bool(axi.get("coefficient_access"))
    w_coef = spec.coef_t.width
    shapes = list(enumerate(spec.layer_shapes))

    async def lite_write(offset: int, value: int):
        await lite.write(offset, (value & 0xFFFFFFFF).to_bytes(4, "little"))

    async def read_coefficients() -> list[np.ndarray]:
        """Every coefficient through COEF_ADDR / COEF_DATA, in the reference's layout."""
        layers = []
        for layer, (n_in_l, n_out_l) in shapes:
            coef = np.zeros((n_out_l, n_in_l, spec.n_coef), dtype=np.int64)
            for o in range(n_out_l):
                for i in range(n_in_l):
                    for m in range(spec.n_coef):
                        await lite_write(0x20, coef_address(layer, o, i, m))
                        await registers.load([0x24])
                        coef[o, i, m] = int(np.int32(np.uint32(registers.read32(0x24))))
            layers.append(coef)
        return layers

    def random_writes(count: int) -> list[tuple[int, int, int, int, int]]:
        picks = []
        for _ in range(count):
            layer, (n_in_l, n_out_l) = shapes[int(rng.integers(len(shapes)))]
            picks.append((layer, int(rng.integers(n_out_l)), int(rng.integers(n_in_l)), int(rng.integers(spec.n_coef)),
                          int(rng.integers(-(1 << (w_coef - 1)), 1 << (w_coef - 1)))))
        return picks

    async def write_coefficients(writes) -> None:
        for layer, o, i, m, value in writes:
            await lite_write(0x20, coef_address(layer, o, i, m))
            await lite_write(0x24, value)
            await registers.load([0x24])
            got = int(np.int32(np.uint32(registers.read32(0x24))))
            assert got == value, f"coefficient {(layer, o, i, m)} reads {got} after writing {value}"

    initial_read = await read_coefficients() if has_coef else None
    writes_before = random_writes(6) if has_coef else []
    writes_middle = random_writes(6) if has_coef else []
    await write_coefficients(writes_before)

    async def set_train_enable(on: int):
        nonlocal train_enable
        await lite.write(0x04, int(on).to_bytes(4, "little"))
        await registers.load([0x04])
        assert driver.train_enable == bool(on)
        train_enable = on

    async def set_lr_shift(shift: int):
        await lite_write(0x30, shift)
        await registers.load([0x30])
        assert driver.lr_shift == shift, f"LR_SHIFT reads {driver.lr_shift} after writing {shift}"
        state["lr"] = shift  # written with the stream drained: from the next sample accepted on

    await registers.load([0x30])
    assert driver.lr_shift_range() == (lr_lo, lr_hi) and driver.lr_shift == lr_lo, f"LR_SHIFT reads 0x{driver.read('LR_SHIFT'):08X}"
    await send(0, off_from)
    await write_coefficients(writes_middle)
    await set_train_enable(0)
    await send(off_from, off_until)
    await set_train_enable(1)
    if runtime_lr:
        await lite_write(0x30, lr_hi + 1)  # outside the range: ignored
        await registers.load([0x30])
        assert driver.lr_shift == lr_lo, f"LR_SHIFT took {driver.lr_shift}, outside {lr_lo}..{lr_hi}"
        await set_lr_shift(lr_hi)
        await send(off_until, lr_at)
        await set_lr_shift(lr_lo + 1)
        await send(lr_at, n)
    else:
        await send(off_until, n)
    while not sink.empty():
        sink.read_nowait()  # the frames were checked by the monitor, beat by beat
    for _ in range(32):  # SATURATIONS lags the last sample by a few cycles (flag_count)
        await RisingEdge(dut.aclk)
    await registers.load([0x08, 0x0C, 0x10, 0x14, 0x2C])
    got_counts = driver.counters()
    final_read = await read_coefficients() if has_coef else None
    loop_seconds = time.monotonic() - started

    # model: the reference over the accepted samples, a sample whose update was dropped as train = 0
    committed = []
    for k, a in enumerate(accept_cycle):
        hit = any(a < r <= a + stages - 1 for r in reset_cycles)
        committed.append(bool(train[k]) and bool(enabled[k]) and not hit)
    learner = make_learner(spec, seed=int(config["seed"]), initial=initial_state_of(manifest, os.path.dirname(config["manifest"])))
    initial_mismatches = 0 if initial_read is None else sum(
        int(np.count_nonzero(g != w)) for g, w in zip(initial_read, learner.coefficients_raw()))

    def apply(writes):
        for layer, o, i, m, value in writes:
            n_in_l = spec.layer_shapes[layer][0]
            learner.coef[learner.offsets[layer] + (o * n_in_l + i) * spec.n_coef + m] = value

    committed_arr = np.array(committed, dtype=np.int64)
    lr_shifts = np.array(lr_of, dtype=np.int64)
    # SATURATIONS restarts at every reset: the reference's overflows over the samples accepted after the last one
    counted_from = sum(1 for a in accept_cycle if reset_cycles and a < max(reset_cycles))
    stats = learner.new_stats()

    def run_reference(lo: int, hi: int) -> np.ndarray:
        parts = [learner.run_raw(x[a:b], y[a:b], committed_arr[a:b], stats=stats if profiled else None,
                                 **({"lr_shifts": lr_shifts[a:b]} if runtime_lr else {}))
                 for a, b, profiled in ((lo, min(hi, counted_from), False), (max(lo, counted_from), hi, True)) if a < b]
        return np.concatenate(parts)

    apply(writes_before)
    head = run_reference(0, off_from)
    apply(writes_middle)
    expected = np.concatenate([head, run_reference(off_from, n)])
    counts["SATURATIONS"] = cast_overflows(learner, stats)
    mismatches = [k for k, got in predictions.items() if got != [int(v) for v in expected[k]]]
    state_got = read_state(dut, manifest, spec)  # the AXI top names its core u_core, as the bare top does
    state_mismatches = sum(int(np.count_nonzero(g != w)) for g, w in zip(state_got, reference_state(learner)))
    state_values = sum(w.size for w in reference_state(learner))
    readback_mismatches = None if final_read is None else sum(
        int(np.count_nonzero(g != w)) for g, w in zip(final_read, reference_state(learner)))

    result = {
        "samples": len(accept_cycle),
        "predictions_checked": len(predictions),
        "prediction_mismatches": len(mismatches),
        "first_mismatches": [{"sample": k, "rtl": predictions[k], "reference": [int(v) for v in expected[k]]} for k in mismatches[:5]],
        "dropped_predictions": len(dropped_predictions),
        "dropped_updates": int(sum(1 for k in range(n) if train[k] and enabled[k]) - sum(committed)),
        "resets": len(reset_plan),
        "state_values": state_values,
        "state_mismatches": state_mismatches,
        "coefficient_access": has_coef,
        "coefficients_written": len(writes_before) + len(writes_middle),
        "initial_readback_mismatches": initial_mismatches,
        "final_readback_mismatches": readback_mismatches,
        "counters": got_counts,
        "counters_expected": counts,
        "saturations_counted_from": counted_from,
        "lr_shifts_used": sorted({int(s) for s in lr_shifts[committed_arr == 1]}),
        "status": driver.read("STATUS"),
        "cycles": state["cycle"],
        "bit_exact": not mismatches and state_mismatches == 0 and len(predictions) > 0 and not initial_mismatches
        and not readback_mismatches,
        "loop_seconds": round(loop_seconds, 2),
    }
    with open(os.environ["CODESIGN_BENCH_RESULT"], "w") as f:
        json.dump(result, f, indent=1)
    assert len(accept_cycle) == n, f"{len(accept_cycle)} of {n} samples accepted"
    assert len(predictions) + len(dropped_predictions) == n
    assert not mismatches, f"{len(mismatches)} predictions differ from the reference, first: {result['first_mismatches'][0]}"
    assert state_mismatches == 0, f"{state_mismatches} of {state_values} final coefficients differ from the reference"
    assert not initial_mismatches, f"{initial_mismatches} coefficients read over AXI4-Lite differ from the initial state"
    assert not readback_mismatches, f"{readback_mismatches} coefficients read over AXI4-Lite differ from the final state"
    assert got_counts == counts, f"counters read {got_counts}, the bench counted {counts}"
    assert driver.read("STATUS") & 1 == 1, "the learner is not idle after the stream"
    assert SHELL_ID == driver.read("ID")
