// kan_grid: grid coordinate of one input on the uniform grid (docs/arithmetic.md §2).
//
//   u = ((x - LO_RAW) * INV_H) >> U_SHIFT    (floor; a left shift when U_SHIFT < 0)
//   u < 0 -> 0, u > U_MAX -> U_MAX, and either case sets `clamped`
//   cell = u >> A (0..G-1), the ROM address u mod 2^A, or 0 (low) / 2^A - 1 (high) when clamped
//
// INV_H is 1 when the cell width is a power of two: the multiply is then a shift.
// OFFSET_IN = 1: the input is {above, x - LO_RAW}, W_X bits: the offset unsaturated, W_X - 1 bits
// (the previous layer's forward cast delivers it from its rounding chain, fixed_cast's `minus`),
// and whether u > U_MAX, which that layer compares beside the chain, so neither a subtraction nor
// the wide comparison is here; kan_online uses it only where the act type saturates to values that
// the grid clamps anyway, so the unsaturated offset gives the same cell, address and clamp.
// Combinational; CUT_SCALE registers the scaled offset (pipe_reg), before the clamp.
module kan_grid #(
    parameter int W_ACT   = 16,
    parameter int LO_RAW  = -1024,  // grid start in act_t raw units
    parameter int INV_H   = 1,      // 1/h mantissa (unsigned)
    parameter int U_SHIFT = 6,      // right shift from (x - lo) * INV_H to u
    parameter int A       = 6,      // ROM address bits
    parameter int G       = 8,      // cells
    parameter int W_CELL  = 3,      // bits of the cell index (>= 1)
    parameter int CUT_SCALE = 0,
    parameter int OFFSET_IN = 0,    // 1: x is x - LO_RAW already (INV_H must be 1)
    parameter int W_X     = W_ACT   // width of x
) (
    input  logic                     clk,
    input  logic signed [W_X-1:0]   x,
    output logic        [W_CELL-1:0] cell_idx,
    output logic        [A-1:0]      addr_raw,  // the ROM address before the clamp: u mod 2^A
    output logic                     low,       // u < 0: the ROM address is 0
    output logic                     high,      // u > U_MAX: the ROM address is 2^A - 1
    output logic                     clamped
);
  localparam int W_INV = $clog2(INV_H + 1);
  localparam int W_P = W_X + 1 + W_INV + 1;  // (x - lo) * INV_H, signed
  localparam int LEFT = (U_SHIFT < 0) ? -U_SHIFT : 0;
  localparam int W_U = ((W_P + LEFT > A + W_CELL + 1) ? W_P + LEFT : A + W_CELL + 1) + 1;

  logic signed [W_X:0] offset;
  logic above_in;
  logic signed [W_P-1:0] scaled_d, scaled;
  logic signed [W_U-1:0] u;
  logic negative, above;

  if (OFFSET_IN != 0) begin : g_offset_in
    assign offset = (W_X + 1)'($signed(x[W_X-2:0]));
    assign above_in = x[W_X-1];
  end else begin : g_subtract
    assign offset = (W_X + 1)'(x) - (W_X + 1)'(LO_RAW);
    assign above_in = 1'b0;
  end
  const_mult #(.W_X(W_X + 1), .C(INV_H), .W_Y(W_P)) u_scale (.x(offset), .y(scaled_d));
  pipe_reg #(.W(W_P), .ON(CUT_SCALE)) u_cut_scale (.clk(clk), .d(scaled_d), .q(scaled));
  generate
    if (U_SHIFT >= 0) begin : g_right
      assign u = W_U'(scaled >>> U_SHIFT);
    end else begin : g_left
      assign u = W_U'(scaled) <<< LEFT;
    end
  endgenerate

  // u < 0: the sign bit. u > U_MAX = G * 2^A - 1 when u >= 0: a bit above the cell index is set,
  // or the cell index is >= G (only possible when G is not a power of two). No wide comparator.
  assign negative = u[W_U-1];
  if (OFFSET_IN != 0) begin : g_above_in
    assign above = above_in;
  end else begin : g_above
    assign above = !negative && ((|u[W_U-2:A+W_CELL]) || ({1'b0, u[A+:W_CELL]} >= (W_CELL + 1)'(G)));
  end
  assign clamped = negative || above;
  assign low = negative;
  assign high = above;
  assign addr_raw = u[A-1:0];
  assign cell_idx = negative ? '0 : (above ? W_CELL'(G - 1) : u[A+:W_CELL]);
endmodule
