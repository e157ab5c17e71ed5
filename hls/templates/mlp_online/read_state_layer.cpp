  out = codesign::mlp_online::read_weights<layer${layer}_config>(w_l${layer}, out);
