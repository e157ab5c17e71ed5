// Output error of the online learners (docs/arithmetic.md §4), shared by KAN and MLP.
#ifndef CODESIGN_ONLINE_ERROR_H_
#define CODESIGN_ONLINE_ERROR_H_

#include <ap_fixed.h>

#include "fixed_bits.h"

namespace codesign {

// e = cast_err_t(y_hat - y): the difference is exact (one more integer bit), the
// assignment to ERR is the only rounding and saturation. e is the gradient of 0.5 * e^2.
// COUNT counts the casts' overflows (fixed_bits.h).
template <class ACT, class ERR, int N, class COUNT>
void output_error(const ACT y_hat[N], const ACT y[N], ERR e[N], COUNT& overflows) {
#pragma HLS INLINE
output_error_loop:
  for (int o = 0; o < N; o++) {
#pragma HLS UNROLL
    e[o] = cast_counted<ERR>(y_hat[o] - y[o], overflows);
  }
}

template <class ACT, class ERR, int N>
void output_error(const ACT y_hat[N], const ACT y[N], ERR e[N]) {
#pragma HLS INLINE
  no_overflow_count none;
  output_error<ACT, ERR, N>(y_hat, y, e, none);
}

}  // namespace codesign

#endif  // CODESIGN_ONLINE_ERROR_H_
