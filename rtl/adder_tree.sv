// adder_tree: the exact sum of N signed terms, pairwise, with a register after every SPLIT levels.
//
// W_SUM must hold the exact sum (the callers size it so that no partial sum overflows), so the
// result equals the sequential sum bit for bit whatever the tree's shape. SPLIT = 0: purely
// combinational. SPLIT = s > 0: a register after levels s, 2s, ... below the last one, i.e.
// (LEVELS - 1) div s registers on every path (the output itself is not registered).
module adder_tree #(
    parameter int N = 4,
    parameter int W_IN = 16,
    parameter int W_SUM = 18,
    parameter int SPLIT = 0,
    parameter int LEVELS = (N > 1) ? $clog2(N) : 0  // derived, do not set
) (
    input  logic                    clk,
    input  logic [N*W_IN-1:0]       terms,  // term k at [k*W_IN +: W_IN], signed
    output logic signed [W_SUM-1:0] sum
);
  // values at level j: ceil(N / 2^j); level j is held at [(j*N + k)*W_SUM +: W_SUM]
  function automatic int count(input int j);
    count = (N + (1 << j) - 1) >> j;
  endfunction

  logic [(LEVELS+1)*N*W_SUM-1:0] level;
  for (genvar k = 0; k < N; k++) begin : g_leaf
    assign level[k*W_SUM+:W_SUM] = W_SUM'($signed(terms[k*W_IN+:W_IN]));
  end
  for (genvar j = 0; j < LEVELS; j++) begin : g_level
    localparam int NJ = count(j);
    localparam int NN = count(j + 1);
    logic [NN*W_SUM-1:0] next;
    for (genvar k = 0; k < NN; k++) begin : g_node
      if (2 * k + 1 < NJ) begin : g_add
        assign next[k*W_SUM+:W_SUM] = $signed(level[(j*N+2*k)*W_SUM+:W_SUM]) + $signed(level[(j*N+2*k+1)*W_SUM+:W_SUM]);
      end else begin : g_pass
        assign next[k*W_SUM+:W_SUM] = level[(j*N+2*k)*W_SUM+:W_SUM];
      end
    end
    pipe_reg #(.W(NN * W_SUM), .ON((SPLIT > 0 && (j + 1) % SPLIT == 0 && j + 1 < LEVELS) ? 1 : 0)) u_cut (
        .clk(clk), .d(next), .q(level[((j+1)*N)*W_SUM+:NN*W_SUM])
    );
    if (NN < N) begin : g_unused
      assign level[((j+1)*N+NN)*W_SUM+:(N-NN)*W_SUM] = '0;
    end
  end
  assign sum = $signed(level[LEVELS*N*W_SUM+:W_SUM]);
endmodule
