// kan_layer: one KAN layer of the online learner: forward pass, input gradient, sparse update
// (docs/arithmetic.md §2-§6), every edge in parallel.
//
// Three phases use this module, in this order within a sample (kan_online sequences them):
//   F  forward: bank reads at the decoded addresses (kan_decode), y = cast_act(sum B*c),
//      dphi = cast_dphi(sum D*c)
//   B  backward (HAS_BACKWARD): g_in = cast_grad(sum_o g_out * dphi * inv_h), 0 where clamped
//   U  update, written when `commit` is high: c <- cast_coef(c - 2^-s * g_out * B)
// With REG_F (REG_B) the results of F (B) are held in registers loaded by f_load (b_load), so
// a pipeline stage boundary follows the phase; without, the phase is combinational into the next.
// Every later phase reads only held values and the banks, which do not change until the commit.
//
// Coefficient banks: see kan_bank.sv. The window cell..cell+K of input i is spread over the P
// banks (P = the power of two >= K+1); bank b holds window position j = (b - cell) mod P,
// unused when j > K. The basis values are rotated into bank order, never the coefficients.
module kan_layer #(
    parameter int N_IN = 2,
    parameter int N_OUT = 4,
    parameter int P = 4,
    parameter int DEPTH = 3,
    // act_t (inputs, outputs), coef_t, basis_t (unsigned), dbasis_t, dphi_t
    parameter int W_ACT = 16, parameter int F_ACT = 10, parameter int Q_ACT = 4, parameter int O_ACT = 0,
    parameter int W_COEF = 16, parameter int F_COEF = 10, parameter int Q_COEF = 4, parameter int O_COEF = 0,
    parameter int W_B = 18, parameter int F_B = 17,
    parameter int W_D = 18, parameter int F_D = 16,
    parameter int W_DPHI = 18, parameter int F_DPHI = 12, parameter int Q_DPHI = 4, parameter int O_DPHI = 0,
    // type of the gradient at this layer's outputs (err_t for the last layer, grad_t otherwise)
    parameter int W_G = 16, parameter int F_G = 10,
    // grad_t: type of the gradient this layer passes back to its inputs
    parameter int W_GR = 16, parameter int F_GR = 10, parameter int Q_GR = 4, parameter int O_GR = 0,
    // 1/h (KANSpec.grid_constants()): the backward pass multiplies by it
    parameter int INV_H = 1,
    parameter int INV_H_FRAC = -2,
    parameter int LR_SHIFT = 4,
    parameter int HAS_BACKWARD = 1,
    parameter int REG_F = 0,
    parameter int REG_B = 0,
    parameter COEF_PREFIX = "",  // bank (i, b) loads COEF_PREFIX_i<iii>_b<bbb>.mem
    parameter int W_BADDR = (DEPTH > 1) ? $clog2(DEPTH) : 1  // derived, do not set
) (
    input  logic                  clk,
    // the decoded inputs (kan_decode)
    input  logic [N_IN-1:0]           clamped,
    input  logic [N_IN*P*W_B-1:0]     bb,
    input  logic [N_IN*P*W_D-1:0]     db,
    input  logic [N_IN*P*W_BADDR-1:0] baddr,
    input  logic [N_IN*P-1:0]         used,
    output logic [N_OUT*W_ACT-1:0] y,       // held after F when REG_F
    output logic [N_OUT*W_ACT-1:0] y_comb,  // combinational, ready at the end of F
    input  logic                  f_load,
    input  logic [N_OUT*W_G-1:0]  g_out,
    output logic [N_IN*W_GR-1:0]  g_in,
    input  logic                  b_load,
    input  logic                  commit
);
  localparam int W_WORD = N_OUT * W_COEF;
  localparam int W_INV = $clog2(INV_H + 1);
  // exact intermediates (docs/arithmetic.md §9), sized so that no sum can overflow
  localparam int W_BPROD = W_B + 1 + W_COEF;
  localparam int W_ACC = W_BPROD + $clog2(N_IN * P) + 1;
  localparam int W_DPROD = W_D + W_COEF;
  localparam int W_DACC = W_DPROD + $clog2(P) + 1;
  localparam int W_SPROD = W_G + W_DPHI;
  localparam int W_S = W_SPROD + $clog2(N_OUT) + 1;
  localparam int W_T = W_S + W_INV + 1;
  localparam int F_DELTA = F_G + F_B + LR_SHIFT;
  localparam int F_FULL = (F_COEF > F_DELTA) ? F_COEF : F_DELTA;
  localparam int W_GB = W_G + W_B + 1;
  localparam int W_FULL_C = W_COEF + F_FULL - F_COEF;
  localparam int W_FULL_D = W_GB + F_FULL - F_DELTA;
  localparam int W_FULL = ((W_FULL_C > W_FULL_D) ? W_FULL_C : W_FULL_D) + 2;

  `include "mem_names.svh"

  // ---------------------------------------------------------------- F: decoded inputs
  logic [N_IN*P*W_B-1:0] bb_h;
  logic [N_IN*P*W_BADDR-1:0] baddr_h;
  logic [N_IN*P-1:0] used_h;
  logic [N_IN-1:0] clamped_h;
  logic [N_IN*P*W_WORD-1:0] rdata, rdata_h;  // bank (i, b) at [(i*P+b)*W_WORD +: W_WORD]

  // ---------------------------------------------------------------- banks
  logic [N_IN*P*W_WORD-1:0] wdata;
  for (genvar i = 0; i < N_IN; i++) begin : g_input
    for (genvar b = 0; b < P; b++) begin : g_bank
      kan_bank #(
          .W_WORD(W_WORD), .DEPTH(DEPTH), .W_ADDR(W_BADDR),
          .INIT_FILE((COEF_PREFIX == "") ? "" : {COEF_PREFIX, "_i", decimal3(i), "_b", decimal3(b), ".mem"})
      ) u_bank (
          .clk(clk),
          .raddr(baddr[(i*P+b)*W_BADDR+:W_BADDR]),
          .rdata(rdata[(i*P+b)*W_WORD+:W_WORD]),
          .we(commit && used_h[i*P+b]),
          .waddr(baddr_h[(i*P+b)*W_BADDR+:W_BADDR]),
          .wdata(wdata[(i*P+b)*W_WORD+:W_WORD])
      );
    end
  end

  // ---------------------------------------------------------------- F: per output (forward sums)
  logic [N_OUT*W_ACT-1:0] y_now;
  assign y_comb = y_now;
  logic [N_OUT*N_IN*W_DPHI-1:0] dphi, dphi_h;  // edge (o, i) at [(o*N_IN+i)*W_DPHI +: W_DPHI]
  for (genvar o = 0; o < N_OUT; o++) begin : g_output
    logic [N_IN*P*W_BPROD-1:0] prod;  // one product per (input, bank)
    logic signed [W_ACC-1:0] acc;
    for (genvar e = 0; e < N_IN * P; e++) begin : g_prod
      assign prod[e*W_BPROD+:W_BPROD] = $signed({1'b0, bb[e*W_B+:W_B]}) * $signed(rdata[e*W_WORD+o*W_COEF+:W_COEF]);
    end
    always_comb begin
      acc = '0;
      for (int e = 0; e < N_IN * P; e++) acc = acc + W_ACC'($signed(prod[e*W_BPROD+:W_BPROD]));
    end
    fixed_cast #(
        .W_IN(W_ACC), .SHIFT(F_B + F_COEF - F_ACT), .W_OUT(W_ACT), .SIGNED(1), .QMODE(Q_ACT), .OMODE(O_ACT)
    ) u_y (.v(acc), .q(y_now[o*W_ACT+:W_ACT]));

    if (HAS_BACKWARD != 0) begin : g_dphi
      for (genvar i = 0; i < N_IN; i++) begin : g_edge
        logic [P*W_DPROD-1:0] dprod;
        logic signed [W_DACC-1:0] dacc;
        for (genvar b = 0; b < P; b++) begin : g_dprod
          assign dprod[b*W_DPROD+:W_DPROD] = $signed(db[(i*P+b)*W_D+:W_D]) * $signed(rdata[(i*P+b)*W_WORD+o*W_COEF+:W_COEF]);
        end
        always_comb begin
          dacc = '0;
          for (int b = 0; b < P; b++) dacc = dacc + W_DACC'($signed(dprod[b*W_DPROD+:W_DPROD]));
        end
        fixed_cast #(
            .W_IN(W_DACC), .SHIFT(F_D + F_COEF - F_DPHI), .W_OUT(W_DPHI), .SIGNED(1), .QMODE(Q_DPHI), .OMODE(O_DPHI)
        ) u_dphi (.v(dacc), .q(dphi[(o*N_IN+i)*W_DPHI+:W_DPHI]));
      end
    end else begin : g_no_dphi
      assign dphi[o*N_IN*W_DPHI+:N_IN*W_DPHI] = '0;
    end
  end

  // Everything a later phase needs from F, held when a stage boundary follows F.
  generate
    if (REG_F != 0) begin : g_hold_f
      always_ff @(posedge clk) begin
        if (f_load) begin
          y <= y_now;
          bb_h <= bb;
          baddr_h <= baddr;
          used_h <= used;
          clamped_h <= clamped;
          rdata_h <= rdata;
          dphi_h <= dphi;
        end
      end
    end else begin : g_pass_f
      assign y = y_now;
      assign bb_h = bb;
      assign baddr_h = baddr;
      assign used_h = used;
      assign clamped_h = clamped;
      assign rdata_h = rdata;
      assign dphi_h = dphi;
    end
  endgenerate

  // ---------------------------------------------------------------- B: input gradient
  logic [N_IN*W_GR-1:0] g_in_now;
  if (HAS_BACKWARD != 0) begin : g_backward
    for (genvar i = 0; i < N_IN; i++) begin : g_grad
      logic [N_OUT*W_SPROD-1:0] sprod;
      logic signed [W_S-1:0] s;
      logic signed [W_T-1:0] t;
      logic [W_GR-1:0] cast_t;
      for (genvar o = 0; o < N_OUT; o++) begin : g_sprod
        assign sprod[o*W_SPROD+:W_SPROD] = $signed(g_out[o*W_G+:W_G]) * $signed(dphi_h[(o*N_IN+i)*W_DPHI+:W_DPHI]);
      end
      always_comb begin
        s = '0;
        for (int o = 0; o < N_OUT; o++) s = s + W_S'($signed(sprod[o*W_SPROD+:W_SPROD]));
      end
      const_mult #(.W_X(W_S), .C(INV_H), .W_Y(W_T)) u_inv_h (.x(s), .y(t));
      fixed_cast #(
          .W_IN(W_T), .SHIFT(F_G + F_DPHI + INV_H_FRAC - F_GR), .W_OUT(W_GR), .SIGNED(1), .QMODE(Q_GR), .OMODE(O_GR)
      ) u_grad (.v(t), .q(cast_t));
      // the clamp is part of the function: a clamped input has derivative zero
      assign g_in_now[i*W_GR+:W_GR] = clamped_h[i] ? '0 : cast_t;
    end
  end else begin : g_no_backward
    assign g_in_now = '0;
  end

  generate
    if (REG_B != 0) begin : g_hold_b
      always_ff @(posedge clk) if (b_load) g_in <= g_in_now;
    end else begin : g_pass_b
      assign g_in = g_in_now;
    end
  endgenerate

  // ---------------------------------------------------------------- U: sparse update
  for (genvar i = 0; i < N_IN; i++) begin : g_upd_in
    for (genvar b = 0; b < P; b++) begin : g_upd_bank
      for (genvar o = 0; o < N_OUT; o++) begin : g_upd_out
        logic signed [W_GB-1:0] gb;
        logic signed [W_FULL-1:0] full;
        assign gb = $signed(g_out[o*W_G+:W_G]) * $signed({1'b0, bb_h[(i*P+b)*W_B+:W_B]});
        assign full = (W_FULL'($signed(rdata_h[(i*P+b)*W_WORD+o*W_COEF+:W_COEF])) <<< (F_FULL - F_COEF))
                    - (W_FULL'(gb) <<< (F_FULL - F_DELTA));
        fixed_cast #(
            .W_IN(W_FULL), .SHIFT(F_FULL - F_COEF), .W_OUT(W_COEF), .SIGNED(1), .QMODE(Q_COEF), .OMODE(O_COEF)
        ) u_coef (.v(full), .q(wdata[(i*P+b)*W_WORD+o*W_COEF+:W_COEF]));
      end
    end
  end
endmodule
