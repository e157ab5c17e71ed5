// fixed_cast: the assignment of an exact value to an ap_fixed / ap_ufixed type.
//
// This is cast_T of docs/arithmetic.md, bit for bit the same as codesign.fixed.kernel.fixed_cast:
// first quantization (drop SHIFT fractional bits, rounding by QMODE; a negative SHIFT appends
// zero bits), then overflow handling to W_OUT bits by OMODE. The input is an exact signed
// two's-complement value; the output is the raw bit pattern of the target type.
//
// QMODE and OMODE take the integer values of codesign.fixed.QMode / OMode (the order of
// Xilinx's ap_decl.h):
//   QMODE 0 AP_RND, 1 AP_RND_ZERO, 2 AP_RND_MIN_INF, 3 AP_RND_INF, 4 AP_RND_CONV, 5 AP_TRN,
//         6 AP_TRN_ZERO
//   OMODE 0 AP_SAT, 1 AP_SAT_ZERO, 2 AP_SAT_SYM, 3 AP_WRAP
// Combinational, every mode resolved at elaboration so only the chosen logic is built; CUT = 1
// puts a register (pipe_reg) between the quantization and the overflow handling.
// `overflow` is 1 when the quantized value lies outside the target's range (for AP_SAT_SYM the
// excluded most negative code counts), whatever OMODE then does with it: the overflow that
// codesign.kan.learner_base.probe counts. It comes from the same registered terms as q, and so
// does `negative`, the sign that picks the limit.
// `minus` is the quantized value less an offset, exact and before any overflow handling: the
// caller gives the offset negated (`neg_offset`, raw units of the target), and the offset rides
// in the rounding's own carry chain (it has no bits below the kept ones), so it costs no adder
// of its own. The KAN core reads the next layer's grid offset (x - lo) and the error (y_hat - y)
// there; where nobody reads it, synthesis removes it.
module fixed_cast #(
    parameter int W_IN   = 32,  // width of the exact signed input
    parameter int SHIFT  = 0,   // fractional bits dropped (> 0) or appended (<= 0)
    parameter int W_OUT  = 16,  // width of the target type
    parameter int SIGNED = 1,   // 1: ap_fixed, 0: ap_ufixed
    parameter int QMODE  = 5,
    parameter int OMODE  = 3,
    parameter int CUT    = 0,
    parameter int W_NOFF = 1,   // width of neg_offset (signed)
    parameter int W_MINUS = 1   // width of minus: enough for the exact difference (the caller sizes it)
) (
    input  logic                    clk,    // only read when CUT = 1
    input  logic signed [W_IN-1:0]  v,
    output logic        [W_OUT-1:0] q,
    output logic                    overflow,
    output logic                    negative,
    output logic [2:0]              fit_terms,  // {up, ok_up, ok_stay}: fits = up ? ok_up : ok_stay (for a caller's own select)
    input  logic signed [W_NOFF-1:0] neg_offset,
    output logic signed [W_MINUS-1:0] minus
);
  localparam int DROP = (SHIFT > 0) ? SHIFT : 0;
  localparam int APPEND = (SHIFT < 0) ? -SHIFT : 0;
  // The input sign-extended so that at least one bit is left above the dropped ones.
  localparam int W_V = (W_IN > DROP + 1) ? W_IN : DROP + 1;
  // The quantized value: the kept bits plus one for the rounding increment.
  localparam int W_Q = (DROP > 0) ? (W_V - DROP + 1) : (W_IN + APPEND);
  // Common width of the overflow comparison: holds the quantized value and both limits.
  localparam int W_C = ((W_Q > W_OUT + 1) ? W_Q : W_OUT + 1) + 1;

  localparam logic signed [W_C-1:0] ONE = 1;
  localparam logic signed [W_C-1:0] MAX_RAW = (SIGNED != 0) ? (ONE <<< (W_OUT - 1)) - ONE : (ONE <<< W_OUT) - ONE;
  localparam logic signed [W_C-1:0] MIN_RAW = (SIGNED != 0) ? -(ONE <<< (W_OUT - 1)) : '0;
  // AP_SAT_SYM excludes the most negative code of a signed type (except a 1-bit one).
  localparam logic SYM = (OMODE == 2) && (SIGNED != 0) && (W_OUT > 1);

  // The quantized value is head + up: head the kept bits of the input (wires), up the rounding
  // increment (0 or 1, the carry into the first kept bit). The overflow test is worked out on
  // head, in parallel with the carry chain, and only combined with up after it, so the chain is
  // followed by one select per output bit, however many bits the test spans.
  logic signed [W_Q-1:0] quantized, head;
  logic up;
  // quantized + neg_offset, exact: one bit above the wider operand
  localparam int W_M = ((W_Q > W_NOFF) ? W_Q : W_NOFF) + 1;
  logic signed [W_M-1:0] minus_d, minus_r;

  generate
    if (DROP > 0) begin : g_drop
      // Every rounding mode is floor((v + BIAS + CI) / 2^DROP) for a constant BIAS and a one-bit
      // carry-in CI, so the quantization is one carry chain with no sticky OR of the dropped bits
      // before it. HALF_M1 = 2^(DROP-1) - 1; with r the dropped part (0 <= r < 2^DROP) and a tie
      // at r = 2^(DROP-1), r + HALF_M1 + CI carries out exactly when the mode rounds up:
      //   AP_RND: CI = 1 (ties up)          AP_RND_ZERO: CI = sign (ties toward zero)
      //   AP_RND_MIN_INF: CI = 0 (ties down) AP_RND_INF: CI = ~sign (ties away from zero)
      //   AP_RND_CONV: CI = lsb kept (ties to even)
      //   AP_TRN_ZERO: BIAS = sign ? 2^DROP - 1 : 0, CI = 0;  AP_TRN: no add
      localparam logic [W_V:0] ONE_V = 1;
      localparam logic [W_V:0] HALF_M1 = (ONE_V << (DROP - 1)) - ONE_V;
      localparam logic [W_V:0] ALL_DROPPED = (ONE_V << DROP) - ONE_V;
      logic signed [W_V:0] ve, bias, biased;
      logic v_neg, ci;
      assign ve = (W_V + 1)'(v);  // sign extension, one bit of headroom for the bias
      assign v_neg = ve[W_V];
      always_comb begin
        bias = HALF_M1;
        ci = 1'b0;
        case (QMODE)
          0: ci = 1'b1;                                     // AP_RND
          1: ci = v_neg;                                 // AP_RND_ZERO
          2: ci = 1'b0;                                     // AP_RND_MIN_INF
          3: ci = ~v_neg;                                // AP_RND_INF
          4: ci = ve[DROP];                                 // AP_RND_CONV
          6: bias = v_neg ? ALL_DROPPED : '0;            // AP_TRN_ZERO
          default: bias = '0;                               // AP_TRN
        endcase
      end
      assign head = W_Q'(ve[W_V:DROP]);
      if (QMODE == 5 || QMODE > 6) begin : g_floor
        assign biased = ve;
        assign up = 1'b0;
      end else begin : g_round
        // the carry-in as a low bit: {ve, ci} + {bias, 1} = 2 (ve + bias + ci) + 1, one two-operand
        // adder that maps to a single carry chain (a three-operand sum maps to two)
        logic [W_V+1:0] sum2;
        assign sum2 = {ve, ci} + {bias, ci};
        assign biased = sum2[W_V+1:1];
        // BIAS < 2^DROP, so bit DROP of the sum differs from the input's only by the carry into it: that carry
        // is the carry out of the dropped bits, a short chain of its own (no XOR after the long one)
        logic [DROP+1:0] low_sum;
        assign low_sum = {1'b0, ve[DROP-1:0], ci} + {1'b0, bias[DROP-1:0], ci};
        assign up = low_sum[DROP+1];
      end
      assign quantized = W_Q'(biased[W_V:DROP]);
      // the same sum with the negated offset above the dropped bits: one chain, the same carry-in
      logic signed [W_M+DROP:0] vm, km;
      logic [W_M+DROP+1:0] sum_m;
      assign vm = (W_M + DROP + 1)'(ve);
      assign km = (W_M + DROP + 1)'({W_M'(neg_offset), bias[DROP-1:0]});
      assign sum_m = {vm, ci} + {km, ci};
      assign minus_d = sum_m[W_M+DROP:DROP+1];
    end else begin : g_append
      assign quantized = W_Q'(v) <<< APPEND;
      assign head = quantized;
      assign up = 1'b0;
      assign minus_d = W_M'(quantized) + W_M'(neg_offset);
    end
  endgenerate

  // Overflow of head: it fits when every bit from the target's top bit up is a copy of the sign
  // (signed target) or zero (unsigned), a reduction, not a magnitude comparison. head + up fits
  // when head fits and is not the largest code, or up carries head from one below the smallest
  // code into it.
  logic signed [W_C-1:0] head_c, top_c, below_c;
  logic fits_h, top_h, below_h, min_h;
  assign head_c = W_C'(head);
  assign top_c = MAX_RAW;
  assign below_c = MIN_RAW - ONE;
  assign top_h = head_c == top_c;
  assign below_h = head_c == below_c;
  generate
    if (SIGNED != 0) begin : g_signed_fit
      assign fits_h = (&head_c[W_C-1:W_OUT-1]) | ~(|head_c[W_C-1:W_OUT-1]);
    end else begin : g_unsigned_fit
      assign fits_h = ~(|head_c[W_C-1:W_OUT]);
    end
    if (SYM) begin : g_min
      assign min_h = head_c == MIN_RAW;
    end else begin : g_no_min
      assign min_h = 1'b0;
    end
  endgenerate

  // Whether the value fits (and is not the excluded most negative code of AP_SAT_SYM) when up is
  // 1 and when it is 0; both come from head alone. With rounding, `keep` holds them as nets of
  // their own, so that the mapper, which takes the carry chain's outputs as arriving no later than
  // the registers, cannot fold the late up into their reduction trees. Without (up is 0), nothing
  // is late and the mapper may merge them into the select after them.
  logic ok_up, ok_stay;
  if (DROP > 0) begin : g_keep_terms
    (* keep *) logic ok_up_k, ok_stay_k;
    assign ok_up_k = SYM ? (fits_h & ~top_h) : ((fits_h & ~top_h) | below_h);
    assign ok_stay_k = fits_h & ~min_h;
    assign ok_up = ok_up_k;
    assign ok_stay = ok_stay_k;
  end else begin : g_terms
    assign ok_up = SYM ? (fits_h & ~top_h) : ((fits_h & ~top_h) | below_h);
    assign ok_stay = fits_h & ~min_h;
  end

  // CUT = 1: the register holds the kept low bits and the overflow terms, not the whole value
  logic [W_OUT-1:0] low_d, low;
  logic up_r, ok_up_r, ok_stay_r, negative_r;
  assign low_d = W_OUT'(W_C'(quantized));
  pipe_reg #(.W(W_OUT + 4 + W_M), .ON(CUT)) u_cut (
      .clk(clk), .d({low_d, up, ok_up, ok_stay, head_c[W_C-1], minus_d}),
      .q({low, up_r, ok_up_r, ok_stay_r, negative_r, minus_r})
  );
  assign minus = W_MINUS'(minus_r);
  assign negative = negative_r;
  assign fit_terms = {up_r, ok_up_r, ok_stay_r};

  // The value an out-of-range input takes, from its sign alone (the sign of head: a value that
  // up moves across zero fits); for the excluded code of AP_SAT_SYM it is MIN + 1 as well.
  logic [W_OUT-1:0] limit;
  always_comb begin
    if (OMODE == 1) limit = '0;
    else if (negative_r) limit = SYM ? MIN_RAW[W_OUT-1:0] + 1'b1 : MIN_RAW[W_OUT-1:0];
    else limit = MAX_RAW[W_OUT-1:0];
  end
  logic fits_r;
  assign fits_r = up_r ? ok_up_r : ok_stay_r;
  assign q = (OMODE == 3 || fits_r) ? low : limit;  // AP_WRAP keeps the low bits
  assign overflow = !fits_r;
endmodule
