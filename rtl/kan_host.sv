// kan_host: host access to one layer's coefficient banks (the AXI shell's COEF_ADDR / COEF_DATA).
//
// Coefficient m of edge (o, i) is field o of word m div P of bank (i, m mod P) (kan_bank.sv).
// A read returns that field of the word the bank shows at host_addr; a write replaces the field in
// that word as registered one clock earlier (word_q, and the target bank target_q: the shell
// writes only after a quiet cycle with the same address) and writes it back. Addresses outside the layer read 0 and write nothing.
// kan_online gates `we` so that it only reaches the banks while no sample is in flight.
module kan_host #(
    parameter int N_IN = 2,
    parameter int N_OUT = 4,
    parameter int P = 4,
    parameter int DEPTH = 3,
    parameter int N_COEF = 11,  // G + k
    parameter int W_COEF = 16,
    parameter int W_BADDR = (DEPTH > 1) ? $clog2(DEPTH) : 1  // derived, do not set
) (
    input  logic                          clk,
    input  logic                          sel,  // the address names this layer
    input  logic [7:0]                    o,
    input  logic [7:0]                    i,
    input  logic [7:0]                    m,
    input  logic                          we,
    input  logic [W_COEF-1:0]             wdata,
    output logic [W_COEF-1:0]             rdata,
    output logic [W_BADDR-1:0]            bank_addr,
    output logic [N_IN*P-1:0]             bank_we,
    output logic [N_OUT*W_COEF-1:0]       bank_wdata,
    input  logic [N_IN*P*N_OUT*W_COEF-1:0] bank_rdata
);
  localparam int W_WORD = N_OUT * W_COEF;
  localparam int LOG2P = (P > 1) ? $clog2(P) : 1;

  logic hit;
  logic [7:0] bank, word;
  logic [W_WORD-1:0] current, word_q;
  assign hit = sel && 32'(o) < N_OUT && 32'(i) < N_IN && 32'(m) < N_COEF;
  assign bank = (P > 1) ? (m & 8'(P - 1)) : 8'd0;
  assign word = (P > 1) ? (m >> LOG2P) : m;
  assign bank_addr = W_BADDR'(word);
  assign current = hit ? bank_rdata[(32'(i) * P + 32'(bank)) * W_WORD+:W_WORD] : '0;
  assign rdata = hit ? current[32'(o) * W_COEF+:W_COEF] : '0;
  always_ff @(posedge clk) word_q <= current;  // the read-modify-write starts from a register
  always_comb begin
    bank_wdata = word_q;
    bank_wdata[32'(o) * W_COEF+:W_COEF] = wdata;
  end
  // the bank a write goes to, registered like word_q (the address is stable a cycle before a write)
  logic [N_IN*P-1:0] target_q;
  for (genvar e = 0; e < N_IN * P; e++) begin : g_we
    always_ff @(posedge clk) target_q[e] <= hit && 32'(i) * P + 32'(bank) == e;
    assign bank_we[e] = we && target_q[e];
  end
endmodule
