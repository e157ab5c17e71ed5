// mlp_layer: one dense layer of the MLP online learner (docs/arithmetic.md §8), every weight
// in parallel: the baseline that the KAN learner is compared with, built the same way.
//
// Phases (mlp_online sequences them, like kan_online):
//   F  forward: z_o = cast_act(sum_i w_oi x_i + (b_o << F_ACT)); y_o = act(z_o) on hidden layers
//   B  backward (HAS_BACKWARD): g_in_i = cast_grad(sum_o g_o w_oi), pre-update weights
//   U  update, written when `commit` is high: w_oi <- cast_coef(w_oi - 2^-s g_o x_i), the bias
//      with x = 1.0
// On a hidden layer (HAS_ACT) g_o is the incoming gradient masked by the activation's
// derivative at the cast z (ReLU: z > 0; hardtanh: -1 < z < 1).
// The blocks carry the names of the operations (docs/arithmetic.md §10): dense_forward (F),
// activation_mask, dense_input_gradient (B), dense_update (U).
// The weights live in registers, one row per neuron (weights, then the bias), read in parallel.
// Reset does not touch them.
module mlp_layer #(
    parameter int N_IN = 2,
    parameter int N_OUT = 4,
    parameter int W_ACT = 16, parameter int F_ACT = 10, parameter int Q_ACT = 4, parameter int O_ACT = 0,
    parameter int W_COEF = 16, parameter int F_COEF = 10, parameter int Q_COEF = 4, parameter int O_COEF = 0,
    // type of the gradient at this layer's outputs (err_t for the last layer, grad_t otherwise)
    parameter int W_G = 16, parameter int F_G = 10,
    // grad_t: the gradient passed back to the inputs
    parameter int W_GR = 16, parameter int F_GR = 10, parameter int Q_GR = 4, parameter int O_GR = 0,
    parameter int LR_SHIFT = 5,
    parameter int HAS_ACT = 1,       // hidden layer: activation on the outputs
    parameter int RELU = 1,          // 1: ReLU, 0: hardtanh
    parameter int HAS_BACKWARD = 1,
    parameter int REG_F = 0,
    parameter int REG_B = 0,
    parameter INIT_FILE = ""         // N_OUT words: row o = weights (i at [i*W_COEF +: W_COEF]), then bias
) (
    input  logic                   clk,
    input  logic [N_IN*W_ACT-1:0]  x,
    output logic [N_OUT*W_ACT-1:0] y,       // held after F when REG_F
    output logic [N_OUT*W_ACT-1:0] y_comb,  // combinational, ready at the end of F
    input  logic                   f_load,
    input  logic [N_OUT*W_G-1:0]   g_out,
    output logic [N_IN*W_GR-1:0]   g_in,
    input  logic                   b_load,
    input  logic                   commit,
    // the casts' overflow flags (fixed_cast): z of output o at bit o; g_in[i] at bit i (0 without
    // HAS_BACKWARD); the update of weight i of neuron o (i = N_IN: the bias) at bit o*(N_IN+1)+i.
    // Right for the sample until its commit (mlp_online samples them at the last stage).
    output logic [N_OUT-1:0]          ovf_z,
    output logic [N_IN-1:0]           ovf_grad,
    output logic [N_OUT*(N_IN+1)-1:0] ovf_upd
);
  localparam int W_ROW = (N_IN + 1) * W_COEF;
  localparam int W_PROD = W_ACT + W_COEF;
  localparam int W_ACC = W_PROD + $clog2(N_IN + 1) + 2;
  localparam int W_BPROD = W_G + W_COEF;
  localparam int W_S = W_BPROD + $clog2(N_OUT) + 1;
  localparam int F_DELTA = F_G + F_ACT + LR_SHIFT;
  localparam int F_FULL = (F_COEF > F_DELTA) ? F_COEF : F_DELTA;
  localparam int W_X1 = (W_ACT > F_ACT + 1) ? W_ACT : F_ACT + 2;  // holds x and 1.0
  localparam int W_GX = W_G + W_X1 + 1;
  // 1.0 in act_t units, at a width that holds it even when act_t cannot
  localparam logic signed [W_X1:0] ONE = (W_X1 + 1)'(1) <<< F_ACT;
  localparam int W_FULL_C = W_COEF + F_FULL - F_COEF;
  localparam int W_FULL_D = W_GX + F_FULL - F_DELTA;
  localparam int W_FULL = ((W_FULL_C > W_FULL_D) ? W_FULL_C : W_FULL_D) + 2;

  logic [W_ROW-1:0] rows[0:N_OUT-1]  /*verilator public_flat_rd*/;
  initial if (INIT_FILE != "") $readmemh(INIT_FILE, rows);

  // ---------------------------------------------------------------- F
  logic [N_OUT*W_ACT-1:0] z_now, y_now, z_h;
  logic [N_IN*W_ACT-1:0] x_h;
  assign y_comb = y_now;
  for (genvar o = 0; o < N_OUT; o++) begin : dense_forward
    logic [N_IN*W_PROD-1:0] prod;
    logic signed [W_ACC-1:0] acc;
    logic signed [W_ACT-1:0] z;
    for (genvar i = 0; i < N_IN; i++) begin : g_prod
      assign prod[i*W_PROD+:W_PROD] = $signed(rows[o][i*W_COEF+:W_COEF]) * $signed(x[i*W_ACT+:W_ACT]);
    end
    always_comb begin
      acc = W_ACC'($signed(rows[o][N_IN*W_COEF+:W_COEF])) <<< F_ACT;  // bias, aligned to the products
      for (int i = 0; i < N_IN; i++) acc = acc + W_ACC'($signed(prod[i*W_PROD+:W_PROD]));
    end
    fixed_cast #(
        .W_IN(W_ACC), .SHIFT(F_COEF), .W_OUT(W_ACT), .SIGNED(1), .QMODE(Q_ACT), .OMODE(O_ACT)
    ) u_z (.clk(1'b0), .neg_offset(1'b0), .v(acc), .q(z), .overflow(ovf_z[o]));
    assign z_now[o*W_ACT+:W_ACT] = z;
    if (HAS_ACT == 0) begin : g_linear
      assign y_now[o*W_ACT+:W_ACT] = z;
    end else if (RELU != 0) begin : g_relu
      assign y_now[o*W_ACT+:W_ACT] = z[W_ACT-1] ? '0 : z;
    end else begin : g_hardtanh
      logic signed [W_X1:0] zw;
      assign zw = (W_X1 + 1)'(z);
      assign y_now[o*W_ACT+:W_ACT] = (zw > ONE) ? W_ACT'(ONE) : ((zw < -ONE) ? W_ACT'(-ONE) : z);
    end
  end

  generate
    if (REG_F != 0) begin : g_hold_f
      always_ff @(posedge clk) begin
        if (f_load) begin
          y <= y_now;
          z_h <= z_now;
          x_h <= x;
        end
      end
    end else begin : g_pass_f
      assign y = y_now;
      assign z_h = z_now;
      assign x_h = x;
    end
  endgenerate

  // ---------------------------------------------------------------- gradient at the outputs
  logic [N_OUT*W_G-1:0] g_masked;
  for (genvar o = 0; o < N_OUT; o++) begin : activation_mask
    logic signed [W_ACT-1:0] z;
    logic active;
    assign z = $signed(z_h[o*W_ACT+:W_ACT]);
    if (HAS_ACT == 0) begin : g_all
      assign active = 1'b1;
    end else if (RELU != 0) begin : g_relu
      assign active = z > 0;
    end else begin : g_hardtanh
      logic signed [W_X1:0] zw;
      assign zw = (W_X1 + 1)'(z);
      assign active = (zw > -ONE) && (zw < ONE);
    end
    assign g_masked[o*W_G+:W_G] = active ? g_out[o*W_G+:W_G] : '0;
  end

  // ---------------------------------------------------------------- B
  logic [N_IN*W_GR-1:0] g_in_now;
  if (HAS_BACKWARD != 0) begin : dense_input_gradient
    for (genvar i = 0; i < N_IN; i++) begin : g_grad
      logic [N_OUT*W_BPROD-1:0] bprod;
      logic signed [W_S-1:0] s;
      for (genvar o = 0; o < N_OUT; o++) begin : g_bprod
        assign bprod[o*W_BPROD+:W_BPROD] = $signed(g_masked[o*W_G+:W_G]) * $signed(rows[o][i*W_COEF+:W_COEF]);
      end
      always_comb begin
        s = '0;
        for (int o = 0; o < N_OUT; o++) s = s + W_S'($signed(bprod[o*W_BPROD+:W_BPROD]));
      end
      fixed_cast #(
          .W_IN(W_S), .SHIFT(F_G + F_COEF - F_GR), .W_OUT(W_GR), .SIGNED(1), .QMODE(Q_GR), .OMODE(O_GR)
      ) u_grad (.clk(1'b0), .neg_offset(1'b0), .v(s), .q(g_in_now[i*W_GR+:W_GR]), .overflow(ovf_grad[i]));
    end
  end else begin : g_no_backward
    assign g_in_now = '0;
    assign ovf_grad = '0;
  end

  generate
    if (REG_B != 0) begin : g_hold_b
      always_ff @(posedge clk) if (b_load) g_in <= g_in_now;
    end else begin : g_pass_b
      assign g_in = g_in_now;
    end
  endgenerate

  // ---------------------------------------------------------------- U
  for (genvar o = 0; o < N_OUT; o++) begin : dense_update
    logic [W_ROW-1:0] new_row;
    for (genvar i = 0; i <= N_IN; i++) begin : g_weight
      logic signed [W_GX-1:0] gx;
      logic signed [W_FULL-1:0] full;
      if (i < N_IN) begin : g_input
        assign gx = $signed(g_masked[o*W_G+:W_G]) * $signed(x_h[i*W_ACT+:W_ACT]);
      end else begin : g_bias
        assign gx = W_GX'($signed(g_masked[o*W_G+:W_G])) <<< F_ACT;  // the bias sees a constant 1.0
      end
      assign full = (W_FULL'($signed(rows[o][i*W_COEF+:W_COEF])) <<< (F_FULL - F_COEF))
                  - (W_FULL'(gx) <<< (F_FULL - F_DELTA));
      fixed_cast #(
          .W_IN(W_FULL), .SHIFT(F_FULL - F_COEF), .W_OUT(W_COEF), .SIGNED(1), .QMODE(Q_COEF), .OMODE(O_COEF)
      ) u_coef (.clk(1'b0), .neg_offset(1'b0), .v(full), .q(new_row[i*W_COEF+:W_COEF]), .overflow(ovf_upd[o*(N_IN+1)+i]));
    end
    always @(posedge clk) if (commit) rows[o] <= new_row;  // not always_ff: $readmemh also writes rows
  end
endmodule
