  // Layer ${layer} forward (${n_in} -> ${n_out}): exact dense sum, one cast, ${kind}.
  act_t pre${next}[${n_out}];
  act_t act${next}[${n_out}];
#pragma HLS ARRAY_PARTITION variable=pre${next} complete
#pragma HLS ARRAY_PARTITION variable=act${next} complete
  codesign::mlp_online::dense_forward<layer${layer}_config>(w_l${layer}, act${layer}, pre${next}, act${next}, overflows);
