// kan_online: the KAN online learner (docs/arithmetic.md), predict-then-update, batch 1.
//
// Ports as in the build's manifest.json, the same as the Vitis HLS top: ap_ctrl_hs block
// handshake, x / y / y_hat as packed words (element i in bits [i*W_ACT +: W_ACT]) with
// ap_vld valids, and train. A sample is accepted in a cycle where ap_start, x_ap_vld,
// y_ap_vld and ap_ready are all high, and that cycle already computes its first stage from
// the ports; y_hat_ap_vld marks its prediction; ap_done marks the first cycle in which its
// update is visible (the next sample is accepted in that cycle at the earliest).
//
// The sample's work is a chain of 2L phases for L layers:
//   F_0, F_1, ..., F_{L-1}  (forward; the error is formed from F_{L-1}'s output)
//   B_{L-1}, ..., B_1       (input gradients, pre-update coefficients)
//   U                       (every layer's update, committed at one clock edge)
// Bit p of PIPE puts a register stage after phase p (p = 0..2L-2). The sample takes
// 1 + popcount(PIPE) clocks and the next one starts after it commits, so
// II = 1 + popcount(PIPE): PIPE = 0 gives II = 1 (one long clock), all ones the shortest clock.
module kan_online #(
    parameter int N_LAYERS = 2,
    parameter logic [16*8-1:0] WIDTHS = {16'd1, 16'd4, 16'd2},  // n_0 at bits [15:0], n_1 next, ...
    parameter int N_IN = 2,
    parameter int N_OUT = 1,
    parameter int N_MAX = 4,  // largest layer width
    parameter int G = 8,
    parameter int K = 3,
    parameter int A = 6,
    parameter int P = 4,
    parameter int DEPTH = 3,
    parameter int W_ACT = 16, parameter int F_ACT = 10, parameter int Q_ACT = 4, parameter int O_ACT = 0,
    parameter int W_COEF = 16, parameter int F_COEF = 10, parameter int Q_COEF = 4, parameter int O_COEF = 0,
    parameter int W_B = 18, parameter int F_B = 17,
    parameter int W_D = 18, parameter int F_D = 16,
    parameter int W_DPHI = 18, parameter int F_DPHI = 12, parameter int Q_DPHI = 4, parameter int O_DPHI = 0,
    parameter int W_ERR = 16, parameter int F_ERR = 10, parameter int Q_ERR = 4, parameter int O_ERR = 0,
    parameter int W_GRAD = 16, parameter int F_GRAD = 10, parameter int Q_GRAD = 4, parameter int O_GRAD = 0,
    parameter int LO_RAW = -1024,
    parameter int INV_H = 1,
    parameter int INV_H_FRAC = -2,
    parameter int U_SHIFT = 6,
    parameter int LR_SHIFT = 4,
    parameter logic [63:0] PIPE = 64'd0,
    parameter MEM_DIR = "."  // folder of basis.mem, dbasis.mem and coef_l<lll>_i<iii>_b<bbb>.mem
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
    output logic                   y_hat_ap_vld
);
  `include "mem_names.svh"

  // stage in which phase p runs: the number of stage boundaries before it
  function automatic int stage_of(input int p);
    stage_of = 0;
    for (int q = 0; q < p; q++) if (PIPE[q]) stage_of = stage_of + 1;
  endfunction

  localparam int N_PHASES = 2 * N_LAYERS;
  localparam int N_STAGES = stage_of(N_PHASES - 1) + 1;
  localparam int W_GMAX = (W_ERR > W_GRAD) ? W_ERR : W_GRAD;
  localparam int ACT_SLOT = N_MAX * W_ACT;
  localparam int G_SLOT = N_MAX * W_GMAX;

  logic accept, busy, last, pred_load, commit;
  logic [N_STAGES-1:0] stage_on;

  online_control #(.N_STAGES(N_STAGES), .PRED_STAGE(stage_of(N_LAYERS - 1))) u_control (
      .clk(ap_clk), .rst(ap_rst), .in_valid(ap_start && x_ap_vld && y_ap_vld),
      .ready(ap_ready), .accept(accept), .busy(busy), .stage_on(stage_on), .pred_load(pred_load),
      .last(last), .pred_valid(y_hat_ap_vld), .done(ap_done)
  );
  assign ap_idle = !busy;

  localparam int W_BADDR = (DEPTH > 1) ? $clog2(DEPTH) : 1;

  // The sample: from the ports in its stage 0 (the cycle it is accepted), from the input
  // registers in its later stages. With one stage the registers are never read.
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

  // layer l's input at slot l, output at slot l+1; gradient at layer l's inputs at slot l
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
    logic [NI-1:0] clamped;
    logic [NI*P*W_B-1:0] bb;
    logic [NI*P*W_D-1:0] db;
    logic [NI*P*W_BADDR-1:0] baddr;
    logic [NI*P-1:0] used;

    // layer 0 needs no derivative ROM: it passes no gradient back
    kan_decode #(
        .N_IN(NI), .G(G), .K(K), .A(A), .P(P), .W_BADDR(W_BADDR), .W_ACT(W_ACT), .W_B(W_B), .W_D(W_D),
        .LO_RAW(LO_RAW), .INV_H(INV_H), .U_SHIFT(U_SHIFT), .HAS_D(l > 0 ? 1 : 0),
        .BASIS_FILE({MEM_DIR, "/basis.mem"}), .DBASIS_FILE(l > 0 ? {MEM_DIR, "/dbasis.mem"} : "")
    ) u_decode (
        .x(acts[l*ACT_SLOT+:NI*W_ACT]), .clamped(clamped), .bb(bb), .db(db), .baddr(baddr), .used(used)
    );

    kan_layer #(
        .N_IN(NI), .N_OUT(NO), .P(P), .DEPTH(DEPTH),
        .W_ACT(W_ACT), .F_ACT(F_ACT), .Q_ACT(Q_ACT), .O_ACT(O_ACT),
        .W_COEF(W_COEF), .F_COEF(F_COEF), .Q_COEF(Q_COEF), .O_COEF(O_COEF),
        .W_B(W_B), .F_B(F_B), .W_D(W_D), .F_D(F_D),
        .W_DPHI(W_DPHI), .F_DPHI(F_DPHI), .Q_DPHI(Q_DPHI), .O_DPHI(O_DPHI),
        .W_G(WG), .F_G(FG),
        .W_GR(W_GRAD), .F_GR(F_GRAD), .Q_GR(Q_GRAD), .O_GR(O_GRAD),
        .INV_H(INV_H), .INV_H_FRAC(INV_H_FRAC), .LR_SHIFT(LR_SHIFT),
        .HAS_BACKWARD(l > 0 ? 1 : 0),
        .REG_F(PIPE[PHASE_F] ? 1 : 0),
        .REG_B((l > 0 && PIPE[PHASE_B]) ? 1 : 0),
        .COEF_PREFIX({MEM_DIR, "/coef_l", decimal3(l)})
    ) u_layer (
        .clk(ap_clk),
        .clamped(clamped), .bb(bb), .db(db), .baddr(baddr), .used(used),
        .y(acts[(l+1)*ACT_SLOT+:NO*W_ACT]),
        .y_comb(y_comb),
        .f_load(stage_on[stage_of(PHASE_F)]),
        .g_out(grads[(l+1)*G_SLOT+:NO*WG]),
        .g_in(g_in),
        .b_load(stage_on[stage_of(PHASE_B)]),
        .commit(commit)
    );
    if (l > 0) begin : g_pass_grad
      assign grads[l*G_SLOT+:NI*W_GRAD] = g_in;
    end
  end

  // §4: the error at the output is the gradient of the last layer
  for (genvar o = 0; o < N_OUT; o++) begin : g_error
    logic signed [W_ACT:0] diff;
    assign diff = (W_ACT + 1)'($signed(acts[N_LAYERS*ACT_SLOT+o*W_ACT+:W_ACT])) - (W_ACT + 1)'($signed(y_now[o*W_ACT+:W_ACT]));
    fixed_cast #(.W_IN(W_ACT + 1), .SHIFT(F_ACT - F_ERR), .W_OUT(W_ERR), .SIGNED(1), .QMODE(Q_ERR), .OMODE(O_ERR)) u_err (
        .v(diff), .q(grads[N_LAYERS*G_SLOT+o*W_ERR+:W_ERR])
    );
  end

  // the prediction register loads the last layer's output at the end of its forward phase
  always_ff @(posedge ap_clk) begin
    if (pred_load) y_hat <= g_layer[N_LAYERS-1].y_comb;
  end
endmodule
