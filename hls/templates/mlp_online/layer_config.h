// Layer ${layer}: ${n_in} -> ${n_out} (${n_params} weights and biases), ${kind}.
struct layer${layer}_config : mlp_config {
  static const int n_in = ${n_in};
  static const int n_out = ${n_out};
  static const bool hidden = ${hidden};
  typedef ${g_t} g_t;  // gradient at this layer's outputs (${g_name})
  // Exact intermediates: no rounding, no overflow.
  typedef ${acc_t} acc_t;
  typedef ${bwd_sum_t} bwd_sum_t;
  typedef ${upd_t} upd_t;
};
