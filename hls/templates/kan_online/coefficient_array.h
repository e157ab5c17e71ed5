static coef_t coef_l${layer}[${n_out}][${n_in}][K1][BANK_DEPTH] = ${values};
