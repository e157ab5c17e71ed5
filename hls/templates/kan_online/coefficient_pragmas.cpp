#pragma HLS ARRAY_PARTITION variable=coef_l${layer} complete dim=1
#pragma HLS ARRAY_PARTITION variable=coef_l${layer} complete dim=2
#pragma HLS ARRAY_PARTITION variable=coef_l${layer} complete dim=3
