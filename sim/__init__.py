"""cocotb benches of the RTL (run by pytest and by codesign.fpga.cosim through cocotb's runner)."""
