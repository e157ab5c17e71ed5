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
// Bit p of PIPE puts a register after phase p (p = 0..2L-2). Bits of CUTS put registers
// inside the phases of every layer (CUT_* below), and TREE_SPLIT > 0 one every TREE_SPLIT
// levels of each adder tree. A value is ready in the sample's cycle d when d registers lie on
// its path (the inputs are held and the banks unchanged until the commit, pipe_reg.sv), so
// the sample takes N_STAGES = 1 + (registers on its deepest path, to the update's write data)
// clocks. The next one may start N_FRONT cycles before the commit (layer 0's front): II =
// N_STAGES - N_FRONT. With CUTS = TREE_SPLIT = 0, N_STAGES = 1 + popcount(PIPE) and nothing
// overlaps: PIPE = 0 gives II = 1 (one long clock). These counts are computed once, by
// codesign.fpga.pipeline.kan_stage_structure, and passed in as parameters (N_STAGES,
// PRED_STAGE, N_FRONT, READ_IN_FRONT); the module checks that they are consistent, and the
// bench measures them.
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
    parameter int BANK_BRAM = 0,  // 1: the banks are block RAM (kan_bank.sv SYNC_READ), whose read is the read cut
    parameter int W_ACT = 16, parameter int F_ACT = 10, parameter int Q_ACT = 4, parameter int O_ACT = 0,
    parameter int W_COEF = 16, parameter int F_COEF = 10, parameter int Q_COEF = 4, parameter int O_COEF = 0,
    parameter int W_B = 18, parameter int F_B = 17,
    parameter int W_D = 18, parameter int F_D = 16,
    parameter int B_ROW_MAX = 0, parameter int D_ROW_MAX = 0,  // largest |ROM row| sums (0: size sums by the term count)
    parameter int W_DPHI = 18, parameter int F_DPHI = 12, parameter int Q_DPHI = 4, parameter int O_DPHI = 0,
    parameter int W_ERR = 16, parameter int F_ERR = 10, parameter int Q_ERR = 4, parameter int O_ERR = 0,
    parameter int W_GRAD = 16, parameter int F_GRAD = 10, parameter int Q_GRAD = 4, parameter int O_GRAD = 0,
    parameter int LO_RAW = -1024,
    parameter int INV_H = 1,
    parameter int INV_H_FRAC = -2,
    parameter int U_SHIFT = 6,
    parameter int LR_SHIFT = 4,
    parameter int LR_SPAN = 0,  // run-time shifts LR_SHIFT .. LR_SHIFT + LR_SPAN (lr_up); 0: fixed
    parameter logic [63:0] PIPE = 64'd0,
    parameter int CUTS = 0,        // bit positions: CUT_GRID .. CUT_UFULL below
    parameter int TREE_SPLIT = 0,  // adder-tree levels between registers (0: no register inside a tree)
    // FOLD_GRID = 1: a layer after the first reads its grid offset (x - LO_RAW) from the previous layer's
    // rounding chain, unsaturated (kan_grid OFFSET_IN), so it has no scale step of its own and no
    // CUT_SCALE register; only where act_t saturates beyond the grid on both sides and 1/h is a
    // power of two, where the cell, address and clamp are the same (codesign.fpga.pipeline.kan_folds).
    // FUSE_ERROR = 1: the error is formed in the last layer's forward cast (kan_layer), not after it.
    parameter int FOLD_GRID = 0,
    parameter int FUSE_ERROR = 0,
    // The cycle structure of this placement (codesign.fpga.pipeline.StageStructure): stages from
    // acceptance to the commit, the stage at whose end the prediction is ready, the leading stages
    // that the next sample overlaps (layer 0's grid coordinate, basis ROM read and, with
    // CUT_FORWARD, bank read: a pipeline of the input alone, at most half the stages), and 1 when
    // the bank read register is the last of that front (kan_layer READ_IN_FRONT: it forwards the
    // write it overlaps). The defaults are those of PIPE = CUTS = 0.
    parameter int N_STAGES = 1,
    parameter int PRED_STAGE = 0,
    parameter int N_FRONT = 0,
    parameter int READ_IN_FRONT = 0,
    // 1: the products are ECP5 MULT18X18D holding the registers around them (kan_layer ECP5_DSP), set for
    // a family whose synthesis does not (codesign.fpga.placement.Pipeline.dsp)
    parameter int ECP5_DSP = 0,
    // products per multiplier (kan_layer SHARE, rtl/shared_mult.sv; the stage counts above include its cycles)
    parameter int SHARE = 1,
    parameter MEM_DIR = ".",  // folder of basis.mem, dbasis.mem and coef_l<lll>_i<iii>_b<bbb>.mem
    parameter int HOST_PORT = 0  // 1: coef_* reach the banks (the AXI top); 0: they are not built
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
    // the learning-rate shift of the samples accepted from now on is LR_SHIFT + LR_SPAN - lr_up; it
    // must not change while a sample is in flight (the AXI shell changes it only when idle; the
    // bare top ties it to LR_SPAN, the build's LR_SHIFT)
    input  logic [2:0]             lr_up,
    output logic [N_OUT*W_ACT-1:0] y_hat,
    output logic                   y_hat_ap_vld,
    // host access to the coefficients (kan_host.sv; the bare top ties it off): coef_addr is the
    // AXI shell's COEF_ADDR (m [7:0], i [15:8], o [23:16], layer [27:24]). coef_hold (registered,
    // from the shell, which starts no sample while it is high) hands the banks' write port to the
    // host while no sample is in flight; coef_rdata is then the coefficient at coef_addr and a
    // write takes effect; the shell waits for that
    input  logic                   coef_hold,
    input  logic [27:0]            coef_addr,
    input  logic                   coef_we,
    input  logic [W_COEF-1:0]      coef_wdata,
    output logic [W_COEF-1:0]      coef_rdata,
    // overflows: how many of the sample's casts overflowed their type (fixed_cast's overflow, the
    // reference's probe), counted at its last stage: every forward cast, and with train the error,
    // dphi and input-gradient casts of unclamped inputs and the update casts of the window; a
    // sample dropped by a reset counts nothing. Several cycles late (flag_count); the AXI shell
    // adds it up into SATURATIONS. The bare top leaves it open.
    output logic [31:0]            overflows
);
  `include "mem_names.svh"

  `include "kan_cuts.svh"

  function automatic int width_of(input int n);
    width_of = int'(WIDTHS[16*n+:16]);
  endfunction
  // the scale register of layer l: none where the grid offset comes from the previous layer's cast
  function automatic int scale_regs(input int l);
    scale_regs = (l > 0 && FOLD_GRID != 0) ? 0 : CUT_SCALE;
  endfunction
  function automatic int popcount(input logic [63:0] v);
    popcount = 0;
    for (int b = 0; b < 64; b++) popcount = popcount + (v[b] ? 1 : 0);
  endfunction

  // The stage parameters come from the emitter; what must hold between them and the registers
  // is checked here, at elaboration: every phase register is a stage of its own, the prediction
  // comes no earlier than the overlapped front and before the commit, the front is at most half
  // the stages, and only a forwarding bank read can end the front.
  if (N_STAGES < 1 + popcount(PIPE) || PRED_STAGE < N_FRONT || PRED_STAGE >= N_STAGES || N_FRONT < 0
      || 2 * N_FRONT > N_STAGES || READ_IN_FRONT < 0 || READ_IN_FRONT > 1
      || (READ_IN_FRONT != 0 && CUT_READ * CUT_FORWARD == 0) || (BANK_BRAM != 0 && CUT_READ == 0)) begin : g_bad_stages
    $error("kan_online: N_STAGES=%0d PRED_STAGE=%0d N_FRONT=%0d READ_IN_FRONT=%0d BANK_BRAM=%0d do not fit PIPE/CUTS",
           N_STAGES, PRED_STAGE, N_FRONT, READ_IN_FRONT, BANK_BRAM);
  end
  // the overflow flags of a layer (kan_layer's ovf_y, ovf_back, ovf_upd) and where they sit in sat_flags
  function automatic int layer_flags(input int l);
    layer_flags = width_of(l + 1) * (1 + width_of(l) + width_of(l) * P) + width_of(l);
  endfunction
  function automatic int flags_before(input int l);
    flags_before = 0;
    for (int q = 0; q < l; q++) flags_before = flags_before + layer_flags(q);
  endfunction
  localparam int N_FLAGS = flags_before(N_LAYERS) + N_OUT;  // the error casts last
  localparam int W_GMAX = (W_ERR > W_GRAD) ? W_ERR : W_GRAD;
  localparam int ACT_SLOT = N_MAX * W_ACT;
  localparam int G_SLOT = N_MAX * W_GMAX;
  // y - LO_RAW before saturation (FOLD_GRID): wider than any layer's exact forward sum needs
  localparam int W_YG = W_B + W_COEF + 24 + ((F_ACT > F_B + F_COEF) ? F_ACT - F_B - F_COEF : 0);
  localparam int YG_SLOT = N_MAX * W_YG;
  // the first x - LO_RAW that the grid clamps high (u > U_MAX = G 2^A - 1; INV_H = 1 where FOLD_GRID)
  localparam longint ABOVE_OFFSET = (U_SHIFT >= 0) ? (longint'(G) << (A + U_SHIFT))
                                                  : ((longint'(G) << A) + (longint'(1) << -U_SHIFT) - 1) >>> -U_SHIFT;

  logic accept, busy, open_behind, take_ports, last, pred_load, hold_load, commit;
  logic [N_STAGES-1:0] stage_on;

  online_control #(.N_STAGES(N_STAGES), .PRED_STAGE(PRED_STAGE), .N_FRONT(N_FRONT)) u_control (
      .clk(ap_clk), .rst(ap_rst), .in_valid(ap_start && x_ap_vld && y_ap_vld),
      .ready(ap_ready), .accept(accept), .busy(busy), .open_behind(open_behind), .take_ports(take_ports),
      .stage_on(stage_on), .pred_load(pred_load), .last(last), .hold_load(hold_load), .pred_valid(y_hat_ap_vld),
      .done(ap_done)
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
  // x only feeds layer 0's front; with an overlap, a sample accepted behind a busy one reads the ports
  assign x_now = take_ports ? x : x_cur;  // a registered select: the accept is not on this path
  // -y, held beside y (FUSE_ERROR): the fused error adds it in the forward cast's chain, so no adder
  // negates it on the way (the negation is on the port's path into the register)
  logic [N_OUT*(W_ACT+1)-1:0] ny, ny_cur, ny_now;
  for (genvar o = 0; o < N_OUT; o++) begin : g_negate_target
    assign ny[o*(W_ACT+1)+:W_ACT+1] = (W_ACT + 1)'(0) - (W_ACT + 1)'($signed(y[o*W_ACT+:W_ACT]));
  end
  always_ff @(posedge ap_clk) begin
    if (accept) ny_cur <= ny;
  end
  if (N_FRONT == 0) begin : g_no_overlap
    assign y_now = busy ? y_cur : y;
    assign ny_now = busy ? ny_cur : ny;
    assign train_now = busy ? train_cur : train;
  end else begin : g_overlap
    // the target and train flag follow the sample out of the front, so the next accept cannot overwrite them
    logic [N_OUT*W_ACT-1:0] y_back;
    logic [N_OUT*(W_ACT+1)-1:0] ny_back;
    logic train_back;
    always_ff @(posedge ap_clk) begin
      if (hold_load) begin
        y_back <= accept ? y : y_cur;
        ny_back <= accept ? ny : ny_cur;
        train_back <= accept ? train : train_cur;
      end
    end
    assign y_now = y_back;
    assign ny_now = ny_back;
    assign train_now = train_back;
  end
  assign commit = last && train_now && !ap_rst;

  // layer l's input at slot l, output at slot l+1; gradient at layer l's inputs at slot l
  // one slot per layer; split_var lets Verilator see the slots as separate signals (one bus
  // through every layer is otherwise a false combinational loop to its scheduler)
  logic [(N_LAYERS+1)*ACT_SLOT-1:0] acts /*verilator split_var*/;
  logic [(N_LAYERS+1)*G_SLOT-1:0] grads /*verilator split_var*/;
  // ECP5_DSP: what the register in front of each gradient slot loads (the error cut, a layer's REG_B)
  logic [(N_LAYERS+1)*G_SLOT-1:0] grads_pre /*verilator split_var*/;
  logic [(N_LAYERS+1)*YG_SLOT-1:0] ygs /*verilator split_var*/;  // layer l's grid offsets at slot l (FOLD_GRID)
  assign ygs[0+:YG_SLOT] = '0;
  assign acts[0+:N_IN*W_ACT] = x_now;
  logic [N_FLAGS-1:0] sat_flags /*verilator split_var*/;  // the overflows counted in this cycle
  logic count_forward, count_train;  // the sample ends its last stage: its forward casts, and its backward ones
  assign count_forward = last && !ap_rst;
  assign count_train = last && train_now && !ap_rst;
  logic [N_LAYERS*W_COEF-1:0] coef_rdata_l;  // layer l's host read (0 unless the address names it)
  logic coef_we_idle, host_mode;
  assign host_mode = coef_hold && !busy;  // registers only: no update is written while it is high
  assign coef_we_idle = coef_we && host_mode && !accept && !ap_rst;

  for (genvar l = 0; l < N_LAYERS; l++) begin : g_layer
    localparam int NI = WIDTHS[16*l+:16];
    localparam int NO = WIDTHS[16*(l+1)+:16];
    localparam int IS_LAST = (l == N_LAYERS - 1) ? 1 : 0;
    localparam int WG = (IS_LAST != 0) ? W_ERR : W_GRAD;
    localparam int FG = (IS_LAST != 0) ? F_ERR : F_GRAD;
    // the gradient at this layer's outputs is a plain register of grads_pre: the error cut, or REG_B of layer l+1
    localparam int G_OUT_REG = (IS_LAST != 0) ? CUT_ERR : (PIPE[2 * N_LAYERS - 2 - l] ? 1 : 0);
    localparam int PHASE_F = l;
    localparam int PHASE_B = 2 * N_LAYERS - 1 - l;
    localparam int FOLDED = (l > 0 && FOLD_GRID != 0) ? 1 : 0;  // the grid offset comes from layer l-1's cast
    localparam int W_XIN = (FOLDED != 0) ? W_YG : W_ACT;
    logic [NI*W_XIN-1:0] x_in;
    if (FOLDED != 0) begin : g_x_offset
      assign x_in = ygs[l*YG_SLOT+:NI*W_YG];
    end else begin : g_x_act
      assign x_in = acts[l*ACT_SLOT+:NI*W_ACT];
    end
    logic [NO*W_ERR-1:0] err_l;
    logic [NO-1:0] ovf_err_l;
    logic [NI*W_GRAD-1:0] g_in;
    logic [NI*W_GRAD-1:0] g_in_pre;
    logic [NO*W_ACT-1:0] y_comb;
    logic [NI-1:0] clamped;
    logic [NI*P*W_B-1:0] bb;
    logic [NI*P*W_D-1:0] db;
    logic [NI*P*W_B-1:0] bb_pre;
    logic [NI*P*W_D-1:0] db_pre;
    logic [NI*P*W_BADDR-1:0] baddr;
    logic [NI*P-1:0] used;
    logic [NO-1:0] ovf_y;
    logic [NO*NI+NI-1:0] ovf_back;
    logic [NI*P*NO-1:0] ovf_upd;
    // the target's negation reaches the last layer only (there NO == N_OUT); a select of ny_now in a
    // layer that is not the last would be out of range, which a strict elaborator refuses even unused
    logic [NO*(W_ACT+1)-1:0] neg_target_l;
    if (IS_LAST != 0) begin : g_target
      assign neg_target_l = ny_now;
    end else begin : g_no_target
      assign neg_target_l = '0;
    end

    // layer 0 needs no derivative ROM: it passes no gradient back
    kan_decode #(
        .N_IN(NI), .G(G), .K(K), .A(A), .P(P), .W_BADDR(W_BADDR), .W_ACT(W_ACT), .W_B(W_B), .W_D(W_D),
        .LO_RAW(LO_RAW), .INV_H(INV_H), .U_SHIFT(U_SHIFT), .HAS_D(l > 0 ? 1 : 0),
        .CUT_SCALE(scale_regs(l)), .CUT_GRID(CUT_GRID), .CUT_DECODE(CUT_DECODE), .CUT_ROWS(CUT_ROWS),
        .OFFSET_IN(FOLDED), .W_X(W_XIN),
        .BASIS_FILE({MEM_DIR, "/basis.mem"}), .DBASIS_FILE(l > 0 ? {MEM_DIR, "/dbasis.mem"} : "")
    ) u_decode (
        .clk(ap_clk), .x(x_in), .clamped(clamped), .bb(bb), .db(db), .baddr(baddr), .used(used), .bb_pre(bb_pre), .db_pre(db_pre)
    );

    logic [W_BADDR-1:0] host_addr;
    logic [NI*P-1:0] host_we;
    logic [NO*W_COEF-1:0] host_wdata;
    logic [NI*P*NO*W_COEF-1:0] host_rdata;
    kan_host #(.N_IN(NI), .N_OUT(NO), .P(P), .DEPTH(DEPTH), .N_COEF(G + K), .W_COEF(W_COEF)) u_host (
        .clk(ap_clk), .sel(coef_addr[27:24] == 4'(l)), .o(coef_addr[23:16]), .i(coef_addr[15:8]), .m(coef_addr[7:0]),
        .we(coef_we_idle), .wdata(coef_wdata), .rdata(coef_rdata_l[l*W_COEF+:W_COEF]),
        .bank_addr(host_addr), .bank_we(host_we), .bank_wdata(host_wdata), .bank_rdata(host_rdata)
    );
    kan_layer #(
        .N_IN(NI), .N_OUT(NO), .P(P), .DEPTH(DEPTH), .BANK_BRAM(BANK_BRAM),
        .W_ACT(W_ACT), .F_ACT(F_ACT), .Q_ACT(Q_ACT), .O_ACT(O_ACT),
        .W_COEF(W_COEF), .F_COEF(F_COEF), .Q_COEF(Q_COEF), .O_COEF(O_COEF),
        .W_B(W_B), .F_B(F_B), .W_D(W_D), .F_D(F_D), .B_ROW_MAX(B_ROW_MAX), .D_ROW_MAX(D_ROW_MAX),
        .W_DPHI(W_DPHI), .F_DPHI(F_DPHI), .Q_DPHI(Q_DPHI), .O_DPHI(O_DPHI),
        .W_G(WG), .F_G(FG),
        .W_GR(W_GRAD), .F_GR(F_GRAD), .Q_GR(Q_GRAD), .O_GR(O_GRAD),
        .INV_H(INV_H), .INV_H_FRAC(INV_H_FRAC), .LR_SHIFT(LR_SHIFT), .LR_SPAN(LR_SPAN),
        .HAS_BACKWARD(l > 0 ? 1 : 0),
        .REG_F(PIPE[PHASE_F] ? 1 : 0),
        .REG_B((l > 0 && PIPE[PHASE_B]) ? 1 : 0),
        .CUTS(CUTS), .TREE_SPLIT(TREE_SPLIT), .READ_IN_FRONT(l == 0 ? READ_IN_FRONT : 0),
        .COEF_PREFIX({MEM_DIR, "/coef_l", decimal3(l)}), .HOST_PORT(HOST_PORT),
        .GRID_NEXT((FOLD_GRID != 0 && IS_LAST == 0) ? 1 : 0), .LO_NEXT(LO_RAW), .W_YG(W_YG), .ABOVE_NEXT(ABOVE_OFFSET),
        .FUSE_ERROR((FUSE_ERROR != 0 && IS_LAST != 0) ? 1 : 0),
        .W_ERR(W_ERR), .F_ERR(F_ERR), .Q_ERR(Q_ERR), .O_ERR(O_ERR), .TARGET_REG((PRED_STAGE > N_FRONT) ? 1 : 0),
        .ECP5_DSP(ECP5_DSP), .SHARE(SHARE), .G_OUT_REG(G_OUT_REG)
    ) u_layer (
        .clk(ap_clk),
        .clamped(clamped), .bb(bb), .db(db), .baddr(baddr), .used(used), .bb_pre(bb_pre), .db_pre(db_pre),
        .y(acts[(l+1)*ACT_SLOT+:NO*W_ACT]),
        .y_comb(y_comb),
        .y_grid(ygs[(l+1)*YG_SLOT+:NO*W_YG]),
        .neg_target(neg_target_l),
        .err(err_l),
        .ovf_err(ovf_err_l),
        .g_out(grads[(l+1)*G_SLOT+:NO*WG]),
        .g_out_pre(grads_pre[(l+1)*G_SLOT+:NO*WG]),
        .g_in(g_in),
        .g_in_pre(g_in_pre),
        .commit(commit),
        .lr_up(lr_up),
        .hold(hold_load),
        .host_mode(host_mode), .host_addr(host_addr), .host_we(host_we), .host_wdata(host_wdata), .host_rdata(host_rdata),
        .ovf_y(ovf_y), .ovf_back(ovf_back), .ovf_upd(ovf_upd)
    );
    // At the last stage every value of the sample is still its own (the inputs and banks are held
    // until the commit, and a sample accepted behind it is still in the front), so each cast is
    // counted once per sample, whatever the registers, II and overlap.
    assign sat_flags[flags_before(l)+:layer_flags(l)] =
        {{(NI*P*NO){count_train}} & ovf_upd, {(NO*NI+NI){count_train}} & ovf_back, {NO{count_forward}} & ovf_y};
    if (l > 0) begin : g_pass_grad
      assign grads[l*G_SLOT+:NI*W_GRAD] = g_in;
      assign grads_pre[l*G_SLOT+:NI*W_GRAD] = g_in_pre;
    end
  end

  always_comb begin
    coef_rdata = '0;
    for (int l = 0; l < N_LAYERS; l++) coef_rdata = coef_rdata | coef_rdata_l[l*W_COEF+:W_COEF];
  end

  // §4: the error at the output is the gradient of the last layer
  logic [N_OUT*W_ERR-1:0] err;
  if (FUSE_ERROR != 0) begin : g_fused_error  // formed in the last layer's forward cast
    assign err = g_layer[N_LAYERS-1].err_l;
    for (genvar o = 0; o < N_OUT; o++) begin : g_error
      assign sat_flags[flags_before(N_LAYERS)+o] = count_train && g_layer[N_LAYERS-1].ovf_err_l[o];
    end
  end else begin : output_error
    for (genvar o = 0; o < N_OUT; o++) begin : g_error
      logic signed [W_ACT:0] diff;
      assign diff = (W_ACT + 1)'($signed(acts[N_LAYERS*ACT_SLOT+o*W_ACT+:W_ACT])) - (W_ACT + 1)'($signed(y_now[o*W_ACT+:W_ACT]));
      logic ovf_err;
      fixed_cast #(.W_IN(W_ACT + 1), .SHIFT(F_ACT - F_ERR), .W_OUT(W_ERR), .SIGNED(1), .QMODE(Q_ERR), .OMODE(O_ERR), .CUT(CUT_ROUND)) u_err (
          .clk(ap_clk), .v(diff), .q(err[o*W_ERR+:W_ERR]), .overflow(ovf_err), .negative(), .neg_offset(1'b0), .minus()
      );
      assign sat_flags[flags_before(N_LAYERS)+o] = count_train && ovf_err;
    end
  end
  flag_count #(.N(N_FLAGS), .W_COUNT(32)) u_overflows (.clk(ap_clk), .rst(ap_rst), .flags(sat_flags), .count(overflows));
  pipe_reg #(.W(N_OUT * W_ERR), .ON(CUT_ERR)) u_cut_err (.clk(ap_clk), .d(err), .q(grads[N_LAYERS*G_SLOT+:N_OUT*W_ERR]));
  assign grads_pre[N_LAYERS*G_SLOT+:N_OUT*W_ERR] = err;

  // the prediction register loads the last layer's output at the end of its forward phase
  always_ff @(posedge ap_clk) begin
    if (pred_load) y_hat <= g_layer[N_LAYERS-1].y_comb;
  end
endmodule
