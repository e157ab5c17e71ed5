// dsp_mult: one product a * b with its optional registers, for the families whose synthesis does not
// pack registers into the DSP block (ECP5: Yosys synth_ecp5 maps a multiply to a bare MULT18X18D and
// leaves the pipeline registers around it in the fabric, where the routes to and from the DSP row then
// sit between two fabric registers). Included once, by kan_layer.sv.
//
// REG_A / REG_B: a and b are the values one cycle before the product reads them (the inputs of the
// pipeline registers the RTL has there anyway); REG_P: p is the product one cycle later. The cycle
// count is the one of those fabric registers: the registers move into the DSP, none is added.
// ECP5 = 1 with both operands at most 18 bits (a may be unsigned: SIGNEDA): one MULT18X18D holds all
// three registers, under synthesis. Otherwise, and in simulation, the behavioural registers below,
// bit for bit the same (MULT18X18D has no simulation model; the co-simulation runs this form).
module dsp_mult #(
    parameter int W_A = 18,
    parameter int A_SIGNED = 1,  // 0: a is unsigned
    parameter int W_B = 18,      // b is signed
    parameter int W_P = 36,      // the product, sign-extended or cut to W_P bits (exact when W_P >= W_A + W_B + 1 - A_SIGNED)
    parameter int REG_A = 0,
    parameter int REG_B = 0,
    parameter int REG_P = 0,
    parameter int ECP5 = 0
) (
    input  logic           clk,
    input  logic [W_A-1:0] a,
    input  logic [W_B-1:0] b,
    output logic [W_P-1:0] p
);
`ifdef SYNTHESIS
  localparam bit SYNTH = 1'b1;
`else
  localparam bit SYNTH = 1'b0;
`endif
  localparam int PRIMITIVE = (SYNTH && ECP5 != 0 && W_A <= 18 && W_B <= 18) ? 1 : 0;
  if (PRIMITIVE != 0) begin : g_mult18x18d
`ifdef SYNTHESIS
    logic [17:0] a18, b18;
    logic [35:0] p36;
    assign a18 = (A_SIGNED != 0) ? 18'($signed(a)) : 18'(a);
    assign b18 = 18'($signed(b));
    MULT18X18D #(
        .REG_INPUTA_CLK((REG_A != 0) ? "CLK0" : "NONE"), .REG_INPUTB_CLK((REG_B != 0) ? "CLK0" : "NONE"),
        .REG_OUTPUT_CLK((REG_P != 0) ? "CLK0" : "NONE"), .GSR("DISABLED"), .RESETMODE("SYNC")
    ) u_dsp (
        .A0(a18[0]), .A1(a18[1]), .A2(a18[2]), .A3(a18[3]), .A4(a18[4]), .A5(a18[5]), .A6(a18[6]), .A7(a18[7]), .A8(a18[8]),
        .A9(a18[9]), .A10(a18[10]), .A11(a18[11]), .A12(a18[12]), .A13(a18[13]), .A14(a18[14]), .A15(a18[15]), .A16(a18[16]),
        .A17(a18[17]),
        .B0(b18[0]), .B1(b18[1]), .B2(b18[2]), .B3(b18[3]), .B4(b18[4]), .B5(b18[5]), .B6(b18[6]), .B7(b18[7]), .B8(b18[8]),
        .B9(b18[9]), .B10(b18[10]), .B11(b18[11]), .B12(b18[12]), .B13(b18[13]), .B14(b18[14]), .B15(b18[15]), .B16(b18[16]),
        .B17(b18[17]),
        .SIGNEDA((A_SIGNED != 0) ? 1'b1 : 1'b0), .SIGNEDB(1'b1), .SOURCEA(1'b0), .SOURCEB(1'b0),
        .CLK0(clk), .CE0(1'b1), .RST0(1'b0),
        .P0(p36[0]), .P1(p36[1]), .P2(p36[2]), .P3(p36[3]), .P4(p36[4]), .P5(p36[5]), .P6(p36[6]), .P7(p36[7]), .P8(p36[8]),
        .P9(p36[9]), .P10(p36[10]), .P11(p36[11]), .P12(p36[12]), .P13(p36[13]), .P14(p36[14]), .P15(p36[15]),
        .P16(p36[16]), .P17(p36[17]), .P18(p36[18]), .P19(p36[19]), .P20(p36[20]), .P21(p36[21]), .P22(p36[22]),
        .P23(p36[23]), .P24(p36[24]), .P25(p36[25]), .P26(p36[26]), .P27(p36[27]), .P28(p36[28]), .P29(p36[29]),
        .P30(p36[30]), .P31(p36[31]), .P32(p36[32]), .P33(p36[33]), .P34(p36[34]), .P35(p36[35])
    );
    assign p = W_P'($signed(p36));
`endif
  end else begin : g_behavioural
    logic [W_A-1:0] a_q;
    logic [W_B-1:0] b_q;
    logic [W_P-1:0] prod;
    if (REG_A != 0) begin : g_reg_a
      always_ff @(posedge clk) a_q <= a;
    end else begin : g_wire_a
      assign a_q = a;
    end
    if (REG_B != 0) begin : g_reg_b
      always_ff @(posedge clk) b_q <= b;
    end else begin : g_wire_b
      assign b_q = b;
    end
    assign prod = W_P'($signed({(A_SIGNED != 0) ? a_q[W_A-1] : 1'b0, a_q}) * $signed(b_q));
    if (REG_P != 0) begin : g_reg_p
      always_ff @(posedge clk) p <= prod;
    end else begin : g_wire_p
      assign p = prod;
    end
  end
endmodule

`ifdef SYNTHESIS
// The ports of ECP5's MULT18X18D that dsp_mult connects, declared for the front end; synth_ecp5 replaces
// this black box by its own cell library's (cells_bb_ecp5.v), which nextpnr-ecp5 places.
(* blackbox *)
module MULT18X18D #(
    parameter REG_INPUTA_CLK = "NONE", parameter REG_INPUTB_CLK = "NONE", parameter REG_OUTPUT_CLK = "NONE",
    parameter GSR = "ENABLED", parameter RESETMODE = "SYNC"
) (
    input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
    input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
    input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, RST0,
    output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
    output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34, P35
);
endmodule
`endif
