"""FPGA backend: spec -> HLS project, C-simulation, reports."""
