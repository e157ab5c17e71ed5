// online_control: sample handshake and stage sequencing of an online learner (KAN or MLP).
//
// A sample is accepted in a cycle where in_valid and ready are high; that cycle is its stage 0,
// computed from the input ports. Stages 1..N_STAGES-1 follow, one per clock, from registered
// values; the update is committed at the clock edge that ends the last stage.
//
// The first N_FRONT stages read no learned state (the KAN's grid coordinate and basis ROM reads
// of layer 0: a pure pipeline of the input), so the next sample may be accepted N_FRONT cycles
// before the commit: it reaches stage N_FRONT, where it first reads the coefficients, in the
// cycle after the commit and so reads that update. II = N_STAGES - N_FRONT, exact online SGD
// (docs/rtl.md explains why the loop from one sample's update to the next sample's prediction
// cannot be cut). At most two samples are in flight: the one at the stage counter and one
// accepted behind it (`pending`, with its own counter), which takes over at the commit.
// N_FRONT must be <= N_STAGES - N_FRONT (kan_online sizes it so), so a sample accepted behind
// another is never more than one. With N_STAGES = 1 a sample is accepted, computed and
// committed in one clock, every clock.
//
// Reset (synchronous, active high) drops every sample in flight before its commit (no update, no
// prediction unless it was already out) and leaves the learned coefficients as they are.
module online_control #(
    parameter int N_STAGES = 1,
    parameter int PRED_STAGE = 0,  // stage at whose end the prediction is ready (>= N_FRONT)
    parameter int N_FRONT = 0,     // leading stages that read no learned state (overlap with the previous sample)
    parameter int W_STAGE = (N_STAGES > 1) ? $clog2(N_STAGES) : 1  // derived, do not set
) (
    input  logic clk,
    input  logic rst,
    input  logic in_valid,
    output logic ready,                   // a sample can be accepted in this cycle
    output logic accept,                  // in_valid && ready: this cycle is the sample's stage 0
    output logic busy,                    // a sample is in stages 1..N_STAGES-1
    output logic open_behind,             // registered: busy, and a sample may be accepted behind it
    output logic take_ports,              // registered: !busy || open_behind (stage 0 reads the ports), one select
    output logic [N_STAGES-1:0] stage_on, // bit s: the sample at the stage counter is in stage s this cycle (bit 0: accept)
    output logic pred_load,               // the prediction is ready: load it at this edge
    output logic last,                    // last stage: the update is committed at this edge
    output logic hold_load,               // the accepted-behind (or only) sample ends stage N_FRONT - 1 at this edge
    output logic pred_valid,              // registered: the prediction register holds a new value
    output logic done                     // registered: the sample is finished, its update visible
);
  logic [W_STAGE-1:0] stage, stage_behind, stage_n, stage_behind_n;
  logic pending, busy_n, pending_n;  // pending: a sample accepted behind the one at the stage counter, in stage stage_behind
  // open_behind's stage test on the next counter, worked out per candidate value from the
  // registers (stage + 1, stage_behind + 1, 1) so that no comparator runs after the accept's select
  localparam int OPEN_FROM = N_STAGES - N_FRONT;  // the counter's first stage with a sample allowed behind it
  logic open_n, ahead_opens, behind_opens;
  assign ahead_opens = 32'(stage) + 1 >= OPEN_FROM;
  assign behind_opens = 32'(stage_behind) + 1 >= OPEN_FROM;

  // ready from registers only (open_behind is registered), so the accept does not lengthen the
  // path from the input ports into the first stage
  assign ready = !rst && (!busy || open_behind);
  assign accept = in_valid && ready;
  for (genvar s = 0; s < N_STAGES; s++) begin : g_stage
    if (s == 0) begin : g_first
      assign stage_on[s] = accept && !busy;
    end else begin : g_later
      assign stage_on[s] = busy && !rst && stage == W_STAGE'(s);
    end
  end
  // the last stage from a register of its own, loaded from the next state (at_last = busy && stage ==
  // N_STAGES - 1, one cycle early): the commit that every bank's write enable reads then starts at a
  // register and the reset, not at the stage counter's comparator
  logic at_last, at_hold;
  assign last = (N_STAGES == 1) ? accept : at_last && !rst;
  assign pred_load = (PRED_STAGE == 0) ? accept : stage_on[PRED_STAGE];
  generate
    if (N_FRONT == 0) begin : g_no_front
      assign hold_load = 1'b0;
    end else if (N_FRONT == 1) begin : g_front1
      assign hold_load = accept;
    end else begin : g_front
      // the sample behind ends stage N_FRONT - 1 in the last cycle of the one ahead at the
      // earliest; the one at the counter ends it before any sample is accepted behind it. A
      // register of its own, loaded from the next state like at_last, and not gated by the reset:
      // it is the clock enable of every hold register, and on the routed default spec at deep
      // (ECP5) the path from the reset through the stage tests to those enables was the critical
      // one (11.96 ns, 90 % routing). A hold loaded during a reset belongs to a sample the reset
      // drops; the next sample loads its own before any stage reads it.
      assign hold_load = at_hold;
    end
  endgenerate

  // the next state
  always_comb begin
    busy_n = busy;
    stage_n = stage;
    pending_n = pending;
    stage_behind_n = stage_behind;
    open_n = 1'b0;  // with busy_n low it does not matter
    if (N_STAGES > 1) begin
      if (busy && last) begin
        // the sample behind takes over the counter (accepted in this very cycle: it is in stage 0)
        busy_n = pending || accept;
        stage_n = pending ? stage_behind + 1'b1 : (accept ? W_STAGE'(1) : '0);
        open_n = pending ? behind_opens : (OPEN_FROM <= 1);
        pending_n = 1'b0;
      end else if (accept && !busy) begin
        busy_n = 1'b1;
        stage_n = W_STAGE'(1);
        open_n = OPEN_FROM <= 1;
      end else if (busy) begin
        stage_n = stage + 1'b1;
        open_n = ahead_opens;
        if (accept) begin
          pending_n = 1'b1;
          stage_behind_n = W_STAGE'(1);
        end else if (pending) begin
          stage_behind_n = stage_behind + 1'b1;
        end
      end
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      stage <= '0;
      pending <= 1'b0;
      stage_behind <= '0;
      open_behind <= 1'b0;
      take_ports <= 1'b1;
      pred_valid <= 1'b0;
      done <= 1'b0;
      at_last <= 1'b0;
      at_hold <= 1'b0;
    end else begin
      pred_valid <= pred_load;
      done <= last;
      busy <= busy_n;
      stage <= stage_n;
      pending <= pending_n;
      stage_behind <= stage_behind_n;
      at_last <= (N_STAGES > 1) && busy_n && stage_n == W_STAGE'(N_STAGES - 1);
      // hold_load one cycle early (N_FRONT >= 2): the sample behind or the one at the counter in stage N_FRONT - 1
      at_hold <= (N_FRONT >= 2) && ((pending_n && stage_behind_n == W_STAGE'(N_FRONT - 1))
                                    || (busy_n && stage_n == W_STAGE'(N_FRONT - 1)));
      // behind a busy sample from its stage N_STAGES - N_FRONT on, while none is pending
      open_behind <= (N_FRONT > 0) && busy_n && !pending_n && open_n;
      // the same as !busy || open_behind one cycle on, as a register of its own: the input select that
      // feeds the grid's subtract then costs one LUT level instead of two
      take_ports <= !busy_n || ((N_FRONT > 0) && !pending_n && open_n);
    end
  end
endmodule
