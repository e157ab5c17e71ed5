void ${learner}_top(const act_t x[N_IN], const act_t y[N_OUT], bool train, act_t y_hat[N_OUT]) {
  // Ports (manifest.json): x, y and y_hat as one packed word each, with valid signals, and
  // the ap_ctrl_hs block handshake (ap_start / ap_done / ap_idle / ap_ready).
#pragma HLS INTERFACE ap_ctrl_hs port=return
#pragma HLS INTERFACE ap_vld port=x
#pragma HLS INTERFACE ap_vld port=y
#pragma HLS INTERFACE ap_none port=train
#pragma HLS INTERFACE ap_vld port=y_hat
#pragma HLS ARRAY_RESHAPE variable=x complete dim=0
#pragma HLS ARRAY_RESHAPE variable=y complete dim=0
#pragma HLS ARRAY_RESHAPE variable=y_hat complete dim=0
${pipeline_pragmas}
  codesign::no_overflow_count none;
  ${learner}_sample(x, y, train, y_hat, none, LR_SHIFT_MAX - LR_SHIFT);  // the build's shift
}

// The same learner on the same state, also telling how many of the sample's casts overflowed their
// type (the AXI top's SATURATIONS register), at the learning-rate shift LR_SHIFT_MAX - lr_up.
void ${learner}_top_counted(const act_t x[N_IN], const act_t y[N_OUT], bool train, act_t y_hat[N_OUT],
                            unsigned& overflows, unsigned lr_up) {
#pragma HLS ARRAY_RESHAPE variable=x complete dim=0
#pragma HLS ARRAY_RESHAPE variable=y complete dim=0
#pragma HLS ARRAY_RESHAPE variable=y_hat complete dim=0
${pipeline_pragmas}
  codesign::overflow_count count;
  ${learner}_sample(x, y, train, y_hat, count, lr_up);
  overflows = count.n;
}
