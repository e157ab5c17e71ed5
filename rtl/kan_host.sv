// kan_host: host access to one layer's coefficient banks (the AXI shell's COEF_ADDR / COEF_DATA).
//
// Coefficient m of edge (o, i) is field o of word m div P of bank (i, m mod P) (kan_bank.sv).
// Every step of an access is registered, so that neither the address decode nor the multiplexers
// over the banks sit on the banks' ports: the words the banks show at host_addr (rdata_q), the bank
// and field the address names (one-hot, target_q and field_q), the word of that bank (word_q), the
// field read (rdata), and the word to write back, word_q with the field replaced (bank_wdata). The
// shell lets an access go ahead only after HOST_CYCLES quiet cycles with the same address and data.
// Addresses outside the layer read 0 and write nothing.
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
  assign hit = sel && 32'(o) < N_OUT && 32'(i) < N_IN && 32'(m) < N_COEF;
  assign bank = (P > 1) ? (m & 8'(P - 1)) : 8'd0;
  assign word = (P > 1) ? (m >> LOG2P) : m;
  assign bank_addr = W_BADDR'(word);

  logic [N_IN*P*W_WORD-1:0] rdata_q;
  logic [N_IN*P-1:0] target_q;
  logic [N_OUT-1:0] field_q;
  always_ff @(posedge clk) rdata_q <= bank_rdata;
  for (genvar e = 0; e < N_IN * P; e++) begin : g_target
    always_ff @(posedge clk) target_q[e] <= hit && 32'(i) * P + 32'(bank) == e;
    assign bank_we[e] = we && target_q[e];
  end
  for (genvar f = 0; f < N_OUT; f++) begin : g_field
    always_ff @(posedge clk) field_q[f] <= hit && 32'(o) == f;
  end

  logic [W_WORD-1:0] current, word_q, replaced;
  logic [W_COEF-1:0] field;
  always_comb begin
    current = '0;
    for (int e = 0; e < N_IN * P; e++) current = current | (target_q[e] ? rdata_q[e*W_WORD+:W_WORD] : '0);
    field = '0;
    for (int f = 0; f < N_OUT; f++) begin
      field = field | (field_q[f] ? word_q[f*W_COEF+:W_COEF] : '0);
      replaced[f*W_COEF+:W_COEF] = field_q[f] ? wdata : word_q[f*W_COEF+:W_COEF];
    end
  end
  always_ff @(posedge clk) begin
    word_q <= current;
    rdata <= field;
    bank_wdata <= replaced;
  end
endmodule
