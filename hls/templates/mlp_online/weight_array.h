static coef_t w_l${layer}[${n_out}][${n_in} + 1] = ${values};
