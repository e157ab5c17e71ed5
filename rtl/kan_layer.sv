// kan_layer: one KAN layer of the online learner: forward pass, input gradient, sparse update
// (docs/arithmetic.md §2-§6), every edge in parallel.
//
// Three phases use this module, in this order within a sample (kan_online sequences them):
//   F  forward: bank reads at the decoded addresses (kan_decode), y = cast_act(sum B*c),
//      dphi = cast_dphi(sum D*c)
//   B  backward (HAS_BACKWARD): g_in = cast_grad(sum_o g_out * dphi * inv_h), 0 where clamped
//   U  update, written when `commit` is high: c <- cast_coef(c - 2^-s * g_out * B)
// The blocks carry the names of the operations (docs/arithmetic.md §10): read_window (the bank
// reads), layer_forward (F, with output_error where FUSE_ERROR), layer_input_gradient (B, from
// the derivative sums g_dphi of F), layer_update (U).
// Pipeline registers (pipe_reg, no enable): REG_F after F (y, dphi), REG_B after B (g_in), and
// inside the phases the cuts of CUTS (bit names in kan_cuts.svh): the bank read (and, with block-RAM
// banks, the word after the mux over their RAMs), the products,
// the adder trees (every TREE_SPLIT levels, and before the cast), the backward products and
// sum, the update's product and difference. kan_online holds the sample's inputs and the banks
// do not change until the commit, so a value is right once every register on its path has
// loaded it, and kan_online waits for the deepest path (its cycle count C) before committing.
//
// Coefficient banks: see kan_bank.sv. The window cell..cell+K of input i is spread over the P
// banks (P = the power of two >= K+1); bank b holds window position j = (b - cell) mod P,
// unused when j > K. The basis values are rotated into bank order, never the coefficients.
//
// ECP5_DSP = 1 (ECP5, whose synthesis leaves a DSP's registers unused): every product is a dsp_mult whose
// MULT18X18D holds the product's register (the cut after it) and the registers in front of it (the basis
// rows or decode register, the bank read register, the hold registers after F), fed the values those
// registers load (bb_pre, db_pre, the bank read): the same cycles, with the routes to and from the DSP
// row each in a stage of its own. The fabric registers stay for their other readers.
// Otherwise each product site (forward B*c and D*c, backward g*dphi, update g*B) is one shared_mult over
// the layer's products of that site, which shares its multipliers when SHARE > 1.
`include "dsp_mult.svh"

module kan_layer #(
    parameter int N_IN = 2,
    parameter int N_OUT = 4,
    parameter int P = 4,
    parameter int DEPTH = 3,
    parameter int BANK_BRAM = 0,  // 1: block-RAM banks, registered inside kan_bank (the read cut; CUT_READ must be 1)
    // act_t (inputs, outputs), coef_t, basis_t (unsigned), dbasis_t, dphi_t
    parameter int W_ACT = 16, parameter int F_ACT = 10, parameter int Q_ACT = 4, parameter int O_ACT = 0,
    parameter int W_COEF = 16, parameter int F_COEF = 10, parameter int Q_COEF = 4, parameter int O_COEF = 0,
    parameter int W_B = 18, parameter int F_B = 17,
    parameter int W_D = 18, parameter int F_D = 16,
    // The largest sum of |values| over one basis / derivative ROM address (raw; 0: unknown). A
    // forward sum over an input is at most that times the largest |coefficient|, which bounds the
    // exact sums far below the term-count bound (B-splines sum to one), so the casts after them
    // check fewer bits for overflow.
    parameter int B_ROW_MAX = 0, parameter int D_ROW_MAX = 0,
    parameter int W_DPHI = 18, parameter int F_DPHI = 12, parameter int Q_DPHI = 4, parameter int O_DPHI = 0,
    // type of the gradient at this layer's outputs (err_t for the last layer, grad_t otherwise)
    parameter int W_G = 16, parameter int F_G = 10,
    // grad_t: type of the gradient this layer passes back to its inputs
    parameter int W_GR = 16, parameter int F_GR = 10, parameter int Q_GR = 4, parameter int O_GR = 0,
    // 1/h (KANSpec.grid_constants()): the backward pass multiplies by it
    parameter int INV_H = 1,
    parameter int INV_H_FRAC = -2,
    parameter int LR_SHIFT = 4,
    // run-time shifts LR_SHIFT .. LR_SHIFT + LR_SPAN (lr_up below); 0: the shift is LR_SHIFT, no shifter
    parameter int LR_SPAN = 0,
    parameter int HAS_BACKWARD = 1,
    parameter int REG_F = 0,
    parameter int REG_B = 0,
    parameter int CUTS = 0,        // the CUT_* bits of kan_cuts.svh
    parameter int TREE_SPLIT = 0,  // adder-tree levels between registers (0: none)
    // 1: the bank read register is the last register of the front that the next sample overlaps
    // (kan_online, layer 0): the read forwards this sample's write, and the decoded inputs the
    // rest of the layer reads are held from `hold` on, since the live ones move to the next sample
    parameter int READ_IN_FRONT = 0,
    parameter COEF_PREFIX = "",  // bank (i, b) loads COEF_PREFIX_i<iii>_b<bbb>.mem
    parameter int HOST_PORT = 0,  // 1: the banks' host port (kan_bank.sv) is built
    // GRID_NEXT = 1: y_grid is, per forward output, {above, y - LO_NEXT} (W_YG bits, held after F like
    // y): the output less the next layer's grid start, rounded as act_t rounds but not saturated, and
    // whether it is at or past ABOVE_NEXT, the first offset the next grid clamps high (kan_grid OFFSET_IN)
    parameter int GRID_NEXT = 0, parameter int LO_NEXT = 0, parameter int W_YG = 2,
    parameter longint ABOVE_NEXT = 0,
    // FUSE_ERROR = 1 (the last layer): err = cast_err(y - target) straight from the forward sums, in the
    // forward cast's own stage (held after F when REG_F); needs F_ERR >= F_ACT and a saturating act_t
    parameter int FUSE_ERROR = 0,
    parameter int W_ERR = 16, parameter int F_ERR = 10, parameter int Q_ERR = 4, parameter int O_ERR = 0,
    // 1: the errors of the act limits (functions of the target alone) are registered, off the error's stage;
    // kan_online sets it where the target is held at least one cycle before the forward output is ready
    parameter int TARGET_REG = 0,
    parameter int ECP5_DSP = 0,  // 1: the products are MULT18X18D with their own registers (above)
    // products per multiplier (shared_mult.sv; fabric products only, ECP5_DSP = 0): a product site's register is
    // then SHARE cycles deep, whatever its cut
    parameter int SHARE = 1,
    parameter int G_OUT_REG = 0,  // 1: g_out is a plain register of g_out_pre (kan_online: the error cut, REG_B)
    parameter int W_BADDR = (DEPTH > 1) ? $clog2(DEPTH) : 1  // derived, do not set
) (
    input  logic                  clk,
    // the decoded inputs (kan_decode)
    input  logic [N_IN-1:0]           clamped,
    input  logic [N_IN*P*W_B-1:0]     bb,
    input  logic [N_IN*P*W_D-1:0]     db,
    input  logic [N_IN*P*W_BADDR-1:0] baddr,
    input  logic [N_IN*P-1:0]         used,
    // what the register in front of bb / db loads (kan_decode; read only when ECP5_DSP)
    input  logic [N_IN*P*W_B-1:0]     bb_pre,
    input  logic [N_IN*P*W_D-1:0]     db_pre,
    output logic [N_OUT*W_ACT-1:0] y,       // held after F when REG_F
    output logic [N_OUT*W_ACT-1:0] y_comb,  // before the REG_F register
    output logic [N_OUT*W_YG-1:0]  y_grid,  // GRID_NEXT: y - LO_NEXT before saturation, held after F when REG_F
    input  logic [N_OUT*(W_ACT+1)-1:0] neg_target,  // FUSE_ERROR: -target, held by the caller
    output logic [N_OUT*W_ERR-1:0] err,     // FUSE_ERROR: the error, held after F when REG_F
    output logic [N_OUT-1:0]       ovf_err, // FUSE_ERROR: the error cast overflowed (as ovf_y)
    input  logic [N_OUT*W_G-1:0]  g_out,
    input  logic [N_OUT*W_G-1:0]  g_out_pre,  // what the register in front of g_out loads (read only when ECP5_DSP)
    output logic [N_IN*W_GR-1:0]  g_in_pre,   // g_in before REG_B
    output logic [N_IN*W_GR-1:0]  g_in,
    input  logic                  commit,
    // the sample's shift is LR_SHIFT + LR_SPAN - lr_up (held while a sample is in flight; read only with LR_SPAN > 0)
    input  logic [2:0]            lr_up,
    input  logic                  hold,    // READ_IN_FRONT: the sample's decoded inputs are read at this edge
    // host access to the banks (kan_host.sv): one address for all banks, a write enable per bank
    input  logic                      host_mode,
    input  logic [W_BADDR-1:0]        host_addr,
    input  logic [N_IN*P-1:0]         host_we,
    input  logic [N_OUT*W_COEF-1:0]   host_wdata,
    output logic [N_IN*P*N_OUT*W_COEF-1:0] host_rdata,
    // the casts' overflow flags (fixed_cast), each 1 only where the reference casts: the forward
    // output o at bit o; dphi of edge (o, i) at bit o*N_IN+i and g_in[i] at bit N_OUT*N_IN+i, both
    // 0 for a clamped input (the reference skips them) and without HAS_BACKWARD; the update of
    // (input i, bank b, output o) at bit (i*P+b)*N_OUT+o, 0 for a bank outside the window. Right
    // for the sample from the cycle its values are (kan_online samples them at the last stage).
    output logic [N_OUT-1:0]          ovf_y,
    output logic [N_OUT*N_IN+N_IN-1:0] ovf_back,
    output logic [N_IN*P*N_OUT-1:0]   ovf_upd
);
  localparam int W_WORD = N_OUT * W_COEF;
  localparam int W_INV = $clog2(INV_H + 1);
  // exact intermediates (docs/arithmetic.md §9), sized so that no sum can overflow
  localparam int W_BPROD = W_B + 1 + W_COEF;
  localparam int W_ACC_TERMS = W_BPROD + $clog2(N_IN * P) + 1;
  localparam int W_ACC_RANGE = $clog2(N_IN * B_ROW_MAX) + W_COEF;  // |sum| <= N_IN B_ROW_MAX 2^(W_COEF-1)
  localparam int W_ACC = (B_ROW_MAX > 0 && W_ACC_RANGE < W_ACC_TERMS) ? W_ACC_RANGE : W_ACC_TERMS;
  localparam int W_DPROD = W_D + W_COEF;
  localparam int W_DACC_TERMS = W_DPROD + $clog2(P) + 1;
  localparam int W_DACC_RANGE = $clog2(D_ROW_MAX) + W_COEF;
  localparam int W_DACC = (D_ROW_MAX > 0 && W_DACC_RANGE < W_DACC_TERMS) ? W_DACC_RANGE : W_DACC_TERMS;
  localparam int W_SPROD = W_G + W_DPHI;
  localparam int W_S = W_SPROD + $clog2(N_OUT) + 1;
  localparam int W_T = W_S + W_INV + 1;
  // The update's exact value at the fraction bits of the largest shift: every shift of the range
  // gives the same value there, and so the same cast (docs/arithmetic.md §6); a smaller shift moves
  // the product up by lr_up bits.
  localparam int F_DELTA = F_G + F_B + LR_SHIFT + LR_SPAN;
  localparam int F_FULL = (F_COEF > F_DELTA) ? F_COEF : F_DELTA;
  localparam int W_GB = W_G + W_B + 1;
  localparam int W_FULL_C = W_COEF + F_FULL - F_COEF;
  localparam int W_FULL_D = W_GB + F_FULL - F_DELTA + LR_SPAN;
  localparam int W_FULL = ((W_FULL_C > W_FULL_D) ? W_FULL_C : W_FULL_D) + 2;

  `include "kan_cuts.svh"
  // ECP5_DSP: the registers in front of the forward products that their DSP holds: the rows (or decode)
  // register and the bank read register, unless the read is in the overlapped front (its select and
  // hold sit after those registers)
  // (nextpnr times a MULT18X18D with one input register as if it had none, so both or neither)
  localparam int DSP_REG_ROWS = (ECP5_DSP != 0 && READ_IN_FRONT == 0 && (CUT_ROWS != 0 || CUT_DECODE != 0)
                                 && BANK_BRAM == 0 && CUT_READ != 0) ? 1 : 0;
  localparam int DSP_REG_READ = DSP_REG_ROWS;
  // the update's and the backward products' inputs: REG_F's hold and the register in front of g_out
  localparam int DSP_REG_HOLD = (ECP5_DSP != 0 && REG_F != 0 && G_OUT_REG != 0) ? 1 : 0;

  `include "mem_names.svh"

  logic [N_IN*P*W_WORD-1:0] rdata, rdata_q, rdata_f, rdata_r;  // bank (i, b) at [(i*P+b)*W_WORD +: W_WORD]

  // the decoded inputs as this sample's forward products and update read them
  logic [N_IN-1:0] clamped_s;
  logic [N_IN*P*W_B-1:0] bb_s;
  logic [N_IN*P*W_BADDR-1:0] baddr_s;
  logic [N_IN*P-1:0] used_s;
  if (READ_IN_FRONT != 0) begin : g_hold_decoded
    always_ff @(posedge clk) begin
      if (hold) {clamped_s, bb_s, baddr_s, used_s} <= {clamped, bb, baddr, used};
    end
  end else begin : g_live_decoded
    assign {clamped_s, bb_s, baddr_s, used_s} = {clamped, bb, baddr, used};
  end

  // ---------------------------------------------------------------- banks
  logic [N_IN*P*W_WORD-1:0] wdata;
  // what u_reg_hold (below, after F) holds for B and U; declared before the banks, whose write uses it
  logic [N_IN*P*W_B-1:0] bb_h;
  logic [N_IN*P*W_BADDR-1:0] baddr_h;
  logic [N_IN*P-1:0] used_h;
  logic [N_IN-1:0] clamped_h;
  logic [N_IN*P*W_WORD-1:0] rdata_h;
  for (genvar i = 0; i < N_IN; i++) begin : g_input
    for (genvar b = 0; b < P; b++) begin : g_bank
      kan_bank #(
          .W_WORD(W_WORD), .DEPTH(DEPTH), .W_ADDR(W_BADDR), .HOST_PORT(HOST_PORT), .SYNC_READ(BANK_BRAM),
          .INIT_FILE((COEF_PREFIX == "") ? "" : {COEF_PREFIX, "_i", decimal3(i), "_b", decimal3(b), ".mem"})
      ) u_bank (
          .clk(clk),
          .raddr(baddr[(i*P+b)*W_BADDR+:W_BADDR]),
          .rdata(rdata[(i*P+b)*W_WORD+:W_WORD]),
          .we(commit && used_h[i*P+b]),
          .waddr(baddr_h[(i*P+b)*W_BADDR+:W_BADDR]),
          .wdata(wdata[(i*P+b)*W_WORD+:W_WORD]),
          .host_mode(host_mode), .host_addr(host_addr), .host_rdata(host_rdata[(i*P+b)*W_WORD+:W_WORD]),
          .host_we(host_we[i*P+b]), .host_wdata(host_wdata)
      );
    end
  end
  // a registered read: the forward products and the update read the held words. With the read in
  // the overlapped front, the next sample's read is registered at this sample's commit edge and
  // so holds the word from before the write for one cycle: a hit (a write to the address it
  // reads) and the written word are registered at that edge and select the word for that cycle;
  // from the next cycle on the read register holds the new word itself. The select sits after
  // the register (not before it, where Yosys would fold it into the RAM as a transparent read
  // port and move the register in front of the RAM, out of the DSP's input register).
  // Block-RAM banks register the read themselves (the same edge, the same read-before-write word).
  // Behind them, CUT_BRAM_OUT registers the word after the mux over the RAMs of a deep bank (rdata_f to
  // rdata_r), so that mux and the products' route are not one path. It sits after the forwarding select:
  // the hit is valid in the cycle after the commit edge, exactly when this register loads, and from then
  // on the read register holds the written word itself.
  pipe_reg #(.W(N_IN * P * W_WORD), .ON((BANK_BRAM != 0) ? 0 : CUT_READ)) u_cut_read (.clk(clk), .d(rdata), .q(rdata_q));
  for (genvar e = 0; e < N_IN * P; e++) begin : read_window
    if (READ_IN_FRONT != 0) begin : g_fwd
      logic hit;
      logic [W_WORD-1:0] written;
      always_ff @(posedge clk) begin
        hit <= commit && used_h[e] && baddr_h[e*W_BADDR+:W_BADDR] == baddr[e*W_BADDR+:W_BADDR];
        written <= wdata[e*W_WORD+:W_WORD];
      end
      assign rdata_f[e*W_WORD+:W_WORD] = hit ? written : rdata_q[e*W_WORD+:W_WORD];
    end else begin : g_no_fwd
      assign rdata_f[e*W_WORD+:W_WORD] = rdata_q[e*W_WORD+:W_WORD];
    end
  end
  pipe_reg #(.W(N_IN * P * W_WORD), .ON((BANK_BRAM != 0) ? CUT_BRAM_OUT : 0)) u_cut_bram_out (
      .clk(clk), .d(rdata_f), .q(rdata_r)
  );

  // the forward sites off the DSP primitives: products (o, i, b) at [((o*N_IN+i)*P+b)*W +: W], registered
  // by CUT_MULT (or shared)
  logic [N_OUT*N_IN*P*W_BPROD-1:0] bprod_site;
  logic [N_OUT*N_IN*P*W_DPROD-1:0] dprod_site;
  if (ECP5_DSP == 0) begin : g_forward_site
    logic [N_OUT*N_IN*P*W_B-1:0] site_b;
    logic [N_OUT*N_IN*P*W_D-1:0] site_d;
    logic [N_OUT*N_IN*P*W_COEF-1:0] site_c;
    for (genvar o = 0; o < N_OUT; o++) begin : g_site_o
      for (genvar e = 0; e < N_IN * P; e++) begin : g_site_e
        assign site_b[(o*N_IN*P+e)*W_B+:W_B] = bb_s[e*W_B+:W_B];
        assign site_d[(o*N_IN*P+e)*W_D+:W_D] = db[e*W_D+:W_D];
        assign site_c[(o*N_IN*P+e)*W_COEF+:W_COEF] = rdata_r[e*W_WORD+o*W_COEF+:W_COEF];
      end
    end
    shared_mult #(
        .N(N_OUT * N_IN * P), .W_A(W_B), .A_SIGNED(0), .W_B(W_COEF), .W_P(W_BPROD),
        .SHARE(SHARE), .CUT(CUT_MULT), .IN_REG(CUT_SHARED_IN)
    ) u_bprod (.clk(clk), .a(site_b), .b(site_c), .p(bprod_site));
    if (HAS_BACKWARD != 0) begin : g_dprod
      shared_mult #(
          .N(N_OUT * N_IN * P), .W_A(W_D), .A_SIGNED(1), .W_B(W_COEF), .W_P(W_DPROD),
        .SHARE(SHARE), .CUT(CUT_MULT), .IN_REG(CUT_SHARED_IN)
      ) u_dprod (.clk(clk), .a(site_d), .b(site_c), .p(dprod_site));
    end else begin : g_no_dprod
      assign dprod_site = '0;
      /* verilator lint_off UNUSEDSIGNAL */
      logic unused_site_d;
      assign unused_site_d = ^site_d;
      /* verilator lint_on UNUSEDSIGNAL */
    end
  end else begin : g_forward_dsp
    assign bprod_site = '0;
    assign dprod_site = '0;
  end

  // ---------------------------------------------------------------- F: per output (forward sums)
  logic [N_OUT*W_ACT-1:0] y_now;
  logic [N_OUT*W_YG-1:0] y_grid_now;
  logic [N_OUT*W_ERR-1:0] err_now;
  assign y_comb = y_now;
  logic [N_OUT*N_IN*W_DPHI-1:0] dphi, dphi_h;  // edge (o, i) at [(o*N_IN+i)*W_DPHI +: W_DPHI]
  logic [N_OUT*N_IN-1:0] ovf_dphi;
  for (genvar o = 0; o < N_OUT; o++) begin : layer_forward
    logic [N_IN*P*W_BPROD-1:0] prod, prod_r;  // one product per (input, bank)
    logic signed [W_ACC-1:0] acc, acc_r;
    for (genvar e = 0; e < N_IN * P; e++) begin : g_prod
      if (ECP5_DSP != 0) begin : g_dsp
        dsp_mult #(
            .W_A(W_B), .A_SIGNED(0), .W_B(W_COEF), .W_P(W_BPROD), .REG_A(DSP_REG_ROWS), .REG_B(DSP_REG_READ), .REG_P(CUT_MULT), .ECP5(1)
        ) u_mult (
            .clk(clk), .a((DSP_REG_ROWS != 0) ? bb_pre[e*W_B+:W_B] : bb_s[e*W_B+:W_B]),
            .b((DSP_REG_READ != 0) ? rdata[e*W_WORD+o*W_COEF+:W_COEF] : rdata_r[e*W_WORD+o*W_COEF+:W_COEF]),
            .p(prod[e*W_BPROD+:W_BPROD])
        );
      end else begin : g_fabric
        assign prod[e*W_BPROD+:W_BPROD] = bprod_site[(o*N_IN*P+e)*W_BPROD+:W_BPROD];
      end
    end
    assign prod_r = prod;  // registered in the DSP or in the site
    adder_tree #(.N(N_IN * P), .W_IN(W_BPROD), .W_SUM(W_ACC), .SPLIT(TREE_SPLIT)) u_acc (
        .clk(clk), .terms(prod_r), .sum(acc)
    );
    pipe_reg #(.W(W_ACC), .ON(CUT_SUM)) u_cut_acc (.clk(clk), .d(acc), .q(acc_r));
    // The offset that rides in the cast's rounding chain: the next layer's grid start, or the target
    logic signed [W_ACT:0] neg_offset;
    logic signed [W_YG-1:0] minus;
    logic negative;
    logic [2:0] fit_terms;
    assign neg_offset = (FUSE_ERROR != 0) ? $signed(neg_target[o*(W_ACT+1)+:W_ACT+1]) : (W_ACT + 1)'(-LO_NEXT);
    fixed_cast #(
        .W_IN(W_ACC), .SHIFT(F_B + F_COEF - F_ACT), .W_OUT(W_ACT), .SIGNED(1), .QMODE(Q_ACT), .OMODE(O_ACT), .CUT(CUT_ROUND),
        .W_NOFF(W_ACT + 1), .W_MINUS(W_YG)
    ) u_y (
        .clk(clk), .v(acc_r), .q(y_now[o*W_ACT+:W_ACT]), .overflow(ovf_y[o]), .negative(negative),
        .fit_terms(fit_terms), .neg_offset(neg_offset), .minus(minus)
    );
    // above: the sign of the same chain with the threshold in the offset, beside the first (no comparison after it)
    logic signed [W_YG-1:0] minus_above;
    fixed_cast #(
        .W_IN(W_ACC), .SHIFT(F_B + F_COEF - F_ACT), .W_OUT(W_ACT), .SIGNED(1), .QMODE(Q_ACT), .OMODE(O_ACT), .CUT(CUT_ROUND),
        .W_NOFF(W_YG), .W_MINUS(W_YG)
    ) u_above (
        .clk(clk), .v(acc_r), .q(), .overflow(), .negative(), .neg_offset(W_YG'(-(longint'(LO_NEXT) + ABOVE_NEXT))),
        .minus(minus_above)
    );
    assign y_grid_now[o*W_YG+:W_YG] = (GRID_NEXT != 0) ? {!minus_above[W_YG-1], minus[W_YG-2:0]} : '0;

    if (FUSE_ERROR != 0) begin : output_error
      // y - target is `minus` where the forward cast fits (both in act_t, so W_ACT + 1 bits hold it),
      // else the cast's limit less the target, formed from the held -target beside the chain
      localparam logic signed [W_ACT:0] LIM_HI = (O_ACT == 1) ? '0 : (W_ACT + 1)'((1 << (W_ACT - 1)) - 1);
      localparam logic signed [W_ACT:0] LIM_LO = (O_ACT == 1) ? '0
                                              : (O_ACT == 2) ? (W_ACT + 1)'(1 - (1 << (W_ACT - 1))) : (W_ACT + 1)'(-(1 << (W_ACT - 1)));
      // err_t's limits, the values an overflowing error takes (AP_SAT_ZERO: zero)
      localparam logic signed [W_ERR-1:0] E_MAX = (O_ERR == 1) ? '0 : W_ERR'((longint'(1) << (W_ERR - 1)) - 1);
      localparam logic signed [W_ERR-1:0] E_MIN = (O_ERR == 1) ? '0
                                                : (O_ERR == 2) ? W_ERR'(1 - (longint'(1) << (W_ERR - 1))) : W_ERR'(-(longint'(1) << (W_ERR - 1)));
      logic signed [W_ACT:0] d_fit, d_hi, d_lo;
      logic [W_ERR-1:0] e_fit, e_hi_d, e_lo_d, e_hi, e_lo;
      logic o_fit, o_hi_d, o_lo_d, o_hi, o_lo;
      assign d_fit = minus[W_ACT:0];
      assign d_hi = LIM_HI + $signed(neg_target[o*(W_ACT+1)+:W_ACT+1]);
      assign d_lo = LIM_LO + $signed(neg_target[o*(W_ACT+1)+:W_ACT+1]);
      fixed_cast #(.W_IN(W_ACT + 1), .SHIFT(F_ACT - F_ERR), .W_OUT(W_ERR), .SIGNED(1), .QMODE(Q_ERR), .OMODE(O_ERR)) u_e_fit (
          .clk(clk), .v(d_fit), .q(e_fit), .overflow(o_fit), .negative(), .neg_offset(1'b0), .minus()
      );
      fixed_cast #(.W_IN(W_ACT + 1), .SHIFT(F_ACT - F_ERR), .W_OUT(W_ERR), .SIGNED(1), .QMODE(Q_ERR), .OMODE(O_ERR)) u_e_hi (
          .clk(clk), .v(d_hi), .q(e_hi_d), .overflow(o_hi_d), .negative(), .neg_offset(1'b0), .minus()
      );
      fixed_cast #(.W_IN(W_ACT + 1), .SHIFT(F_ACT - F_ERR), .W_OUT(W_ERR), .SIGNED(1), .QMODE(Q_ERR), .OMODE(O_ERR)) u_e_lo (
          .clk(clk), .v(d_lo), .q(e_lo_d), .overflow(o_lo_d), .negative(), .neg_offset(1'b0), .minus()
      );
      pipe_reg #(.W(2 * W_ERR + 2), .ON(TARGET_REG)) u_target_reg (
          .clk(clk), .d({e_hi_d, e_lo_d, o_hi_d, o_lo_d}), .q({e_hi, e_lo, o_hi, o_lo})
      );
      if ((O_ACT == 0 || O_ACT == 2) && (O_ERR == 0 || O_ERR == 2)) begin : g_clamp
        // Both casts saturate: err = clamp(d 2^AE, LX, HX) with bounds of the target alone (AE = F_ERR - F_ACT),
        // LX = max((lo_act - y) 2^AE, lo_err), HX = min((hi_act - y) 2^AE, hi_err). d is compared with them
        // in chains of their own beside d's, the sign of r - y - LD and of r - y - HD - 1 (r the rounded sum,
        // LD = max(lo_act - y, ceil(lo_err / 2^AE)), HD = min(hi_act - y, floor(hi_err / 2^AE))), so one select
        // follows the chains. The bounds are registered with the target (TARGET_REG).
        localparam int AE = F_ERR - F_ACT;
        localparam int W_TB = W_ACT + AE + 4;
        localparam logic signed [W_TB-1:0] LO_E = W_TB'(E_MIN);
        localparam logic signed [W_TB-1:0] HI_E = W_TB'(E_MAX);
        localparam logic signed [W_TB-1:0] CE_LO = -((-LO_E) >>> AE);  // ceil(lo_err / 2^AE)
        localparam logic signed [W_TB-1:0] FE_HI = HI_E >>> AE;        // floor(hi_err / 2^AE)
        // With ny = -y each bound is a comparison of ny with a constant beside one constant addition, then a select:
        //   n_lt = ny - LD = ny > K1 ? -lo_act : ny - CE_LO        (K1 = CE_LO - lo_act)
        //   n_gt = ny - HD - 1 = ny < K2 ? -hi_act - 1 : ny - FE_HI - 1   (K2 = FE_HI - hi_act)
        //   LX = ny > K3 ? (lo_act + ny) 2^AE : lo_err     (K3 = floor(lo_err / 2^AE) - lo_act)
        //   HX = ny < K4 ? (hi_act + ny) 2^AE : hi_err     (K4 = ceil(hi_err / 2^AE) - hi_act)
        localparam logic signed [W_TB-1:0] K1 = CE_LO - W_TB'(LIM_LO);
        localparam logic signed [W_TB-1:0] K2 = FE_HI - W_TB'(LIM_HI);
        localparam logic signed [W_TB-1:0] K3 = (LO_E >>> AE) - W_TB'(LIM_LO);
        localparam logic signed [W_TB-1:0] K4 = -((-HI_E) >>> AE) - W_TB'(LIM_HI);
        logic signed [W_TB-1:0] ny, lx, hx, n_lt_d, n_gt_d;
        logic signed [W_TB-1:0] n_lt, n_gt;
        logic [W_ERR-1:0] lx_q, hx_q;
        assign ny = W_TB'($signed(neg_target[o*(W_ACT+1)+:W_ACT+1]));
        assign n_lt_d = (ny > K1) ? -W_TB'(LIM_LO) : ny - CE_LO;
        assign n_gt_d = (ny < K2) ? -W_TB'(LIM_HI) - W_TB'(1) : ny - FE_HI - W_TB'(1);
        assign lx = (ny > K3) ? ((W_TB'(LIM_LO) + ny) <<< AE) : LO_E;
        assign hx = (ny < K4) ? ((W_TB'(LIM_HI) + ny) <<< AE) : HI_E;
        pipe_reg #(.W(2 * W_TB + 2 * W_ERR), .ON(TARGET_REG)) u_bounds_reg (
            .clk(clk), .d({n_lt_d, n_gt_d, lx[W_ERR-1:0], hx[W_ERR-1:0]}), .q({n_lt, n_gt, lx_q, hx_q})
        );
        logic signed [W_YG-1:0] below_lo, above_hi;
        fixed_cast #(
            .W_IN(W_ACC), .SHIFT(F_B + F_COEF - F_ACT), .W_OUT(W_ACT), .SIGNED(1), .QMODE(Q_ACT), .OMODE(O_ACT), .CUT(CUT_ROUND),
            .W_NOFF(W_TB), .W_MINUS(W_YG)
        ) u_lt (.clk(clk), .v(acc_r), .q(), .overflow(), .negative(), .fit_terms(), .neg_offset(n_lt), .minus(below_lo));
        fixed_cast #(
            .W_IN(W_ACC), .SHIFT(F_B + F_COEF - F_ACT), .W_OUT(W_ACT), .SIGNED(1), .QMODE(Q_ACT), .OMODE(O_ACT), .CUT(CUT_ROUND),
            .W_NOFF(W_TB), .W_MINUS(W_YG)
        ) u_gt (.clk(clk), .v(acc_r), .q(), .overflow(), .negative(), .fit_terms(), .neg_offset(n_gt), .minus(above_hi));
        assign err_now[o*W_ERR+:W_ERR] = below_lo[W_YG-1] ? lx_q : (!above_hi[W_YG-1] ? hx_q : W_ERR'(d_fit <<< AE));
      end else begin : g_select
        // Any other modes: one select after the chains, between d's bits, err_t's limit by d's sign and the error of
        // the act limit, each term formed for both values of up (nets of their own, `keep`, so the mapper keeps that shape).
        // take_d: both casts fit, so the error is d's bits (shifted into err_t); the act cast's fit test is
        // up ? ok_up : ok_stay (its ok terms come from the sum's high bits, early)
        logic up, ok_up, ok_stay, take_d;
        assign {up, ok_up, ok_stay} = fit_terms;
        assign take_d = (up ? ok_up : ok_stay) && (O_ERR == 3 || !o_fit);
        (* keep *) logic [W_ERR-1:0] other_up, other_stay;
        assign other_up = ok_up ? (d_fit[W_ACT] ? E_MIN : E_MAX) : (negative ? e_lo : e_hi);
        assign other_stay = ok_stay ? (d_fit[W_ACT] ? E_MIN : E_MAX) : (negative ? e_lo : e_hi);
        assign err_now[o*W_ERR+:W_ERR] = take_d ? W_ERR'(d_fit <<< (F_ERR - F_ACT)) : (up ? other_up : other_stay);
      end
      // where the act cast fits, the error cast overflowed exactly when d did not fit (o_fit)
      assign ovf_err[o] = !ovf_y[o] ? o_fit : (negative ? o_lo : o_hi);
      /* verilator lint_off UNUSEDSIGNAL */
      logic unused_e_fit;
      assign unused_e_fit = ^e_fit;  // its value is take_d ? d : other; only its overflow is read
      /* verilator lint_on UNUSEDSIGNAL */
    end else begin : g_no_error
      assign err_now[o*W_ERR+:W_ERR] = '0;
      assign ovf_err[o] = 1'b0;
    end

    if (HAS_BACKWARD != 0) begin : g_dphi
      for (genvar i = 0; i < N_IN; i++) begin : g_edge
        logic [P*W_DPROD-1:0] dprod, dprod_r;
        logic signed [W_DACC-1:0] dacc, dacc_r;
        for (genvar b = 0; b < P; b++) begin : g_dprod
          if (ECP5_DSP != 0) begin : g_dsp
            dsp_mult #(
                .W_A(W_D), .A_SIGNED(1), .W_B(W_COEF), .W_P(W_DPROD), .REG_A(DSP_REG_ROWS), .REG_B(DSP_REG_READ), .REG_P(CUT_MULT), .ECP5(1)
            ) u_mult (
                .clk(clk), .a((DSP_REG_ROWS != 0) ? db_pre[(i*P+b)*W_D+:W_D] : db[(i*P+b)*W_D+:W_D]),
                .b((DSP_REG_READ != 0) ? rdata[(i*P+b)*W_WORD+o*W_COEF+:W_COEF] : rdata_r[(i*P+b)*W_WORD+o*W_COEF+:W_COEF]),
                .p(dprod[b*W_DPROD+:W_DPROD])
            );
          end else begin : g_fabric
            assign dprod[b*W_DPROD+:W_DPROD] = dprod_site[((o*N_IN+i)*P+b)*W_DPROD+:W_DPROD];
          end
        end
        assign dprod_r = dprod;  // registered in the DSP or in the site
        adder_tree #(.N(P), .W_IN(W_DPROD), .W_SUM(W_DACC), .SPLIT(TREE_SPLIT)) u_dacc (
            .clk(clk), .terms(dprod_r), .sum(dacc)
        );
        pipe_reg #(.W(W_DACC), .ON(CUT_SUM)) u_cut_dacc (.clk(clk), .d(dacc), .q(dacc_r));
        fixed_cast #(
            .W_IN(W_DACC), .SHIFT(F_D + F_COEF - F_DPHI), .W_OUT(W_DPHI), .SIGNED(1), .QMODE(Q_DPHI), .OMODE(O_DPHI), .CUT(CUT_ROUND)
        ) u_dphi (.clk(clk), .neg_offset(1'b0), .v(dacc_r), .q(dphi[(o*N_IN+i)*W_DPHI+:W_DPHI]), .overflow(ovf_dphi[o*N_IN+i]));
      end
    end else begin : g_no_dphi
      assign dphi[o*N_IN*W_DPHI+:N_IN*W_DPHI] = '0;
      assign ovf_dphi[o*N_IN+:N_IN] = '0;
    end
  end

  // the stage boundary after F: its results, and what B and U read of F's inputs, so that
  // neither B nor U starts from a path through the decode or the bank read
  pipe_reg #(.W(N_OUT * W_ACT), .ON(REG_F)) u_reg_y (.clk(clk), .d(y_now), .q(y));
  pipe_reg #(.W(N_OUT * W_YG), .ON(REG_F * GRID_NEXT)) u_reg_y_grid (.clk(clk), .d(y_grid_now), .q(y_grid));
  pipe_reg #(.W(N_OUT * W_ERR), .ON(REG_F * FUSE_ERROR)) u_reg_err (.clk(clk), .d(err_now), .q(err));
  pipe_reg #(.W(N_OUT * N_IN * W_DPHI), .ON(REG_F * HAS_BACKWARD)) u_reg_dphi (.clk(clk), .d(dphi), .q(dphi_h));
  pipe_reg #(.W(N_IN * P * (W_B + W_BADDR + 1 + W_WORD) + N_IN), .ON(REG_F)) u_reg_hold (
      .clk(clk), .d({bb_s, baddr_s, used_s, rdata_r, clamped_s}), .q({bb_h, baddr_h, used_h, rdata_h, clamped_h})
  );

  // ---------------------------------------------------------------- B: input gradient
  logic [N_IN*W_GR-1:0] g_in_now;
  // the backward site off the DSP primitives: g*dphi of (i, o) at [(i*N_OUT+o)*W_SPROD +: W_SPROD]
  logic [N_IN*N_OUT*W_SPROD-1:0] sprod_site;
  if (ECP5_DSP == 0 && HAS_BACKWARD != 0) begin : g_backward_site
    logic [N_IN*N_OUT*W_DPHI-1:0] site_dphi;
    logic [N_IN*N_OUT*W_G-1:0] site_g;
    for (genvar i = 0; i < N_IN; i++) begin : g_site_i
      for (genvar o = 0; o < N_OUT; o++) begin : g_site_o
        assign site_dphi[(i*N_OUT+o)*W_DPHI+:W_DPHI] = dphi_h[(o*N_IN+i)*W_DPHI+:W_DPHI];
        assign site_g[(i*N_OUT+o)*W_G+:W_G] = g_out[o*W_G+:W_G];
      end
    end
    shared_mult #(
        .N(N_IN * N_OUT), .W_A(W_DPHI), .A_SIGNED(1), .W_B(W_G), .W_P(W_SPROD),
        .SHARE(SHARE), .CUT(CUT_GMULT), .IN_REG(CUT_SHARED_IN)
    ) u_sprod (.clk(clk), .a(site_dphi), .b(site_g), .p(sprod_site));
  end else begin : g_backward_dsp
    assign sprod_site = '0;
  end
  if (HAS_BACKWARD != 0) begin : layer_input_gradient
    for (genvar i = 0; i < N_IN; i++) begin : g_grad
      logic [N_OUT*W_SPROD-1:0] sprod, sprod_r;
      logic signed [W_S-1:0] s;
      logic signed [W_T-1:0] t, t_r;
      logic [W_GR-1:0] cast_t;
      logic ovf_grad;
      for (genvar o = 0; o < N_OUT; o++) begin : g_sprod
        if (ECP5_DSP != 0) begin : g_dsp
          dsp_mult #(
              .W_A(W_DPHI), .A_SIGNED(1), .W_B(W_G), .W_P(W_SPROD), .REG_A(DSP_REG_HOLD), .REG_B(DSP_REG_HOLD),
              .REG_P(CUT_GMULT), .ECP5(1)
          ) u_mult (
              .clk(clk), .a((DSP_REG_HOLD != 0) ? dphi[(o*N_IN+i)*W_DPHI+:W_DPHI] : dphi_h[(o*N_IN+i)*W_DPHI+:W_DPHI]),
              .b((DSP_REG_HOLD != 0) ? g_out_pre[o*W_G+:W_G] : g_out[o*W_G+:W_G]), .p(sprod[o*W_SPROD+:W_SPROD])
          );
        end else begin : g_fabric
          assign sprod[o*W_SPROD+:W_SPROD] = sprod_site[(i*N_OUT+o)*W_SPROD+:W_SPROD];
        end
      end
      assign sprod_r = sprod;  // registered in the DSP or in the site
      adder_tree #(.N(N_OUT), .W_IN(W_SPROD), .W_SUM(W_S), .SPLIT(TREE_SPLIT)) u_s (
          .clk(clk), .terms(sprod_r), .sum(s)
      );
      const_mult #(.W_X(W_S), .C(INV_H), .W_Y(W_T)) u_inv_h (.x(s), .y(t));
      pipe_reg #(.W(W_T), .ON(CUT_GSUM)) u_cut_t (.clk(clk), .d(t), .q(t_r));
      fixed_cast #(
          .W_IN(W_T), .SHIFT(F_G + F_DPHI + INV_H_FRAC - F_GR), .W_OUT(W_GR), .SIGNED(1), .QMODE(Q_GR), .OMODE(O_GR), .CUT(CUT_ROUND)
      ) u_grad (.clk(clk), .neg_offset(1'b0), .v(t_r), .q(cast_t), .overflow(ovf_grad));
      // the clamp is part of the function: a clamped input has derivative zero
      assign g_in_now[i*W_GR+:W_GR] = clamped_h[i] ? '0 : cast_t;
      assign ovf_back[N_OUT*N_IN+i] = ovf_grad && !clamped_h[i];
      for (genvar o = 0; o < N_OUT; o++) begin : g_ovf_dphi
        assign ovf_back[o*N_IN+i] = ovf_dphi[o*N_IN+i] && !clamped_h[i];
      end
    end
  end else begin : g_no_backward
    assign g_in_now = '0;
    assign ovf_back = '0;
    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_ovf_dphi;
    assign unused_ovf_dphi = ^ovf_dphi;
    /* verilator lint_on UNUSEDSIGNAL */
  end

  // the stage boundary after B
  pipe_reg #(.W(N_IN * W_GR), .ON(REG_B)) u_reg_b (.clk(clk), .d(g_in_now), .q(g_in));
  assign g_in_pre = g_in_now;

  // ---------------------------------------------------------------- U: sparse update
  // the update site off the DSP primitives: g*B of (i, b, o) at [((i*P+b)*N_OUT+o)*W_GB +: W_GB]
  logic [N_IN*P*N_OUT*W_GB-1:0] gb_site;
  if (ECP5_DSP == 0) begin : g_update_site
    logic [N_IN*P*N_OUT*W_B-1:0] site_b;
    logic [N_IN*P*N_OUT*W_G-1:0] site_g;
    for (genvar e = 0; e < N_IN * P; e++) begin : g_site_e
      for (genvar o = 0; o < N_OUT; o++) begin : g_site_o
        assign site_b[(e*N_OUT+o)*W_B+:W_B] = bb_h[e*W_B+:W_B];
        assign site_g[(e*N_OUT+o)*W_G+:W_G] = g_out[o*W_G+:W_G];
      end
    end
    shared_mult #(
        .N(N_IN * P * N_OUT), .W_A(W_B), .A_SIGNED(0), .W_B(W_G), .W_P(W_GB),
        .SHARE(SHARE), .CUT(CUT_UMULT), .IN_REG(CUT_SHARED_IN)
    ) u_gb (.clk(clk), .a(site_b), .b(site_g), .p(gb_site));
  end else begin : g_update_dsp
    assign gb_site = '0;
  end
  for (genvar i = 0; i < N_IN; i++) begin : layer_update
    for (genvar b = 0; b < P; b++) begin : g_upd_bank
      for (genvar o = 0; o < N_OUT; o++) begin : g_upd_out
        logic signed [W_GB-1:0] gb, gb_r;
        logic signed [W_FULL-1:0] full, full_r;
        logic ovf_coef;
        if (ECP5_DSP != 0) begin : g_dsp
          dsp_mult #(
              .W_A(W_B), .A_SIGNED(0), .W_B(W_G), .W_P(W_GB), .REG_A(DSP_REG_HOLD), .REG_B(DSP_REG_HOLD), .REG_P(CUT_UMULT), .ECP5(1)
          ) u_mult (
              .clk(clk), .a((DSP_REG_HOLD != 0) ? bb_s[(i*P+b)*W_B+:W_B] : bb_h[(i*P+b)*W_B+:W_B]),
              .b((DSP_REG_HOLD != 0) ? g_out_pre[o*W_G+:W_G] : g_out[o*W_G+:W_G]), .p(gb)
          );
        end else begin : g_fabric
          assign gb = gb_site[((i*P+b)*N_OUT+o)*W_GB+:W_GB];
        end
        assign gb_r = gb;  // registered in the DSP or in the site
        if (LR_SPAN == 0) begin : g_fixed_lr
          assign full = (W_FULL'($signed(rdata_h[(i*P+b)*W_WORD+o*W_COEF+:W_COEF])) <<< (F_FULL - F_COEF))
                      - (W_FULL'(gb_r) <<< (F_FULL - F_DELTA));
        end else begin : g_runtime_lr
          assign full = (W_FULL'($signed(rdata_h[(i*P+b)*W_WORD+o*W_COEF+:W_COEF])) <<< (F_FULL - F_COEF))
                      - ((W_FULL'(gb_r) <<< (F_FULL - F_DELTA)) <<< lr_up);
        end
        pipe_reg #(.W(W_FULL), .ON(CUT_UFULL)) u_cut_full (.clk(clk), .d(full), .q(full_r));
        fixed_cast #(
            .W_IN(W_FULL), .SHIFT(F_FULL - F_COEF), .W_OUT(W_COEF), .SIGNED(1), .QMODE(Q_COEF), .OMODE(O_COEF), .CUT(CUT_ROUND)
        ) u_coef (.clk(clk), .neg_offset(1'b0), .v(full_r), .q(wdata[(i*P+b)*W_WORD+o*W_COEF+:W_COEF]), .overflow(ovf_coef));
        assign ovf_upd[(i*P+b)*N_OUT+o] = ovf_coef && used_h[i*P+b];
      end
    end
  end
endmodule
