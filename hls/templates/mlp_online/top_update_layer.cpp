    // Layer 0: gradient through its activation, then its update; the input layer passes no gradient on.
    layer0_config::g_t delta1[${n_out}];
#pragma HLS ARRAY_PARTITION variable=delta1 complete
    codesign::mlp_online::activation_mask<layer0_config>(pre1, grad1, delta1);
    codesign::mlp_online::dense_update<layer0_config>(w_l0, act0, delta1, overflows);
