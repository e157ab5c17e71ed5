"""The AXI shell of an online learner: its register map, stream word layout and host driver.

The register map is written here once (:data:`REGISTERS`) and everything else is generated
from it: the SystemVerilog include ``rtl/learner_axi_regs.svh`` that ``rtl/learner_axi.sv``
decodes, and for each build a markdown table and a C header (:func:`write_register_docs`).
:class:`LearnerAxiDriver` is the host side: register arithmetic over any 32-bit read/write
pair (a PYNQ ``MMIO``, ``/dev/mem``, a bus model).

Stream words (AXI4-Stream, one beat per sample, no TLAST): the slave word holds x element i
at bits [i*W +: W], target y element o at bits [(N_IN+o)*W +: W] and the train flag at bit
(N_IN+N_OUT)*W, W the act_t width, raw two's complement, zero-padded to whole bytes. The master
word holds prediction element o at bits [o*W +: W], zero-padded to whole bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Field", "Register", "REGISTERS", "COUNTERS", "SHELL_ID", "StreamLayout", "stream_layout", "register_svh",
           "coef_address", "coef_format_value", "lr_shift_value",
           "register_markdown", "register_header", "write_register_docs", "LearnerAxiDriver"]

SHELL_ID = 0x4C524E03  # "LRN" and layout version 3 (SATURATIONS, LR_SHIFT): the host checks it before trusting the map


@dataclass(frozen=True)
class Field:
    """A bit field of a register: ``width`` bits from ``lsb``."""

    name: str
    lsb: int
    width: int
    what: str


@dataclass(frozen=True)
class Register:
    """One 32-bit AXI4-Lite register at byte ``offset``; ``access`` is RO or RW; ``reset`` its value after aresetn."""

    name: str
    offset: int
    access: str
    reset: str
    what: str
    fields: tuple[Field, ...] = ()


REGISTERS: tuple[Register, ...] = (
    Register("ID", 0x00, "RO", f"0x{SHELL_ID:08X}", "identifies the shell and this register layout"),
    Register("CTRL", 0x04, "RW", "0x00000001", "control", (
        Field("TRAIN_ENABLE", 0, 1, "1: a sample whose train flag is 1 updates the learner; 0: every sample only predicts"),
        Field("CLEAR_COUNTERS", 1, 1, "write 1: SAMPLES, UPDATES, PREDICTIONS and SATURATIONS restart at 0 (reads 0)"),
    )),
    Register("STATUS", 0x08, "RO", "-", "status", (
        Field("IDLE", 0, 1, "no sample in flight in the learner"),
        Field("OUT_VALID", 1, 1, "a prediction waits on the master stream"),
        Field("IN_READY", 2, 1, "the slave stream would accept a sample now"),
    )),
    Register("SAMPLES", 0x0C, "RO", "0", "samples accepted from the slave stream (wraps at 2^32)"),
    Register("UPDATES", 0x10, "RO", "0", "updates committed (samples finished with train flag and TRAIN_ENABLE both 1)"),
    Register("PREDICTIONS", 0x14, "RO", "0", "predictions taken by the master stream's sink"),
    Register("GEOMETRY", 0x18, "RO", "build", "the build's stream geometry", (
        Field("N_IN", 0, 8, "input elements per sample"),
        Field("N_OUT", 8, 8, "target and prediction elements per sample"),
        Field("W_ACT", 16, 8, "bits per element (act_t width)"),
        Field("F_ACT", 24, 8, "fraction bits of act_t (two's complement)"),
    )),
    Register("TDATA", 0x1C, "RO", "build", "stream word widths", (
        Field("S_WIDTH", 0, 16, "slave (sample) TDATA bits"),
        Field("M_WIDTH", 16, 16, "master (prediction) TDATA bits"),
    )),
    Register("COEF_ADDR", 0x20, "RW", "0x00000000", "which coefficient COEF_DATA reads and writes (KAN builds)", (
        Field("M", 0, 8, "basis index m < G + k"),
        Field("I", 8, 8, "the edge's input i"),
        Field("O", 16, 8, "the edge's output o"),
        Field("LAYER", 24, 4, "the layer"),
    )),
    Register("COEF_DATA", 0x24, "RW", "-", "the coefficient at COEF_ADDR, raw coef_t sign-extended; a write sets it "
             "(its low W_COEF bits). The access waits until no sample is in flight and holds the slave stream "
             "meanwhile; an address outside the build reads 0 and ignores writes; reads 0 in MLP builds"),
    Register("COEF_FORMAT", 0x28, "RO", "build", "the coefficient type", (
        Field("W_COEF", 0, 8, "bits of coef_t"),
        Field("F_COEF", 8, 8, "fraction bits of coef_t (two's complement)"),
        Field("HAS_COEF", 16, 1, "1: COEF_ADDR / COEF_DATA reach the coefficients (KAN builds)"),
    )),
    Register("SATURATIONS", 0x2C, "RO", "0", "casts that overflowed their type (wraps at 2^32): of every fixed_cast of "
             "the learner, those whose value, rounded as the type rounds, lay outside the type's range before its "
             "overflow mode (AP_SAT, AP_SAT_ZERO, AP_SAT_SYM, AP_WRAP) applied, AP_SAT_SYM's excluded most negative "
             "code included; over every sample that finished: its forward casts, and for a sample that updates the "
             "output error, the dphi and input-gradient casts of inputs the grid did not clamp, and the coefficient "
             "(weight) updates. Grid clamps are not casts and are not counted. A sample dropped by a reset counts "
             "nothing; the count lags the sample by a few cycles"),
    Register("LR_SHIFT", 0x30, "RW", "build", "the learning-rate shift (learning rate 2^-SHIFT) of the samples accepted from "
             "now on. A write waits until no sample is in flight and holds the slave stream meanwhile, as COEF_DATA's "
             "does, so it applies from the first sample accepted after its response; a SHIFT outside MIN..MAX is "
             "ignored (the register keeps its value). MIN = MAX (the build's lr_shift) unless the spec's lr_shift_span "
             "> 0 (KAN builds); without a range a write completes at once and changes nothing", (
                 Field("SHIFT", 0, 8, "the shift now (reset: the spec's lr_shift)"),
                 Field("MIN", 8, 8, "the smallest shift (the spec's lr_shift; read only)"),
                 Field("MAX", 16, 8, "the largest shift (lr_shift + lr_shift_span; read only)"),
             )),
)
COUNTERS = ("SAMPLES", "UPDATES", "PREDICTIONS", "SATURATIONS")  # what CTRL.CLEAR_COUNTERS restarts
ADDR_BITS = 6  # byte address bits the shell decodes (64 bytes of registers)


@dataclass(frozen=True)
class StreamLayout:
    """Bit positions of the stream words for one build (see the module docstring)."""

    n_in: int
    n_out: int
    w_act: int

    @property
    def train_bit(self) -> int:
        return (self.n_in + self.n_out) * self.w_act

    @property
    def s_width(self) -> int:
        return _bytes_of(self.train_bit + 1) * 8

    @property
    def m_width(self) -> int:
        return _bytes_of(self.n_out * self.w_act) * 8

    def pack_sample(self, x_raw: Sequence[int], y_raw: Sequence[int], train: bool) -> int:
        """The slave TDATA word of one sample (raw act_t integers)."""
        if len(x_raw) != self.n_in or len(y_raw) != self.n_out:
            raise ValueError(f"a sample has {self.n_in} inputs and {self.n_out} targets, got {len(x_raw)} and {len(y_raw)}")
        word = _pack(list(x_raw) + list(y_raw), self.w_act)
        return word | (int(bool(train)) << self.train_bit)

    def unpack_prediction(self, word: int) -> list[int]:
        """The raw act_t predictions of one master TDATA word."""
        mask = (1 << self.w_act) - 1
        return [_signed((word >> (o * self.w_act)) & mask, self.w_act) for o in range(self.n_out)]


def _bytes_of(bits: int) -> int:
    return (bits + 7) // 8


def _pack(values: Sequence[int], bits: int) -> int:
    word = 0
    for k, v in enumerate(values):
        word |= (int(v) & ((1 << bits) - 1)) << (k * bits)
    return word


def _signed(raw: int, bits: int) -> int:
    return raw - (1 << bits) if raw >> (bits - 1) & 1 else raw


def stream_layout(n_in: int, n_out: int, w_act: int) -> StreamLayout:
    """The stream layout of a learner with these port widths (n_out <= 255, w_act <= 255: GEOMETRY's fields)."""
    if not (0 < n_in < 256 and 0 < n_out < 256 and 0 < w_act < 256):
        raise ValueError(f"n_in={n_in}, n_out={n_out}, w_act={w_act}: the AXI shell takes 1..255 of each")
    return StreamLayout(n_in, n_out, w_act)


def register_svh() -> str:
    """``rtl/learner_axi_regs.svh``: the offsets and field positions as SystemVerilog localparams."""
    lines = ["// learner_axi_regs.svh: the AXI4-Lite register map of learner_axi.sv.",
             "// Generated from codesign/fpga/axi.py (REGISTERS); edit that table, not this file.",
             f"localparam int REG_ADDR_BITS = {ADDR_BITS};",
             f"localparam logic [31:0] SHELL_ID = 32'h{SHELL_ID:08X};"]
    for reg in REGISTERS:
        lines.append(f"localparam logic [REG_ADDR_BITS-1:0] REG_{reg.name} = {ADDR_BITS}'h{reg.offset:02X};")
        for f in reg.fields:
            lines.append(f"localparam int {reg.name}_{f.name}_LSB = {f.lsb};")
    return "\n".join(lines) + "\n"


def _geometry_values(layout: StreamLayout, f_act: int, lr_range: tuple[int, int]) -> dict[str, int]:
    return {"GEOMETRY": layout.n_in | layout.n_out << 8 | layout.w_act << 16 | (f_act & 0xFF) << 24,
            "TDATA": layout.s_width | layout.m_width << 16, "LR_SHIFT": lr_shift_value(*lr_range)}


def lr_shift_value(lo: int, hi: int) -> int:
    """The LR_SHIFT register after reset: SHIFT = MIN = lo, MAX = hi."""
    if not 0 <= lo <= hi < 256:
        raise ValueError(f"learning-rate shifts {lo}..{hi}: LR_SHIFT holds 0 <= MIN <= MAX < 256")
    return lo | lo << 8 | hi << 16


def coef_format_value(w_coef: int, f_coef: int, has_coef: bool) -> int:
    """The COEF_FORMAT register of a build."""
    return (w_coef & 0xFF) | (f_coef & 0xFF) << 8 | int(has_coef) << 16


def coef_address(layer: int, o: int, i: int, m: int) -> int:
    """The COEF_ADDR word of coefficient m of edge (o, i) of a layer (the reference's coefficients_raw()[layer][o, i, m])."""
    if not (0 <= layer < 16 and 0 <= o < 256 and 0 <= i < 256 and 0 <= m < 256):
        raise ValueError(f"coefficient ({layer}, {o}, {i}, {m}): COEF_ADDR holds layer < 16 and o, i, m < 256")
    return m | i << 8 | o << 16 | layer << 24


def register_markdown(layout: StreamLayout, f_act: int, w_coef: int, f_coef: int, has_coef: bool,
                      lr_range: tuple[int, int], title: str = "AXI4-Lite registers") -> str:
    """The register map of one build as a markdown table, with its stream word layout (lr_range: LR_SHIFT's MIN, MAX)."""
    values = _geometry_values(layout, f_act, lr_range)
    values["COEF_FORMAT"] = coef_format_value(w_coef, f_coef, has_coef)
    rows = [f"## {title}", "", "| offset | name | access | reset | bits | meaning |", "|---|---|---|---|---|---|"]
    for reg in REGISTERS:
        reset = f"0x{values[reg.name]:08X}" if reg.name in values else reg.reset
        rows.append(f"| 0x{reg.offset:02X} | {reg.name} | {reg.access} | {reset} | 31:0 | {reg.what} |")
        for f in reg.fields:
            bits = f"{f.lsb + f.width - 1}:{f.lsb}" if f.width > 1 else str(f.lsb)
            rows.append(f"| | .{f.name} | | | {bits} | {f.what} |")
    w = layout.w_act
    rows += ["", "## Stream words", "",
             f"- slave (sample), {layout.s_width} bits: x[i] at [{w}*i +: {w}] for i < {layout.n_in}; "
             f"y[o] at [{w}*({layout.n_in}+o) +: {w}] for o < {layout.n_out}; train flag at bit {layout.train_bit}; "
             "the rest 0",
             f"- master (prediction), {layout.m_width} bits: y_hat[o] at [{w}*o +: {w}]; the rest 0",
             "- elements are raw two's complement act_t integers (value * 2^F_ACT)", ""]
    return "\n".join(rows)


def register_header(layout: StreamLayout, f_act: int, w_coef: int, f_coef: int, has_coef: bool,
                    lr_range: tuple[int, int], prefix: str = "LEARNER_AXI") -> str:
    """The register map of one build as a C header (lr_range: LR_SHIFT's MIN, MAX)."""
    values = _geometry_values(layout, f_act, lr_range)
    lines = [f"/* {prefix.lower()}.h: AXI4-Lite register map of the learner's AXI shell. Generated by codesign. */",
             f"#ifndef {prefix}_H", f"#define {prefix}_H", "",
             f"#define {prefix}_SHELL_ID 0x{SHELL_ID:08X}u"]
    for reg in REGISTERS:
        lines.append(f"#define {prefix}_{reg.name} 0x{reg.offset:02X}u  /* {reg.access}: {reg.what} */")
        for f in reg.fields:
            mask = ((1 << f.width) - 1) << f.lsb
            lines.append(f"#define {prefix}_{reg.name}_{f.name}_SHIFT {f.lsb}u")
            lines.append(f"#define {prefix}_{reg.name}_{f.name}_MASK 0x{mask:08X}u")
    lines += [f"#define {prefix}_COEF_FORMAT_VALUE 0x{coef_format_value(w_coef, f_coef, has_coef):08X}u",
              f"#define {prefix}_GEOMETRY_VALUE 0x{values['GEOMETRY']:08X}u",
              f"#define {prefix}_TDATA_VALUE 0x{values['TDATA']:08X}u",
              f"#define {prefix}_LR_SHIFT_RESET 0x{values['LR_SHIFT']:08X}u",
              f"#define {prefix}_TRAIN_BIT {layout.train_bit}u", "", f"#endif /* {prefix}_H */", ""]
    return "\n".join(lines)


def write_register_docs(folder: str | Path, layout: StreamLayout, f_act: int, w_coef: int, f_coef: int,
                        has_coef: bool, lr_range: tuple[int, int]) -> list[str]:
    """Write ``axi_registers.md`` and ``learner_axi.h`` into ``folder``; returns their names."""
    folder = Path(folder)
    (folder / "axi_registers.md").write_text(register_markdown(layout, f_act, w_coef, f_coef, has_coef, lr_range))
    (folder / "learner_axi.h").write_text(register_header(layout, f_act, w_coef, f_coef, has_coef, lr_range))
    return ["axi_registers.md", "learner_axi.h"]


class LearnerAxiDriver:
    """Host driver of the AXI shell over a 32-bit register read/write pair (byte offsets from the shell's base)."""

    _BY_NAME = {r.name: r for r in REGISTERS}

    def __init__(self, read32: Callable[[int], int], write32: Callable[[int, int], None]):
        self._read32 = read32
        self._write32 = write32

    def read(self, name: str) -> int:
        """A register by name."""
        return int(self._read32(self._BY_NAME[name].offset)) & 0xFFFFFFFF

    def field(self, register: str, name: str) -> int:
        """One field of a register."""
        f = next(f for f in self._BY_NAME[register].fields if f.name == name)
        return (self.read(register) >> f.lsb) & ((1 << f.width) - 1)

    def check_id(self) -> None:
        """Raise unless the ID register holds this driver's layout version."""
        found = self.read("ID")
        if found != SHELL_ID:
            raise RuntimeError(f"ID register reads 0x{found:08X}, expected 0x{SHELL_ID:08X}: not this AXI shell")

    def layout(self) -> StreamLayout:
        """The stream layout, read from the GEOMETRY register."""
        return stream_layout(self.field("GEOMETRY", "N_IN"), self.field("GEOMETRY", "N_OUT"), self.field("GEOMETRY", "W_ACT"))

    def f_act(self) -> int:
        """act_t's fraction bits, read from GEOMETRY (two's complement byte)."""
        return _signed(self.field("GEOMETRY", "F_ACT"), 8)

    @property
    def train_enable(self) -> bool:
        return bool(self.field("CTRL", "TRAIN_ENABLE"))

    @train_enable.setter
    def train_enable(self, on: bool) -> None:
        self._write32(self._BY_NAME["CTRL"].offset, int(bool(on)))

    def clear_counters(self) -> None:
        """Restart the four counters at 0 (keeps TRAIN_ENABLE)."""
        ctrl = self.read("CTRL") & 1
        self._write32(self._BY_NAME["CTRL"].offset, ctrl | 1 << 1)

    def coefficient_type(self) -> tuple[int, int]:
        """(W_COEF, F_COEF) from COEF_FORMAT; refuses a build without coefficient access."""
        if not self.field("COEF_FORMAT", "HAS_COEF"):
            raise RuntimeError("this build has no coefficient access (COEF_FORMAT.HAS_COEF is 0)")
        return self.field("COEF_FORMAT", "W_COEF"), _signed(self.field("COEF_FORMAT", "F_COEF"), 8)

    def read_coefficient(self, layer: int, o: int, i: int, m: int) -> int:
        """One raw coef_t coefficient (wait until the stream is idle for a value no sample is changing)."""
        self._write32(self._BY_NAME["COEF_ADDR"].offset, coef_address(layer, o, i, m))
        return _signed(self.read("COEF_DATA"), 32)

    def write_coefficient(self, layer: int, o: int, i: int, m: int, raw: int) -> None:
        """Set one raw coef_t coefficient; a value outside coef_t's range is refused."""
        width, _ = self.coefficient_type()
        if not -(1 << (width - 1)) <= raw < 1 << (width - 1):
            raise ValueError(f"coefficient {raw} is outside the {width}-bit coef_t range")
        self._write32(self._BY_NAME["COEF_ADDR"].offset, coef_address(layer, o, i, m))
        self._write32(self._BY_NAME["COEF_DATA"].offset, raw & 0xFFFFFFFF)

    def lr_shift_range(self) -> tuple[int, int]:
        """(MIN, MAX) of LR_SHIFT: the shifts this build takes at run time."""
        return self.field("LR_SHIFT", "MIN"), self.field("LR_SHIFT", "MAX")

    @property
    def lr_shift(self) -> int:
        """The learning-rate shift of the samples accepted now (learning rate 2^-lr_shift)."""
        return self.field("LR_SHIFT", "SHIFT")

    @lr_shift.setter
    def lr_shift(self, shift: int) -> None:
        lo, hi = self.lr_shift_range()
        if isinstance(shift, bool) or not isinstance(shift, int) or not lo <= shift <= hi:
            raise ValueError(f"learning-rate shift {shift!r} is outside this build's range {lo}..{hi}")
        self._write32(self._BY_NAME["LR_SHIFT"].offset, shift)

    def counters(self) -> dict[str, int]:
        """SAMPLES, UPDATES, PREDICTIONS and SATURATIONS."""
        return {name: self.read(name) for name in COUNTERS}
