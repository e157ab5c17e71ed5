  out = codesign::kan_online::read_coefficients<layer${layer}_config>(coef_l${layer}, out);
