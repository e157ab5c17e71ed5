// learner_axi: AXI4-Stream and AXI4-Lite shell around an online learner's ap_ctrl_hs ports
// (kan_online / mlp_online); the generated <kind>_online_axi top connects the two.
//
// Samples (slave stream) and predictions (master stream) keep their order and none is dropped
// or made twice: a sample is accepted (s_axis_tvalid && s_axis_tready) only in a cycle where
// the learner can take it (ap_ready) and the master stream holds no prediction that would
// still be waiting at the next edge, so at most one sample is in flight or has its prediction
// waiting. A stalled sink therefore stalls the slave stream; the learner never runs ahead.
// The prediction stays in the learner's y_hat register (loaded only when the next sample's
// forward pass ends, which cannot start before this one is taken). s_axis_tready depends on
// m_axis_tready in the same cycle (a combinational path, allowed by AXI4-Stream).
//
// Stream words and registers: codesign/fpga/axi.py (and the build's axi_registers.md). The
// train flag of a sample is ANDed with CTRL.TRAIN_ENABLE when it is accepted.
//
// Coefficient access (COEF_ADDR / COEF_DATA): a read or write of COEF_DATA waits (its address
// handshake is held off) until no sample is in flight, and while it waits the slave stream
// accepts nothing, so the access never meets a sample's read or update of the banks.
//
// aresetn (synchronous, active low) resets the registers and counters, drops a sample whose
// update is not committed and a prediction not yet taken; the learned state is kept.
//
// LR_SHIFT sets the KAN core's run-time learning-rate shift (lr_up); its write waits for an idle core
// and holds the stream as a COEF_DATA access does.
//
// SATURATIONS adds up the core's `overflows`: the casts of the learner that overflowed their
// type, over every sample that ends its last stage (codesign/fpga/axi.py states the definition).
module learner_axi #(
    parameter int N_IN = 2,
    parameter int N_OUT = 1,
    parameter int W_ACT = 16,
    parameter int F_ACT = 10,
    parameter int W_COEF = 16,
    parameter int F_COEF = 10,
    parameter int HAS_COEF = 1,    // 0: the learner has no coefficient port (COEF_DATA reads 0)
    parameter int LR_SHIFT = 4,    // the build's learning-rate shift: LR_SHIFT's reset value and MIN
    parameter int LR_SPAN = 0,     // LR_SHIFT takes LR_SHIFT .. LR_SHIFT + LR_SPAN (0: only the build's)
    parameter int ADDR_WIDTH = 6,  // AXI4-Lite address bits (the low 6 are decoded)
    parameter int W_S = (((N_IN + N_OUT) * W_ACT + 1 + 7) / 8) * 8,  // derived, do not set
    parameter int W_M = ((N_OUT * W_ACT + 7) / 8) * 8                // derived, do not set
) (
    input  logic                   aclk,
    input  logic                   aresetn,
    // AXI4-Stream slave: samples
    input  logic [W_S-1:0]         s_axis_tdata,
    input  logic                   s_axis_tvalid,
    output logic                   s_axis_tready,
    // AXI4-Stream master: predictions
    output logic [W_M-1:0]         m_axis_tdata,
    output logic                   m_axis_tvalid,
    input  logic                   m_axis_tready,
    // AXI4-Lite slave: control and status
    input  logic [ADDR_WIDTH-1:0]  s_axi_awaddr,
    input  logic [2:0]             s_axi_awprot,
    input  logic                   s_axi_awvalid,
    output logic                   s_axi_awready,
    input  logic [31:0]            s_axi_wdata,
    input  logic [3:0]             s_axi_wstrb,
    input  logic                   s_axi_wvalid,
    output logic                   s_axi_wready,
    output logic [1:0]             s_axi_bresp,
    output logic                   s_axi_bvalid,
    input  logic                   s_axi_bready,
    input  logic [ADDR_WIDTH-1:0]  s_axi_araddr,
    input  logic [2:0]             s_axi_arprot,
    input  logic                   s_axi_arvalid,
    output logic                   s_axi_arready,
    output logic [31:0]            s_axi_rdata,
    output logic [1:0]             s_axi_rresp,
    output logic                   s_axi_rvalid,
    input  logic                   s_axi_rready,
    // the learner's ap_ctrl_hs ports
    output logic                   core_rst,
    output logic                   core_start,
    input  logic                   core_ready,
    input  logic                   core_done,
    input  logic                   core_idle,
    output logic [N_IN*W_ACT-1:0]  core_x,
    output logic [N_OUT*W_ACT-1:0] core_y,
    output logic                   core_train,
    input  logic [N_OUT*W_ACT-1:0] core_y_hat,
    input  logic                   core_y_hat_vld,
    output logic                   core_coef_hold,
    output logic [27:0]            core_coef_addr,
    output logic                   core_coef_we,
    output logic [W_COEF-1:0]      core_coef_wdata,
    input  logic [W_COEF-1:0]      core_coef_rdata,
    input  logic [31:0]            core_overflows,  // the core's overflow count of the cycle (registered)
    output logic [2:0]             core_lr_up       // the shift is LR_SHIFT + LR_SPAN - core_lr_up (KAN cores)
);
  `include "learner_axi_regs.svh"

  logic rst;
  assign rst = !aresetn;
  assign core_rst = rst;

  // ---------------------------------------------------------------- streams
  logic out_held;  // a prediction shown on the master stream and not yet taken
  logic out_free;  // the master stream will hold no prediction after this edge
  logic train_enable;
  assign m_axis_tvalid = !rst && (core_y_hat_vld || out_held);
  assign m_axis_tdata = W_M'(core_y_hat);
  assign out_free = !m_axis_tvalid || m_axis_tready;
  logic coef_wait;  // a COEF_DATA access is presented: hold the slave stream until it is done
  logic coef_hold;  // registered coef_wait: the banks' write port is the host's (with the core idle)
  assign core_start = s_axis_tvalid && out_free && !coef_wait && !coef_hold;
  assign s_axis_tready = core_ready && out_free && !coef_wait && !coef_hold;
  assign core_coef_hold = coef_hold;
  assign core_x = s_axis_tdata[0+:N_IN*W_ACT];
  assign core_y = s_axis_tdata[N_IN*W_ACT+:N_OUT*W_ACT];
  assign core_train = s_axis_tdata[(N_IN+N_OUT)*W_ACT] && train_enable;

  logic accepted, taken, done_train;
  assign accepted = s_axis_tvalid && s_axis_tready;
  assign taken = m_axis_tvalid && m_axis_tready;
  always_ff @(posedge aclk) begin
    if (rst) out_held <= 1'b0;
    else out_held <= m_axis_tvalid && !m_axis_tready;
  end
  // The train flags of the samples in flight, oldest first: with the overlap a sample is accepted
  // behind one not yet done, so core_done reads the flag of the oldest, not of the last accepted.
  // A flag enters the list a cycle after its accept (accepted_q, train_q: the streams' handshake
  // stays off this logic); a sample done in that cycle reads train_q itself. At most two are in
  // flight (the one done in this cycle included; online_control).
  logic accepted_q, train_q;
  logic [1:0] flight_train;
  logic [1:0] n_flight;
  assign done_train = (n_flight == 2'd0) ? train_q : flight_train[0];
  always_ff @(posedge aclk) begin
    accepted_q <= !rst && accepted;
    train_q <= core_train;
    if (rst) begin
      n_flight <= '0;
    end else if (accepted_q && !core_done) begin
      flight_train[n_flight[0]] <= train_q;
      n_flight <= n_flight + 1'b1;
    end else if (core_done && !accepted_q) begin
      flight_train[0] <= flight_train[1];
      n_flight <= n_flight - 1'b1;
    end else if (core_done && accepted_q) begin
      // the oldest leaves, the newest enters (with none listed, the newest was the one done)
      if (n_flight == 2'd1) flight_train[0] <= train_q;
      if (n_flight == 2'd2) begin
        flight_train[0] <= flight_train[1];
        flight_train[1] <= train_q;
      end
    end
  end

  // ---------------------------------------------------------------- registers
  // The counters add what happened one cycle earlier (registered events), so that the streams'
  // handshakes do not run into their 32-bit carry chains; a read sees an event from the second
  // cycle after it on.
  logic [31:0] samples, updates, predictions, saturations;
  logic clear, updated_q, taken_q;
  always_ff @(posedge aclk) begin
    updated_q <= !rst && core_done && done_train;
    taken_q <= !rst && taken;
    if (rst || clear) begin
      samples <= '0;
      updates <= '0;
      predictions <= '0;
      saturations <= '0;
    end else begin
      samples <= samples + 32'(accepted_q);
      updates <= updates + 32'(updated_q);
      predictions <= predictions + 32'(taken_q);
      saturations <= saturations + core_overflows;
    end
  end

  // write channel: address and data taken together, one response outstanding
  logic [REG_ADDR_BITS-1:0] waddr, raddr;
  logic coef_write, coef_read, coef_ready;
  logic [27:0] coef_addr;
  assign waddr = s_axi_awaddr[REG_ADDR_BITS-1:0];
  assign raddr = s_axi_araddr[REG_ADDR_BITS-1:0];
  logic lr_write;  // a write of LR_SHIFT with a range: like COEF_DATA's, it waits until no sample is in flight
  assign coef_write = s_axi_awvalid && s_axi_wvalid && waddr == REG_COEF_DATA;
  assign coef_read = s_axi_arvalid && raddr == REG_COEF_DATA;
  assign lr_write = LR_SPAN > 0 && s_axi_awvalid && s_axi_wvalid && waddr == REG_LR_SHIFT;
  assign coef_wait = coef_write || coef_read || lr_write;
  // An access first raises coef_hold (the stream then accepts nothing); once the core is idle with
  // coef_hold high, the banks' port is the host's, and HOST_CYCLES cycles later (quiet: that port
  // read with no register write in between, through kan_host's registers and coef_rdata_q) a read
  // returns the registered field, or a write goes ahead with the registered word (kan_host.sv).
  localparam int HOST_CYCLES = 4;
  logic host_now;
  logic [HOST_CYCLES-1:0] quiet;
  logic [W_COEF-1:0] coef_rdata_q;
  assign host_now = coef_hold && core_idle;
  always_ff @(posedge aclk) begin
    coef_hold <= !rst && coef_wait;
    quiet <= (!rst && host_now && !s_axi_awready) ? {quiet[HOST_CYCLES-2:0], 1'b1} : '0;
    coef_rdata_q <= core_coef_rdata;
  end
  assign coef_ready = host_now && quiet[HOST_CYCLES-1];
  assign s_axi_awready = !rst && !s_axi_bvalid && s_axi_awvalid && s_axi_wvalid && (!(coef_write || lr_write) || coef_ready);
  assign s_axi_wready = s_axi_awready;
  assign s_axi_bresp = 2'b00;
  assign clear = s_axi_awready && waddr == REG_CTRL && s_axi_wstrb[0] && s_axi_wdata[CTRL_CLEAR_COUNTERS_LSB];
  // LR_SHIFT: a write outside LR_SHIFT .. LR_SHIFT + LR_SPAN is ignored; the core sees the shift as
  // how far the product moves up from the largest shift's alignment (kan_layer). Without a range
  // (LR_SPAN = 0) the shift is a constant and a write changes nothing, at once.
  logic [7:0] lr_shift;
  if (LR_SPAN > 0) begin : g_lr_range
    logic [7:0] lr_new;
    assign lr_new = s_axi_wdata[LR_SHIFT_SHIFT_LSB+:8];
    always_ff @(posedge aclk) begin
      if (rst) begin
        lr_shift <= 8'(LR_SHIFT);
        core_lr_up <= 3'(LR_SPAN);
      end else if (s_axi_awready && lr_write && s_axi_wstrb[0] && 32'(lr_new) >= LR_SHIFT
                   && 32'(lr_new) <= LR_SHIFT + LR_SPAN) begin
        lr_shift <= lr_new;
        core_lr_up <= 3'(LR_SHIFT + LR_SPAN - 32'(lr_new));
      end
    end
  end else begin : g_lr_fixed
    assign lr_shift = 8'(LR_SHIFT);
    assign core_lr_up = '0;
  end
  always_ff @(posedge aclk) begin
    if (rst) begin
      s_axi_bvalid <= 1'b0;
      train_enable <= 1'b1;
      coef_addr <= '0;
    end else begin
      if (s_axi_awready) s_axi_bvalid <= 1'b1;
      else if (s_axi_bready) s_axi_bvalid <= 1'b0;
      if (s_axi_awready && waddr == REG_CTRL && s_axi_wstrb[0]) train_enable <= s_axi_wdata[CTRL_TRAIN_ENABLE_LSB];
      if (s_axi_awready && waddr == REG_COEF_ADDR && &s_axi_wstrb) coef_addr <= s_axi_wdata[27:0];
    end
  end
  assign core_coef_addr = coef_addr;
  assign core_coef_we = HAS_COEF != 0 && s_axi_awready && coef_write && &s_axi_wstrb;
  assign core_coef_wdata = s_axi_wdata[W_COEF-1:0];

  // read channel: the word is latched at the address handshake
  logic [31:0] rword;
  always_comb begin
    case (raddr)
      REG_ID: rword = SHELL_ID;
      REG_CTRL: rword = 32'(train_enable) << CTRL_TRAIN_ENABLE_LSB;
      REG_STATUS: rword = (32'(core_idle) << STATUS_IDLE_LSB) | (32'(m_axis_tvalid) << STATUS_OUT_VALID_LSB)
                        | (32'(s_axis_tready) << STATUS_IN_READY_LSB);
      REG_SAMPLES: rword = samples;
      REG_UPDATES: rword = updates;
      REG_PREDICTIONS: rword = predictions;
      REG_SATURATIONS: rword = saturations;
      REG_LR_SHIFT: rword = (32'(lr_shift) << LR_SHIFT_SHIFT_LSB) | (32'(LR_SHIFT & 8'hFF) << LR_SHIFT_MIN_LSB)
                          | (32'((LR_SHIFT + LR_SPAN) & 8'hFF) << LR_SHIFT_MAX_LSB);
      REG_GEOMETRY: rword = (32'(N_IN) << GEOMETRY_N_IN_LSB) | (32'(N_OUT) << GEOMETRY_N_OUT_LSB)
                          | (32'(W_ACT) << GEOMETRY_W_ACT_LSB) | (32'(F_ACT & 8'hFF) << GEOMETRY_F_ACT_LSB);
      REG_TDATA: rword = (32'(W_S) << TDATA_S_WIDTH_LSB) | (32'(W_M) << TDATA_M_WIDTH_LSB);
      REG_COEF_ADDR: rword = 32'(coef_addr);
      REG_COEF_DATA: rword = (HAS_COEF != 0) ? 32'($signed(coef_rdata_q)) : '0;
      REG_COEF_FORMAT: rword = (32'(W_COEF & 8'hFF) << COEF_FORMAT_W_COEF_LSB) | (32'(F_COEF & 8'hFF) << COEF_FORMAT_F_COEF_LSB)
                             | (32'(HAS_COEF != 0) << COEF_FORMAT_HAS_COEF_LSB);
      default: rword = '0;
    endcase
  end
  assign s_axi_arready = !rst && !s_axi_rvalid && (!coef_read || coef_ready);
  assign s_axi_rresp = 2'b00;
  always_ff @(posedge aclk) begin
    if (rst) begin
      s_axi_rvalid <= 1'b0;
    end else if (s_axi_arvalid && s_axi_arready) begin
      s_axi_rvalid <= 1'b1;
      s_axi_rdata <= rword;
    end else if (s_axi_rready) begin
      s_axi_rvalid <= 1'b0;
    end
  end
endmodule
