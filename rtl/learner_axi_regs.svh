// learner_axi_regs.svh: the AXI4-Lite register map of learner_axi.sv.
// Generated from codesign/fpga/axi.py (REGISTERS); edit that table, not this file.
localparam int REG_ADDR_BITS = 5;
localparam logic [31:0] SHELL_ID = 32'h4C524E01;
localparam logic [REG_ADDR_BITS-1:0] REG_ID = 5'h00;
localparam logic [REG_ADDR_BITS-1:0] REG_CTRL = 5'h04;
localparam int CTRL_TRAIN_ENABLE_LSB = 0;
localparam int CTRL_CLEAR_COUNTERS_LSB = 1;
localparam logic [REG_ADDR_BITS-1:0] REG_STATUS = 5'h08;
localparam int STATUS_IDLE_LSB = 0;
localparam int STATUS_OUT_VALID_LSB = 1;
localparam int STATUS_IN_READY_LSB = 2;
localparam logic [REG_ADDR_BITS-1:0] REG_SAMPLES = 5'h0C;
localparam logic [REG_ADDR_BITS-1:0] REG_UPDATES = 5'h10;
localparam logic [REG_ADDR_BITS-1:0] REG_PREDICTIONS = 5'h14;
localparam logic [REG_ADDR_BITS-1:0] REG_GEOMETRY = 5'h18;
localparam int GEOMETRY_N_IN_LSB = 0;
localparam int GEOMETRY_N_OUT_LSB = 8;
localparam int GEOMETRY_W_ACT_LSB = 16;
localparam int GEOMETRY_F_ACT_LSB = 24;
localparam logic [REG_ADDR_BITS-1:0] REG_TDATA = 5'h1C;
localparam int TDATA_S_WIDTH_LSB = 0;
localparam int TDATA_M_WIDTH_LSB = 16;
