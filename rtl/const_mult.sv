// const_mult: y = x * C for a constant C >= 1, exact (signed x).
//
// A constant with at most MAX_TERMS set bits is a sum of shifted copies of x (one adder per extra
// bit, no DSP); a denser one is left to the synthesizer's multiplier (a DSP). C = 2^n is a shift.
module const_mult #(
    parameter int W_X = 16,
    parameter int C = 1,
    parameter int W_Y = 24,       // >= W_X + bits of C
    parameter int MAX_TERMS = 3
) (
    input  logic signed [W_X-1:0] x,
    output logic signed [W_Y-1:0] y
);
  function automatic int popcount(input int v);
    popcount = 0;
    for (int b = 0; b < 31; b++) if ((v >> b) & 1) popcount = popcount + 1;
  endfunction

  generate
    if (popcount(C) <= MAX_TERMS) begin : g_shift_add
      always_comb begin
        y = '0;
        for (int b = 0; b < 31; b++) if ((C >> b) & 1) y = y + (W_Y'(x) <<< b);
      end
    end else begin : g_multiply
      assign y = W_Y'(x) * W_Y'(C);  // C < 2^(W_Y-1): positive as a signed W_Y-bit value
    end
  endgenerate
endmodule
