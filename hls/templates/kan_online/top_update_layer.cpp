    // Layer 0: its update (§6); the input layer passes no gradient on.
    codesign::kan_online::layer_update<layer0_config>(coef_l0, cell0, window0, basis0, grad1, overflows, lr_up);
