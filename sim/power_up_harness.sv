// Test harness of the randomized power-up (codesign.fpga.simulator.RANDOM_INIT_ARGS): a register with no
// reset and no initial value, which holds whatever it powered up with. Simulation only.
module power_up_harness (
    input  logic        clk,
    output logic [63:0] q
);
  logic [63:0] r;
  always_ff @(posedge clk) r <= r;
  assign q = r;
endmodule
