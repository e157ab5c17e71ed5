#ifdef __SYNTHESIS__
static coef_t coef_l${layer}[${n_out}][${n_in}][K1][BANK_DEPTH] = ${values};
#else
// C simulation: the same initial values as bit patterns, copied in before the first sample (g++
// compiles a large initializer of fixed-point constructors for minutes, a table of integers at once)
static coef_t coef_l${layer}[${n_out}][${n_in}][K1][BANK_DEPTH];
static const ${word_t} coef_l${layer}_bits[${n_out}][${n_in}][K1][BANK_DEPTH] = ${bits};
static bool fill_coef_l${layer}() {
  coef_t* c = &coef_l${layer}[0][0][0][0];
  const ${word_t}* b = &coef_l${layer}_bits[0][0][0][0];
  for (int n = 0; n < ${n_out} * ${n_in} * K1 * BANK_DEPTH; n++) c[n].range(coef_t::width - 1, 0) = b[n];
  return true;
}
static const bool coef_l${layer}_filled = fill_coef_l${layer}();
#endif
