"""The AXI shell's register map and host driver: one table, its generated forms, the driver's arithmetic."""

from __future__ import annotations

import re

import pytest

from codesign.fpga.axi import (
    REGISTERS,
    SHELL_ID,
    LearnerAxiDriver,
    coef_address,
    lr_shift_value,
    register_header,
    register_markdown,
    register_svh,
    stream_layout,
)
from codesign.fpga.rtl_emit import emit_rtl
from codesign.fpga.simulator import rtl_dir
from codesign.kan.spec import KANSpec, MLPSpec


class FakeRegisters:
    """A register file with the shell's read/write behaviour (RO ignores writes, CLEAR_COUNTERS self-clears)."""

    def __init__(self, geometry: int, tdata: int):
        self.words = {r.offset: 0 for r in REGISTERS}
        self.words.update({0x00: SHELL_ID, 0x04: 1, 0x0C: 7, 0x10: 5, 0x14: 6, 0x18: geometry, 0x1C: tdata,
                           0x28: 12 | (-4 & 0xFF) << 8 | 1 << 16, 0x2C: 0xFFFFFFFE, 0x30: lr_shift_value(4, 7)})
        self.coefficients: dict[int, int] = {}  # COEF_ADDR word -> raw 12-bit coefficient
        self.writes: list[tuple[int, int]] = []

    def read32(self, offset: int) -> int:
        if offset == 0x24:  # sign-extended, as the shell returns it
            raw = self.coefficients.get(self.words[0x20], 0)
            return (raw - (1 << 12) if raw >> 11 else raw) & 0xFFFFFFFF
        return self.words[offset]

    def write32(self, offset: int, value: int) -> None:
        self.writes.append((offset, value))
        if offset == 0x24:
            self.coefficients[self.words[0x20]] = value & 0xFFF
        elif offset == 0x20:
            self.words[0x20] = value & 0x0FFFFFFF
        if offset == 0x30 and 4 <= value & 0xFF <= 7:  # the shell ignores a shift outside MIN..MAX
            self.words[0x30] = (self.words[0x30] & ~0xFF) | (value & 0xFF)
        if offset == 0x04:
            self.words[0x04] = value & 1
            if value & 2:
                self.words.update({0x0C: 0, 0x10: 0, 0x14: 0, 0x2C: 0})


def test_the_checked_in_svh_is_the_generated_one():
    assert (rtl_dir() / "learner_axi_regs.svh").read_text() == register_svh()


def test_offsets_are_distinct_aligned_and_decoded():
    offsets = [r.offset for r in REGISTERS]
    assert len(set(offsets)) == len(offsets) and all(o % 4 == 0 and o < 64 for o in offsets)
    for reg in REGISTERS:
        used = 0
        for f in reg.fields:
            mask = ((1 << f.width) - 1) << f.lsb
            assert not used & mask and f.lsb + f.width <= 32, f"{reg.name}.{f.name} overlaps or overflows"
            used |= mask


def test_stream_words_pack_and_unpack():
    layout = stream_layout(2, 3, 12)
    assert layout.train_bit == 60 and layout.s_width == 64 and layout.m_width == 40
    word = layout.pack_sample([-1, 5], [2047, -2048, 0], True)
    assert word == (0xFFF | 5 << 12 | 0x7FF << 24 | 0x800 << 36 | 1 << 60)
    assert layout.pack_sample([-1, 5], [2047, -2048, 0], False) == word & ~(1 << 60)
    assert layout.unpack_prediction(0x800 | 0x7FF << 12 | 0xFFF << 24) == [-2048, 2047, -1]
    with pytest.raises(ValueError, match="2 inputs and 3 targets"):
        layout.pack_sample([1], [1, 2, 3], True)
    with pytest.raises(ValueError, match="1..255"):
        stream_layout(0, 1, 16)


def test_driver_reads_geometry_counters_and_writes_ctrl():
    layout = stream_layout(3, 2, 14)
    regs = FakeRegisters(3 | 2 << 8 | 14 << 16 | (-2 & 0xFF) << 24, layout.s_width | layout.m_width << 16)
    driver = LearnerAxiDriver(regs.read32, regs.write32)
    driver.check_id()
    assert driver.layout() == layout and driver.f_act() == -2
    # SATURATIONS is a full 32-bit unsigned count (the word above 2^31 is not read as negative)
    assert driver.counters() == {"SAMPLES": 7, "UPDATES": 5, "PREDICTIONS": 6, "SATURATIONS": 0xFFFFFFFE}
    assert driver.train_enable
    driver.train_enable = False
    assert regs.writes[-1] == (0x04, 0) and not driver.train_enable
    driver.clear_counters()
    assert regs.writes[-1] == (0x04, 2)
    assert driver.counters() == {"SAMPLES": 0, "UPDATES": 0, "PREDICTIONS": 0, "SATURATIONS": 0}
    # LR_SHIFT: the range from its read-only fields; a shift outside it is refused before anything is written
    assert driver.lr_shift_range() == (4, 7) and driver.lr_shift == 4
    driver.lr_shift = 6
    assert regs.writes[-1] == (0x30, 6) and driver.lr_shift == 6
    writes = len(regs.writes)
    for bad in (3, 8, True, 5.0):
        with pytest.raises(ValueError, match="outside this build's range 4..7"):
            driver.lr_shift = bad
    assert len(regs.writes) == writes and driver.lr_shift == 6
    regs.words[0x00] = 0xDEADBEEF
    with pytest.raises(RuntimeError, match="0xDEADBEEF"):
        driver.check_id()


def test_markdown_and_header_carry_the_builds_values():
    layout = stream_layout(2, 1, 16)
    table = register_markdown(layout, 10, 18, 12, True, (3, 6))
    assert "| 0x18 | GEOMETRY | RO | 0x0A100102 |" in table and "train flag at bit 48" in table
    assert "| 0x28 | COEF_FORMAT | RO | 0x00010C12 |" in table and "| 0x2C | SATURATIONS | RO | 0 |" in table
    header = register_header(layout, 10, 18, 12, True, (3, 6))
    defines = dict(re.findall(r"#define (\w+) (0x[0-9A-F]+|\d+)u", header))
    assert defines["LEARNER_AXI_CTRL"] == "0x04" and defines["LEARNER_AXI_CTRL_CLEAR_COUNTERS_MASK"] == "0x00000002"
    assert defines["LEARNER_AXI_SATURATIONS"] == "0x2C" and defines["LEARNER_AXI_SHELL_ID"] == "0x4C524E03"
    assert "| 0x30 | LR_SHIFT | RW | 0x00060303 |" in table and defines["LEARNER_AXI_LR_SHIFT_RESET"] == "0x00060303"
    assert defines["LEARNER_AXI_TRAIN_BIT"] == "48" and defines["LEARNER_AXI_TDATA_VALUE"] == f"0x{56 | 16 << 16:08X}"


@pytest.mark.parametrize("spec", [KANSpec(widths=(2, 2, 1), grid_size=4), MLPSpec()], ids=["kan", "mlp"])
def test_every_emitted_folder_has_the_axi_top_and_its_register_docs(spec, tmp_path):
    manifest = emit_rtl(spec, tmp_path, seed=0)
    axi = manifest["axi"]
    kind = manifest["kind"]
    assert axi["top"] == f"{kind}_online_axi" and manifest["top"] == f"{kind}_online_top"
    for name in axi["sources"] + axi["register_docs"] + ["learner_axi_regs.svh"]:
        assert (tmp_path / name).is_file(), name
    assert f"module {kind}_online_axi" in (tmp_path / f"{kind}_online_axi.sv").read_text()
    assert axi["s_axis_width"] % 8 == 0 and axi["train_bit"] == (spec.n_inputs + spec.n_outputs) * spec.act_t.width
    assert "LEARNER_AXI_GEOMETRY_VALUE" in (tmp_path / "learner_axi.h").read_text()
    assert axi["coefficient_access"] == (kind == "kan")
    assert axi["lr_shift_range"] == [spec.lr_shift, spec.lr_shift]  # no run-time range by default


def test_driver_addresses_reads_and_writes_coefficients():
    regs = FakeRegisters(0, 0)
    driver = LearnerAxiDriver(regs.read32, regs.write32)
    assert coef_address(2, 3, 1, 10) == 10 | 1 << 8 | 3 << 16 | 2 << 24
    assert driver.coefficient_type() == (12, -4)
    driver.write_coefficient(1, 0, 2, 7, -2048)
    assert regs.writes[-2:] == [(0x20, coef_address(1, 0, 2, 7)), (0x24, 0xFFFFF800)]
    driver.write_coefficient(0, 0, 0, 0, 2047)
    assert driver.read_coefficient(1, 0, 2, 7) == -2048 and driver.read_coefficient(0, 0, 0, 0) == 2047
    with pytest.raises(ValueError, match="outside the 12-bit"):
        driver.write_coefficient(0, 0, 0, 0, 2048)
    with pytest.raises(ValueError, match="layer < 16"):
        coef_address(16, 0, 0, 0)
    regs.words[0x28] = 0
    with pytest.raises(RuntimeError, match="no coefficient access"):
        driver.coefficient_type()
