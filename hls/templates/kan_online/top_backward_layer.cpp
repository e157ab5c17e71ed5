    // Layer ${layer}: gradient to its inputs (§5), then its update (§6).
    dbasis_t dbasis${layer}[${n_in}][K1];
    grad_t grad${layer}[${n_in}];
#pragma HLS ARRAY_PARTITION variable=dbasis${layer} complete dim=0
#pragma HLS ARRAY_PARTITION variable=grad${layer} complete
    codesign::kan_online::read_rom<layer${layer}_config>(addr${layer}, dbasis_rom, dbasis${layer});
    codesign::kan_online::layer_input_gradient<layer${layer}_config>(window${layer}, dbasis${layer}, clamped${layer}, grad${next}, grad${layer}, overflows);
    codesign::kan_online::layer_update<layer${layer}_config>(coef_l${layer}, cell${layer}, window${layer}, basis${layer}, grad${next}, overflows, lr_up);
