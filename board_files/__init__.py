"""One file per FPGA part or board: resources, default clock, part string."""
