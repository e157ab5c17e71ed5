// kan_decode: what a KAN layer needs to know about its inputs, before any coefficient is read.
//
// Per input i: the grid coordinate (kan_grid), the k+1 basis values and derivatives from the
// ROMs (docs/arithmetic.md §3), rotated into bank order, and the address of the word every
// coefficient bank reads (kan_bank.sv). Bank b holds window position j = (b - cell) mod P,
// unused when j > K (its basis value is then 0 and the bank is not written).
// Combinational, with four optional cuts (pipe_reg): CUT_SCALE the scaled offset inside
// kan_grid, CUT_GRID the grid coordinate and the ROM rows (cell, clamp, the rows read at the
// unclamped address and picked by the clamp), CUT_DECODE every output (rotation and bank address),
// CUT_ROWS the rotated basis rows alone (bb, db), after CUT_DECODE: the bank addresses go on
// to the banks, so the ROM read and the bank read share a stage and the products read both
// from registers (kan_online: the rows register sits beside the bank read register).
module kan_decode #(
    parameter int N_IN = 2,
    parameter int G = 8,
    parameter int K = 3,
    parameter int A = 6,
    parameter int P = 4,        // banks: the power of two >= K+1
    parameter int W_BADDR = 2,  // bits of a bank address
    parameter int W_ACT = 16,
    parameter int W_B = 18,
    parameter int W_D = 18,
    parameter int LO_RAW = -1024,
    parameter int INV_H = 1,
    parameter int U_SHIFT = 6,
    parameter int HAS_D = 1,     // the derivative ROM is read (every layer but the first)
    parameter int CUT_SCALE = 0,
    parameter int CUT_GRID = 0,
    parameter int CUT_DECODE = 0,
    parameter int CUT_ROWS = 0,
    parameter int OFFSET_IN = 0,  // 1: x is x - LO_RAW already, W_X bits (kan_grid)
    parameter int W_X = W_ACT,
    parameter BASIS_FILE = "",   // 2^A words of (K+1)*W_B bits, B[j] at [j*W_B +: W_B]
    parameter DBASIS_FILE = ""   // the same for the derivative ROM
) (
    input  logic                      clk,
    input  logic [N_IN*W_X-1:0]       x,
    output logic [N_IN-1:0]           clamped,
    output logic [N_IN*P*W_B-1:0]     bb,     // (i, b) at [(i*P+b)*W_B +: W_B]
    output logic [N_IN*P*W_D-1:0]     db,
    output logic [N_IN*P*W_BADDR-1:0] baddr,
    output logic [N_IN*P-1:0]         used,
    // what the register in front of bb / db loads (the rows register, else the decode register): a DSP
    // that holds that register itself reads these (kan_layer ECP5_DSP)
    output logic [N_IN*P*W_B-1:0]     bb_pre,
    output logic [N_IN*P*W_D-1:0]     db_pre
);
  localparam int LOG2P = $clog2(P);  // P >= 2 (K >= 1)
  localparam int W_CELL = (G > 1) ? $clog2(G) : 1;

  logic [(K+1)*W_B-1:0] basis_rom[0:(1<<A)-1];
  logic [(K+1)*W_D-1:0] dbasis_rom[0:(1<<A)-1];
  initial begin
    if (BASIS_FILE != "") $readmemh(BASIS_FILE, basis_rom);
    if (HAS_D != 0 && DBASIS_FILE != "") $readmemh(DBASIS_FILE, dbasis_rom);
  end

  logic [N_IN-1:0] clamped_d;
  logic [N_IN*P*W_B-1:0] bb_d, bb_q;
  logic [N_IN*P*W_D-1:0] db_d, db_q;
  logic [N_IN*P*W_BADDR-1:0] baddr_d;
  logic [N_IN*P-1:0] used_d;
  pipe_reg #(.W(N_IN), .ON(CUT_DECODE)) u_cut_clamped (.clk(clk), .d(clamped_d), .q(clamped));
  pipe_reg #(.W(N_IN * P * W_B), .ON(CUT_DECODE)) u_cut_bb (.clk(clk), .d(bb_d), .q(bb_q));
  pipe_reg #(.W(N_IN * P * W_D), .ON(CUT_DECODE)) u_cut_db (.clk(clk), .d(db_d), .q(db_q));
  pipe_reg #(.W(N_IN * P * W_B), .ON(CUT_ROWS)) u_cut_rows_b (.clk(clk), .d(bb_q), .q(bb));
  pipe_reg #(.W(N_IN * P * W_D), .ON(CUT_ROWS)) u_cut_rows_d (.clk(clk), .d(db_q), .q(db));
  assign bb_pre = (CUT_ROWS != 0) ? bb_q : bb_d;
  assign db_pre = (CUT_ROWS != 0) ? db_q : db_d;
  pipe_reg #(.W(N_IN * P * W_BADDR), .ON(CUT_DECODE)) u_cut_baddr (.clk(clk), .d(baddr_d), .q(baddr));
  pipe_reg #(.W(N_IN * P), .ON(CUT_DECODE)) u_cut_used (.clk(clk), .d(used_d), .q(used));

  for (genvar i = 0; i < N_IN; i++) begin : g_input
    logic [W_CELL-1:0] cell_g, cell_idx;
    logic [A-1:0] addr_raw;
    logic low, high, clamped_g;
    logic [LOG2P-1:0] rot;
    logic [W_CELL-1:0] qbase;
    logic [(K+1)*W_B-1:0] b_row, b_row_g;
    logic [(K+1)*W_D-1:0] d_row, d_row_g;

    kan_grid #(
        .W_ACT(W_ACT), .LO_RAW(LO_RAW), .INV_H(INV_H), .U_SHIFT(U_SHIFT), .A(A), .G(G), .W_CELL(W_CELL),
        .CUT_SCALE(CUT_SCALE), .OFFSET_IN(OFFSET_IN), .W_X(W_X)
    ) u_grid (
        .clk(clk), .x(x[i*W_X+:W_X]), .cell_idx(cell_g), .addr_raw(addr_raw), .low(low), .high(high), .clamped(clamped_g)
    );
    // The ROMs are read at the unclamped address, beside the clamp, which then picks the row of the
    // first or last address: the clamp is not in front of the ROM (the rows equal a read at the clamped address)
    always_comb begin : read_rom
      b_row_g = low ? basis_rom[0] : (high ? basis_rom[(1 << A) - 1] : basis_rom[addr_raw]);
      d_row_g = '0;
      if (HAS_D != 0) d_row_g = low ? dbasis_rom[0] : (high ? dbasis_rom[(1 << A) - 1] : dbasis_rom[addr_raw]);
    end
    // the grid register holds the cell, the clamp and the ROM rows
    pipe_reg #(.W(W_CELL + 1 + (K + 1) * (W_B + W_D)), .ON(CUT_GRID)) u_cut_grid (
        .clk(clk), .d({cell_g, clamped_g, b_row_g, d_row_g}), .q({cell_idx, clamped_d[i], b_row, d_row})
    );

    assign rot = LOG2P'(cell_idx);
    if (W_CELL > LOG2P) begin : g_qbase
      assign qbase = cell_idx >> LOG2P;
    end else begin : g_qbase_zero  // every cell is below P: one word per bank
      assign qbase = '0;
    end

    for (genvar b = 0; b < P; b++) begin : g_bank
      logic [LOG2P-1:0] j;
      assign j = LOG2P'(b) - rot;  // window position held by bank b (mod P)
      assign used_d[i*P+b] = j <= LOG2P'(K);  // K <= P - 1 fits
      assign bb_d[(i*P+b)*W_B+:W_B] = used_d[i*P+b] ? b_row[j*W_B+:W_B] : '0;
      assign db_d[(i*P+b)*W_D+:W_D] = used_d[i*P+b] ? d_row[j*W_D+:W_D] : '0;
      // the window starts in word cell div P; banks below cell mod P hold its wrap into the next word
      assign baddr_d[(i*P+b)*W_BADDR+:W_BADDR] = W_BADDR'(qbase) + W_BADDR'(LOG2P'(b) < rot);
    end
  end
endmodule
