// flag_count: how many of N flags are 1, as a pipeline of registered partial counts.
//
// The flags are registered, then summed four at a time per level ((a + b) + (c + d): two narrow
// adds between registers, whatever N is), so the count of the flags of cycle t is on `count` in
// cycle t + 1 + LEVELS. Every register clears at rst, so no flag from before a reset is counted
// after it. Used for the learner's overflow count (kan_online, the AXI shell's SATURATIONS).
module flag_count #(
    parameter int N = 1,
    parameter int W_COUNT = 32,
    parameter int W = $clog2(N + 1)  // derived, do not set: bits of a partial count
) (
    input  logic               clk,
    input  logic               rst,
    input  logic [N-1:0]       flags,
    output logic [W_COUNT-1:0] count
);
  function automatic int count_at(input int j);  // partial counts at level j: ceil(N / 4^j)
    count_at = N;
    for (int q = 0; q < j; q++) count_at = (count_at + 3) / 4;
  endfunction
  function automatic int levels_for(input int n);
    int c;
    levels_for = 0;
    c = n;
    while (c > 1) begin
      c = (c + 3) / 4;
      levels_for = levels_for + 1;
    end
  endfunction
  localparam int LEVELS = levels_for(N);

  logic [N-1:0] flags_q;
  always_ff @(posedge clk) flags_q <= rst ? '0 : flags;

  for (genvar j = 0; j <= LEVELS; j++) begin : g_level
    localparam int NJ = count_at(j);
    logic [NJ*W-1:0] part;  // the level's partial counts, count k at [k*W +: W]
    if (j == 0) begin : g_leaf
      for (genvar k = 0; k < N; k++) begin : g_flag
        assign part[k*W+:W] = W'(flags_q[k]);
      end
    end else begin : g_sum
      localparam int NP = count_at(j - 1);
      for (genvar k = 0; k < NJ; k++) begin : g_node
        logic [4*W-1:0] four;  // up to four counts of the level below, zero-padded
        logic [W-1:0] sum_q;
        for (genvar m = 0; m < 4; m++) begin : g_term
          if (4 * k + m < NP) begin : g_in
            assign four[m*W+:W] = g_level[j-1].part[(4*k+m)*W+:W];
          end else begin : g_pad
            assign four[m*W+:W] = '0;
          end
        end
        always_ff @(posedge clk) sum_q <= rst ? '0 : (four[0+:W] + four[W+:W]) + (four[2*W+:W] + four[3*W+:W]);
        assign part[k*W+:W] = sum_q;
      end
    end
  end
  assign count = W_COUNT'(g_level[LEVELS].part[0+:W]);
endmodule
