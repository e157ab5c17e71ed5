// Layer ${layer}: ${n_in} -> ${n_out} (${edges} edges, ${n_params} coefficients).
struct layer${layer}_config : kan_config {
  static const int n_in = ${n_in};
  static const int n_out = ${n_out};
  typedef ${g_t} g_t;  // gradient at this layer's outputs (${g_name})
  // Exact intermediates (docs/arithmetic.md §9): no rounding, no overflow.
  typedef ${fwd_acc_t} fwd_acc_t;
  typedef ${dacc_t} dacc_t;
  typedef ${bwd_sum_t} bwd_sum_t;
  typedef ${upd_t} upd_t;
};
