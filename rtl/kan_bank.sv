// kan_bank: one coefficient bank of one layer input: asynchronous read (or, with SYNC_READ, a read
// registered at the clock edge, as block RAM reads), synchronous write.
//
// Coefficient m of every edge (o, i) lives in bank m mod P at address m div P, so the k+1
// coefficients a sample touches (m = cell..cell+k) sit in k+1 different banks: each bank is
// read and written at most once per sample. A word holds that coefficient for all N_OUT
// outputs o (coefficient of output o in bits [o*W_COEF +: W_COEF]); the edges of one input
// share the address because they share the cell. The array maps to distributed RAM (LUTRAM);
// with SYNC_READ (deep banks, codesign.fpga.kan.cycles.kan_bank_memory) to block RAM: rdata is then
// the word at the raddr of the previous edge, read before that edge's write (kan_layer's read cut,
// moved into the RAM, so forwarding in kan_layer stays as it is).
// Reset does not touch it: the learned coefficients survive a reset (as Vitis HLS arrays do).
// With HOST_PORT, the host port (kan_host.sv) shares the write port: its address is host_addr
// while host_mode (a registered signal: kan_online raises it only while no sample is in flight,
// so no update is written then), host_rdata the word there (a LUTRAM's read at the write address,
// so the bank stays one write and two read ports), written when host_we. Without HOST_PORT the
// bank has no host logic.
module kan_bank #(
    parameter int W_WORD = 64,
    parameter int DEPTH  = 3,
    parameter int W_ADDR = 2,
    parameter INIT_FILE = "",  // hex words, one per line (none: no initial values)
    parameter int HOST_PORT = 0,
    parameter int SYNC_READ = 0
) (
    input  logic              clk,
    input  logic [W_ADDR-1:0] raddr,
    output logic [W_WORD-1:0] rdata,
    input  logic              we,
    input  logic [W_ADDR-1:0] waddr,
    input  logic [W_WORD-1:0] wdata,
    input  logic              host_mode,
    input  logic [W_ADDR-1:0] host_addr,
    output logic [W_WORD-1:0] host_rdata,
    input  logic              host_we,
    input  logic [W_WORD-1:0] host_wdata
);
  // Both memories asked for by name, as codesign.fpga.kan.cycles.kan_bank_memory chose them: left to
  // choose, Yosys takes a single-port LUTRAM of a deep bank (one address for read and write when no
  // register follows F), and block RAM for a LUTRAM bank of a few hundred words whose read register
  // it can absorb (without the bram_out register the placement gives block RAM only)
  localparam string RAM_STYLE = (SYNC_READ != 0) ? "block" : "distributed";
  (* ram_style = RAM_STYLE *) logic [W_WORD-1:0] mem[0:DEPTH-1]  /*verilator public_flat_rd*/;

  initial if (INIT_FILE != "") $readmemh(INIT_FILE, mem);

  // the writes below are `always @(posedge clk)`, not always_ff: the initial $readmemh also writes
  // mem, and IEEE 1800 (9.2.2.4) allows an always_ff variable no other writer

  if (SYNC_READ != 0) begin : g_sync_read
    always @(posedge clk) rdata <= mem[raddr];
  end else begin : g_async_read
    assign rdata = mem[raddr];
  end
  if (HOST_PORT != 0) begin : g_host
    logic [W_ADDR-1:0] port_addr;
    assign port_addr = host_mode ? host_addr : waddr;
    always @(posedge clk) begin
      if (we || host_we) mem[port_addr] <= host_mode ? host_wdata : wdata;
    end
    assign host_rdata = mem[port_addr];
  end else begin : g_no_host
    always @(posedge clk) begin
      if (we) mem[waddr] <= wdata;
    end
    assign host_rdata = '0;
  end
endmodule
