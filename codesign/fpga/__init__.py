"""FPGA backend: spec -> HLS project, C-simulation, reports.

The data flows one way (``codesign build``, :func:`codesign.fpga.build.build`):

- :mod:`~codesign.fpga.boards`: the part and board files (``board_files/``) that ``--target`` names;
- :mod:`~codesign.fpga.stimulus`: the C-simulation stream and the Python reference's expected outputs;
- :mod:`~codesign.fpga.hls_project`: the Vitis HLS project, from templates under ``hls/templates/``
  (learner-specific firmware, RTL parameters, cost and cycles in the kinds' packages :mod:`~codesign.fpga.kan` and
  :mod:`~codesign.fpga.mlp`, registered in :mod:`~codesign.fpga.kinds`;
  exact intermediate types in :mod:`~codesign.fpga.intermediates`, ports in :mod:`~codesign.fpga.manifest`);
- :mod:`~codesign.fpga.csim`: g++ against hls4ml's ``ap_types`` headers, run, summary;
- :mod:`~codesign.fpga.timing` and :mod:`~codesign.fpga.report`: expected latency/II and report.json.
"""
