    // Layer ${layer}: gradient through its activation, to its inputs, then its update.
    layer${layer}_config::g_t delta${next}[${n_out}];
    grad_t grad${layer}[${n_in}];
#pragma HLS ARRAY_PARTITION variable=delta${next} complete
#pragma HLS ARRAY_PARTITION variable=grad${layer} complete
    codesign::mlp_online::activation_mask<layer${layer}_config>(pre${next}, grad${next}, delta${next});
    codesign::mlp_online::dense_input_gradient<layer${layer}_config>(w_l${layer}, delta${next}, grad${layer}, overflows);
    codesign::mlp_online::dense_update<layer${layer}_config>(w_l${layer}, act${layer}, delta${next}, overflows);
