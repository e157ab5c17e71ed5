  // Layer ${layer} forward (${n_in} -> ${n_out}): grid coordinates (§2), the k+1 basis values of
  // every input and the k+1 active coefficients of every edge, then (k+1) MACs per edge (§3).
  cell_t cell${layer}[${n_in}];
  addr_t addr${layer}[${n_in}];
  bool clamped${layer}[${n_in}];
  basis_t basis${layer}[${n_in}][K1];
  coef_t window${layer}[${n_out}][${n_in}][K1];
  act_t act${next}[${n_out}];
#pragma HLS ARRAY_PARTITION variable=basis${layer} complete dim=0
#pragma HLS ARRAY_PARTITION variable=window${layer} complete dim=0
#pragma HLS ARRAY_PARTITION variable=act${next} complete
  codesign::kan_online::grid_coordinates<layer${layer}_config>(act${layer}, cell${layer}, addr${layer}, clamped${layer});
  codesign::kan_online::read_rom<layer${layer}_config>(addr${layer}, basis_rom, basis${layer});
  codesign::kan_online::read_window<layer${layer}_config>(coef_l${layer}, cell${layer}, window${layer});
  codesign::kan_online::layer_forward<layer${layer}_config>(window${layer}, basis${layer}, act${next}, overflows);
