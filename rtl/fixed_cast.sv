// fixed_cast: the assignment of an exact value to an ap_fixed / ap_ufixed type.
//
// This is cast_T of docs/arithmetic.md, bit for bit the same as codesign.fixed.kernel.requantize:
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
module fixed_cast #(
    parameter int W_IN   = 32,  // width of the exact signed input
    parameter int SHIFT  = 0,   // fractional bits dropped (> 0) or appended (<= 0)
    parameter int W_OUT  = 16,  // width of the target type
    parameter int SIGNED = 1,   // 1: ap_fixed, 0: ap_ufixed
    parameter int QMODE  = 5,
    parameter int OMODE  = 3,
    parameter int CUT    = 0
) (
    input  logic                    clk,    // only read when CUT = 1
    input  logic signed [W_IN-1:0]  v,
    output logic        [W_OUT-1:0] q
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

  logic signed [W_Q-1:0] quantized_d, quantized;
  pipe_reg #(.W(W_Q), .ON(CUT)) u_cut (.clk(clk), .d(quantized_d), .q(quantized));

  generate
    if (DROP > 0) begin : g_drop
      logic signed [W_V-1:0] ve;
      logic signed [W_V-DROP-1:0] floor_q;
      logic half, rest, negative, inc;
      assign ve = W_V'(v);  // sign extension
      assign floor_q = ve[W_V-1:DROP];
      assign half = ve[DROP-1];  // the dropped part is >= half an LSB
      if (DROP > 1) begin : g_rest
        assign rest = |ve[DROP-2:0];
      end else begin : g_no_rest
        assign rest = 1'b0;
      end
      assign negative = ve[W_V-1];
      always_comb begin
        // above half: half & rest; exactly half: half & ~rest; any bit dropped: half | rest
        case (QMODE)
          0: inc = half;                                         // AP_RND
          1: inc = half & (rest | negative);                     // AP_RND_ZERO
          2: inc = half & rest;                                  // AP_RND_MIN_INF
          3: inc = half & (rest | ~negative);                    // AP_RND_INF
          4: inc = half & (rest | floor_q[0]);                   // AP_RND_CONV
          6: inc = negative & (half | rest);                     // AP_TRN_ZERO
          default: inc = 1'b0;                                   // AP_TRN
        endcase
      end
      assign quantized_d = W_Q'(floor_q) + W_Q'($signed({1'b0, inc}));
    end else begin : g_append
      assign quantized_d = W_Q'(v) <<< APPEND;
    end
  endgenerate

  // Overflow: the value fits when every bit from the target's top bit up is a copy of the sign
  // (signed target) or zero (unsigned): a reduction, not a magnitude comparison.
  logic signed [W_C-1:0] wide;
  logic negative_q, fits, over, under, at_min;
  assign wide = W_C'(quantized);
  assign negative_q = wide[W_C-1];
  generate
    if (SIGNED != 0) begin : g_signed_fit
      assign fits = (&wide[W_C-1:W_OUT-1]) | ~(|wide[W_C-1:W_OUT-1]);
    end else begin : g_unsigned_fit
      assign fits = ~(|wide[W_C-1:W_OUT]);
    end
    if (SYM) begin : g_min
      assign at_min = fits && wide[W_OUT-1] && ~(|wide[W_OUT-2:0]);
    end else begin : g_no_min
      assign at_min = 1'b0;
    end
  endgenerate
  assign over = !fits && !negative_q;
  assign under = !fits && negative_q;

  always_comb begin
    q = wide[W_OUT-1:0];  // AP_WRAP, and every value that fits
    if (OMODE != 3) begin
      if (over) q = (OMODE == 1) ? '0 : MAX_RAW[W_OUT-1:0];
      else if (under) q = (OMODE == 1) ? '0 : (SYM ? MIN_RAW[W_OUT-1:0] + 1'b1 : MIN_RAW[W_OUT-1:0]);
      else if (at_min) q = MIN_RAW[W_OUT-1:0] + 1'b1;
    end
  end
endmodule
