// shared_mult: N products p[k] = a[k] * b[k] (b signed; a signed when A_SIGNED, else unsigned), on
// ceil(N / SHARE) multipliers.
//
// SHARE = 1: a multiplier per product, registered when CUT (pipe_reg), a plain product otherwise.
// SHARE > 1: time-multiplexed. A free-running count `slot` (0 .. SHARE-1) gives multiplier m the
// operands of product slot*M + m (M = ceil(N / SHARE)), and that product's register loads the result
// in the cycle the count is slot. With IN_REG the selected operands are registered first (the DSP's
// input register; the mux then ends at a register, not inside the multiply's path) and the product
// registers load one cycle after their slot. The count runs whatever the learner does (no enable,
// no reset: a count past SHARE-1 at power-up returns to 0 at the next edge), so once the operands
// have held still for SHARE (+ IN_REG) cycles every register holds its product, and keeps it while
// they hold. The learner's operands hold for the sample (pipe_reg.sv), so a shared site is
// SHARE + IN_REG registers deep in its cycle count (codesign.fpga.placement.Pipeline.product_cycles)
// and exact.
module shared_mult #(
    parameter int N = 4,
    parameter int W_A = 16,
    parameter int A_SIGNED = 1,
    parameter int W_B = 16,
    parameter int W_P = 32,
    parameter int SHARE = 1,
    parameter int CUT = 0,     // SHARE = 1: the product register
    parameter int IN_REG = 0   // SHARE > 1: the operand register after the mux
) (
    input  logic             clk,
    input  logic [N*W_A-1:0] a,  // operand k at [k*W_A +: W_A]
    input  logic [N*W_B-1:0] b,
    output logic [N*W_P-1:0] p
);
  localparam int W_AX = W_A + ((A_SIGNED != 0) ? 0 : 1);  // an unsigned a with a zero sign bit

  if (SHARE <= 1) begin : g_each
    logic [N*W_P-1:0] prod;
    for (genvar k = 0; k < N; k++) begin : g_prod
      logic signed [W_AX-1:0] ak;
      assign ak = (A_SIGNED != 0) ? W_AX'($signed(a[k*W_A+:W_A])) : W_AX'(a[k*W_A+:W_A]);
      assign prod[k*W_P+:W_P] = ak * $signed(b[k*W_B+:W_B]);
    end
    pipe_reg #(.W(N * W_P), .ON(CUT)) u_cut (.clk(clk), .d(prod), .q(p));
  end else begin : g_shared
    localparam int M = (N + SHARE - 1) / SHARE;
    localparam int W_SLOT = $clog2(SHARE);
    localparam int SLOTS = 1 << W_SLOT;  // the mux's inputs; those past SHARE-1 are never selected
    logic [W_SLOT-1:0] slot, slot_held;  // slot_held: the slot whose operands the multipliers have
    always_ff @(posedge clk) slot <= (slot >= W_SLOT'(SHARE - 1)) ? '0 : slot + 1'b1;
    pipe_reg #(.W(W_SLOT), .ON(IN_REG)) u_slot_held (.clk(clk), .d(slot), .q(slot_held));

    logic [M*W_P-1:0] product;  // multiplier m's result at [m*W_P +: W_P]
    for (genvar m = 0; m < M; m++) begin : g_mult
      logic [SLOTS*W_A-1:0] a_in;
      logic [SLOTS*W_B-1:0] b_in;
      for (genvar s = 0; s < SLOTS; s++) begin : g_slot
        if (s < SHARE && s * M + m < N) begin : g_used
          assign a_in[s*W_A+:W_A] = a[(s*M+m)*W_A+:W_A];
          assign b_in[s*W_B+:W_B] = b[(s*M+m)*W_B+:W_B];
        end else begin : g_idle
          assign a_in[s*W_A+:W_A] = '0;
          assign b_in[s*W_B+:W_B] = '0;
        end
      end
      logic [W_AX-1:0] a_sel, a_held;
      logic [W_B-1:0] b_sel, b_held;
      assign a_sel = (A_SIGNED != 0) ? W_AX'($signed(a_in[slot*W_A+:W_A])) : W_AX'(a_in[slot*W_A+:W_A]);
      assign b_sel = b_in[slot*W_B+:W_B];
      pipe_reg #(.W(W_AX + W_B), .ON(IN_REG)) u_operands (.clk(clk), .d({a_sel, b_sel}), .q({a_held, b_held}));
      assign product[m*W_P+:W_P] = $signed(a_held) * $signed(b_held);
    end
    for (genvar k = 0; k < N; k++) begin : g_held
      logic [W_P-1:0] q;
      always_ff @(posedge clk) begin
        if (slot_held == W_SLOT'(k / M)) q <= product[(k%M)*W_P+:W_P];
      end
      assign p[k*W_P+:W_P] = q;
    end
  end
endmodule
