// Test harness of fixed_cast: every quantization x overflow mode on a table of shapes.
// The table comes from the bench as packed parameters, 32 bits per shape (SHIFT in two's
// complement). Shape s reads its input from v_all[64*s +: W_IN] and writes mode (qm, om) to
// the 32-bit slot q_all[32*((s*7 + qm)*4 + om) +: W_OUT], its overflow flag at bit 31 of the
// slot (W_OUT <= 31). Simulation only.
module fixed_cast_harness #(
    parameter int N_SHAPES = 1,
    parameter logic [32*N_SHAPES-1:0] W_IN_TABLE = 32'd24,
    parameter logic [32*N_SHAPES-1:0] SHIFT_TABLE = 32'd7,
    parameter logic [32*N_SHAPES-1:0] W_OUT_TABLE = 32'd10,
    parameter logic [32*N_SHAPES-1:0] SIGNED_TABLE = 32'd1
) (
    input  logic [64*N_SHAPES-1:0]    v_all,
    output logic [32*N_SHAPES*28-1:0] q_all
);
  for (genvar s = 0; s < N_SHAPES; s++) begin : g_shape
    localparam int WI = int'(W_IN_TABLE[32*s+:32]);
    localparam int SH = int'($signed(SHIFT_TABLE[32*s+:32]));
    localparam int WO = int'(W_OUT_TABLE[32*s+:32]);
    localparam int SG = int'(SIGNED_TABLE[32*s+:32]);
    for (genvar qm = 0; qm < 7; qm++) begin : g_q
      for (genvar om = 0; om < 4; om++) begin : g_o
        logic [WO-1:0] q;
        logic overflow;
        fixed_cast #(.W_IN(WI), .SHIFT(SH), .W_OUT(WO), .SIGNED(SG), .QMODE(qm), .OMODE(om)) u_cast (
            .clk(1'b0), .v(v_all[64*s+:WI]),
            .q(q), .overflow(overflow)
        );
        assign q_all[32*((s*7+qm)*4+om)+:32] = {overflow, 31'(q)};
      end
    end
  end
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_high_bits;
  assign unused_high_bits = ^v_all;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
