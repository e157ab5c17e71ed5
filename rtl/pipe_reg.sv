// pipe_reg: an optional pipeline register (ON = 1) or a wire (ON = 0).
//
// No enable and no reset: the learner holds one sample at a time and holds its inputs for the
// whole sample (kan_online), so a register at depth d along a path carries that sample's value
// from the sample's cycle d on. A register is only a timing cut; what it holds before then, or
// between samples, is never used.
module pipe_reg #(
    parameter int W = 1,
    parameter int ON = 1
) (
    input  logic         clk,
    input  logic [W-1:0] d,
    output logic [W-1:0] q
);
  generate
    if (ON != 0) begin : g_reg
      always_ff @(posedge clk) q <= d;
    end else begin : g_wire
      assign q = d;
    end
  endgenerate
endmodule
