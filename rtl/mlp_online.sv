// mlp_online: the MLP online learner (docs/arithmetic.md §8), predict-then-update, batch 1.
//
// The same ports, handshake, phases and PIPE register mask as kan_online (see there):
// F_0..F_{L-1}, B_{L-1}..B_1, U; II = 1 + popcount(PIPE).
module mlp_online #(
    parameter int N_LAYERS = 2,
    parameter logic [16*8-1:0] WIDTHS = {16'd1, 16'd24, 16'd2},  // n_0 at bits [15:0], n_1 next, ...
    parameter int N_IN = 2,
    parameter int N_OUT = 1,
    parameter int N_MAX = 24,
    parameter int W_ACT = 16, parameter int F_ACT = 10, parameter int Q_ACT = 4, parameter int O_ACT = 0,
    parameter int W_COEF = 16, parameter int F_COEF = 10, parameter int Q_COEF = 4, parameter int O_COEF = 0,
    parameter int W_ERR = 16, parameter int F_ERR = 10, parameter int Q_ERR = 4, parameter int O_ERR = 0,
    parameter int W_GRAD = 16, parameter int F_GRAD = 10, parameter int Q_GRAD = 4, parameter int O_GRAD = 0,
    parameter int RELU = 1,
    parameter int LR_SHIFT = 5,
    parameter logic [63:0] PIPE = 64'd0,
    parameter MEM_DIR = "."  // folder of weights_l<lll>.mem
) (
    input  logic                   ap_clk,
    input  logic                   ap_rst,
    input  logic                   ap_start,
    output logic                   ap_done,
    output logic                   ap_idle,
    output logic                   ap_ready,
    input  logic [N_IN*W_ACT-1:0]  x,
    input  logic                   x_ap_vld,
    input  logic [N_OUT*W_ACT-1:0] y,
    input  logic                   y_ap_vld,
    input  logic                   train,
    output logic [N_OUT*W_ACT-1:0] y_hat,
    output logic                   y_hat_ap_vld,
    // overflows: how many of the sample's casts overflowed their type (fixed_cast's overflow, the
    // reference's probe), counted at its last stage: every forward cast, and with train the error,
    // input-gradient and update casts; a sample dropped by a reset counts nothing. Several cycles
    // late (flag_count); the AXI shell adds it up into SATURATIONS. The bare top leaves it open.
    output logic [31:0]            overflows
);
  `include "mem_names.svh"

  function automatic int stage_of(input int p);
    stage_of = 0;
    for (int q = 0; q < p; q++) if (PIPE[q]) stage_of = stage_of + 1;
  endfunction

  localparam int N_PHASES = 2 * N_LAYERS;
  localparam int N_STAGES = stage_of(N_PHASES - 1) + 1;
  // the overflow flags of a layer (mlp_layer's ovf_z, ovf_grad, ovf_upd) and where they sit in sat_flags
  function automatic int layer_flags(input int l);
    layer_flags = WIDTHS[16*(l+1)+:16] * (WIDTHS[16*l+:16] + 2) + WIDTHS[16*l+:16];
  endfunction
  function automatic int flags_before(input int l);
    flags_before = 0;
    for (int q = 0; q < l; q++) flags_before = flags_before + layer_flags(q);
  endfunction
  localparam int N_FLAGS = flags_before(N_LAYERS) + N_OUT;  // the error casts last
  localparam int W_GMAX = (W_ERR > W_GRAD) ? W_ERR : W_GRAD;
  localparam int ACT_SLOT = N_MAX * W_ACT;
  localparam int G_SLOT = N_MAX * W_GMAX;

  logic accept, busy, last, pred_load, commit;
  logic [N_STAGES-1:0] stage_on;

  online_control #(.N_STAGES(N_STAGES), .PRED_STAGE(stage_of(N_LAYERS - 1))) u_control (
      .clk(ap_clk), .rst(ap_rst), .in_valid(ap_start && x_ap_vld && y_ap_vld),
      .ready(ap_ready), .accept(accept), .busy(busy), .open_behind(), .take_ports(), .stage_on(stage_on),
      .pred_load(pred_load),
      .last(last), .hold_load(), .pred_valid(y_hat_ap_vld), .done(ap_done)  // no overlap (N_FRONT = 0)
  );
  assign ap_idle = !busy;

  // the sample: from the ports in its stage 0, from the input registers in later stages
  logic [N_IN*W_ACT-1:0] x_cur, x_now;
  logic [N_OUT*W_ACT-1:0] y_cur, y_now;
  logic train_cur, train_now;
  always_ff @(posedge ap_clk) begin
    if (accept) begin
      x_cur <= x;
      y_cur <= y;
      train_cur <= train;
    end
  end
  assign x_now = busy ? x_cur : x;
  assign y_now = busy ? y_cur : y;
  assign train_now = busy ? train_cur : train;
  assign commit = last && train_now && !ap_rst;

  logic [N_FLAGS-1:0] sat_flags /*verilator split_var*/;  // the overflows counted in this cycle
  logic count_forward, count_train;  // the sample ends its last stage: its forward casts, and its backward ones
  assign count_forward = last && !ap_rst;
  assign count_train = last && train_now && !ap_rst;

  logic [(N_LAYERS+1)*ACT_SLOT-1:0] acts;
  logic [(N_LAYERS+1)*G_SLOT-1:0] grads;
  assign acts[0+:N_IN*W_ACT] = x_now;

  for (genvar l = 0; l < N_LAYERS; l++) begin : g_layer
    localparam int NI = WIDTHS[16*l+:16];
    localparam int NO = WIDTHS[16*(l+1)+:16];
    localparam int IS_LAST = (l == N_LAYERS - 1) ? 1 : 0;
    localparam int WG = (IS_LAST != 0) ? W_ERR : W_GRAD;
    localparam int FG = (IS_LAST != 0) ? F_ERR : F_GRAD;
    localparam int PHASE_F = l;
    localparam int PHASE_B = 2 * N_LAYERS - 1 - l;
    logic [NI*W_GRAD-1:0] g_in;
    logic [NO*W_ACT-1:0] y_comb;
    logic [NO-1:0] ovf_z;
    logic [NI-1:0] ovf_grad;
    logic [NO*(NI+1)-1:0] ovf_upd;

    mlp_layer #(
        .N_IN(NI), .N_OUT(NO),
        .W_ACT(W_ACT), .F_ACT(F_ACT), .Q_ACT(Q_ACT), .O_ACT(O_ACT),
        .W_COEF(W_COEF), .F_COEF(F_COEF), .Q_COEF(Q_COEF), .O_COEF(O_COEF),
        .W_G(WG), .F_G(FG),
        .W_GR(W_GRAD), .F_GR(F_GRAD), .Q_GR(Q_GRAD), .O_GR(O_GRAD),
        .LR_SHIFT(LR_SHIFT),
        .HAS_ACT(IS_LAST != 0 ? 0 : 1),
        .RELU(RELU),
        .HAS_BACKWARD(l > 0 ? 1 : 0),
        .REG_F(PIPE[PHASE_F] ? 1 : 0),
        .REG_B((l > 0 && PIPE[PHASE_B]) ? 1 : 0),
        .INIT_FILE({MEM_DIR, "/weights_l", decimal3(l), ".mem"})
    ) u_layer (
        .clk(ap_clk),
        .x(acts[l*ACT_SLOT+:NI*W_ACT]),
        .y(acts[(l+1)*ACT_SLOT+:NO*W_ACT]),
        .y_comb(y_comb),
        .f_load(stage_on[stage_of(PHASE_F)]),
        .g_out(grads[(l+1)*G_SLOT+:NO*WG]),
        .g_in(g_in),
        .b_load(stage_on[stage_of(PHASE_B)]),
        .commit(commit),
        .ovf_z(ovf_z), .ovf_grad(ovf_grad), .ovf_upd(ovf_upd)
    );
    // at the last stage every value of the sample is still its own (inputs and rows held until the commit)
    assign sat_flags[flags_before(l)+:layer_flags(l)] =
        {{(NO*(NI+1)){count_train}} & ovf_upd, {NI{count_train}} & ovf_grad, {NO{count_forward}} & ovf_z};
    if (l > 0) begin : g_pass_grad
      assign grads[l*G_SLOT+:NI*W_GRAD] = g_in;
    end
  end

  for (genvar o = 0; o < N_OUT; o++) begin : output_error
    logic signed [W_ACT:0] diff;
    assign diff = (W_ACT + 1)'($signed(acts[N_LAYERS*ACT_SLOT+o*W_ACT+:W_ACT])) - (W_ACT + 1)'($signed(y_now[o*W_ACT+:W_ACT]));
    logic ovf_err;
    fixed_cast #(.W_IN(W_ACT + 1), .SHIFT(F_ACT - F_ERR), .W_OUT(W_ERR), .SIGNED(1), .QMODE(Q_ERR), .OMODE(O_ERR)) u_err (
        .clk(1'b0), .neg_offset(1'b0), .v(diff), .q(grads[N_LAYERS*G_SLOT+o*W_ERR+:W_ERR]), .overflow(ovf_err)
    );
    assign sat_flags[flags_before(N_LAYERS)+o] = count_train && ovf_err;
  end
  flag_count #(.N(N_FLAGS), .W_COUNT(32)) u_overflows (.clk(ap_clk), .rst(ap_rst), .flags(sat_flags), .count(overflows));

  always_ff @(posedge ap_clk) begin
    if (pred_load) y_hat <= g_layer[N_LAYERS-1].y_comb;
  end
endmodule
