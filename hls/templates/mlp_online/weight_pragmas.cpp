#pragma HLS ARRAY_PARTITION variable=w_l${layer} complete dim=0
