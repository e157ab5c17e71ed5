// online_control: sample handshake and stage sequencing of an online learner (KAN or MLP).
//
// One sample is in flight at a time. It is accepted in a cycle where in_valid and ready are
// high; that cycle is its stage 0, computed from the input ports. Stages 1..N_STAGES-1 follow,
// one per clock, from registered values; the update is committed at the clock edge that ends
// the last stage, and the next sample is accepted in the cycle after, so it reads that update:
// II = N_STAGES, which exact online SGD needs (docs/rtl.md explains why the loop from one
// sample's update to the next sample's prediction cannot be cut). With N_STAGES = 1 a sample
// is accepted, computed and committed in one clock, every clock.
//
// Reset (synchronous, active high) drops the sample in flight before its commit (no update, no
// prediction unless it was already out) and leaves the learned coefficients as they are.
module online_control #(
    parameter int N_STAGES = 1,
    parameter int PRED_STAGE = 0,  // stage at whose end the prediction is ready
    parameter int W_STAGE = (N_STAGES > 1) ? $clog2(N_STAGES) : 1  // derived, do not set
) (
    input  logic clk,
    input  logic rst,
    input  logic in_valid,
    output logic ready,                   // a sample can be accepted in this cycle
    output logic accept,                  // in_valid && ready: this cycle is the sample's stage 0
    output logic busy,                    // a sample is in stages 1..N_STAGES-1 (inputs held)
    output logic [N_STAGES-1:0] stage_on, // bit s: the sample in flight is in stage s this cycle
    output logic pred_load,               // the prediction is ready: load it at this edge
    output logic last,                    // last stage: the update is committed at this edge
    output logic pred_valid,              // registered: the prediction register holds a new value
    output logic done                     // registered: the sample is finished, its update visible
);
  logic [W_STAGE-1:0] stage;

  assign ready = !rst && !busy;
  assign accept = in_valid && ready;
  for (genvar s = 0; s < N_STAGES; s++) begin : g_stage
    if (s == 0) begin : g_first
      assign stage_on[s] = accept;
    end else begin : g_later
      assign stage_on[s] = busy && !rst && stage == W_STAGE'(s);
    end
  end
  assign last = stage_on[N_STAGES-1];
  assign pred_load = stage_on[PRED_STAGE];

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      stage <= '0;
      pred_valid <= 1'b0;
      done <= 1'b0;
    end else begin
      pred_valid <= pred_load;
      done <= last;
      if (N_STAGES > 1 && accept) begin
        busy <= 1'b1;
        stage <= W_STAGE'(1);
      end else if (busy && last) begin
        busy <= 1'b0;
        stage <= '0;
      end else if (busy) begin
        stage <= stage + 1'b1;
      end
    end
  end
endmodule
