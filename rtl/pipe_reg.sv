// pipe_reg: an optional pipeline register (ON = 1) or a wire (ON = 0).
//
// No enable and no reset: a register is a plain delay of the logic before it. A sample's inputs
// stay until the next sample is accepted, and the banks until its commit (kan_online), so a
// register at depth d along a path carries that sample's value from the sample's cycle d on,
// and a next sample accepted early only reaches the registers this one has left (online_control).
// What a register holds before then, or between samples, is never used.
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
