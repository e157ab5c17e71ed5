// The CUTS bits, rendered by codesign from codesign.fpga.pipeline.CUT_BITS (edit that table, not this file).
// `include it inside a module that has the parameter CUTS.
localparam int CUT_GRID = (CUTS >> 0) & 1;  // the grid coordinate
localparam int CUT_DECODE = (CUTS >> 1) & 1;  // the basis ROM read, rotation and bank address
localparam int CUT_READ = (CUTS >> 2) & 1;  // the coefficient bank read
localparam int CUT_MULT = (CUTS >> 3) & 1;  // the forward products (B*c, D*c)
localparam int CUT_SUM = (CUTS >> 4) & 1;  // the forward sums, before their cast
localparam int CUT_ERR = (CUTS >> 5) & 1;  // the error, after its cast
localparam int CUT_GMULT = (CUTS >> 6) & 1;  // the backward products g*dphi
localparam int CUT_GSUM = (CUTS >> 7) & 1;  // the backward sum times 1/h, before its cast
localparam int CUT_UMULT = (CUTS >> 8) & 1;  // the update products g*B
localparam int CUT_UFULL = (CUTS >> 9) & 1;  // the update difference, before its cast
localparam int CUT_SCALE = (CUTS >> 10) & 1;  // the grid's scaled offset, before the clamp
localparam int CUT_ROUND = (CUTS >> 11) & 1;  // inside every cast, after the rounding
localparam int CUT_FORWARD = (CUTS >> 12) & 1;  // no register: the bank read joins the overlapped front, forwarding
localparam int CUT_ROWS = (CUTS >> 13) & 1;  // the basis rows alone, beside the bank read (not with FORWARD)
localparam int CUT_BRAM_OUT = (CUTS >> 14) & 1;  // the block-RAM bank word, after the mux over its RAMs (block-RAM banks only)
localparam int CUT_SHARED_IN = (CUTS >> 15) & 1;  // the shared multipliers' operands, after their mux (shared products only)
