// The assignment T t = v; of ap_fixed.h (cast_T of docs/arithmetic.md, rtl/fixed_cast.sv) behind a C interface.
//
// Compiled with g++ into a shared library for tests/ops/test_fixed_cast.py, which defines the
// shapes: FIXED_CAST_SHAPES is a list of X(index, W_IN, I_IN, W_OUT, I_OUT, SIGNED), the source
// ap_fixed<W_IN, I_IN> and the target ap_[u]fixed<W_OUT, I_OUT, Q, O> in all 7 x 4 modes.
#include <ap_fixed.h>

#include "fixed_bits.h"

namespace {

template <int W, int I, int S, int Q, int O>
struct target {
  typedef ap_fixed<W, I, static_cast<ap_q_mode>(Q), static_cast<ap_o_mode>(O)> type;
};

template <int W, int I, int Q, int O>
struct target<W, I, 0, Q, O> {
  typedef ap_ufixed<W, I, static_cast<ap_q_mode>(Q), static_cast<ap_o_mode>(O)> type;
};

template <int WI, int II, int WO, int IO, int S, int Q, int O>
long long cast_one(long long raw) {
  ap_fixed<WI, II> v;
  codesign::set_raw(v, raw);
  typename target<WO, IO, S, Q, O>::type r = v;
  return codesign::to_raw(r);
}

typedef long long (*cast_fn)(long long);

// Mode (q, o) at q * 4 + o: the order of codesign.fixed.QMode / OMode and of ap_decl.h.
#define MODE(Q, O) &cast_one<WI, II, WO, IO, S, Q, O>
#define MODES(Q) MODE(Q, 0), MODE(Q, 1), MODE(Q, 2), MODE(Q, 3)

template <int WI, int II, int WO, int IO, int S>
void cast_all_modes(long long n, const long long* v, long long* out) {
  static const cast_fn table[28] = {MODES(0), MODES(1), MODES(2), MODES(3), MODES(4), MODES(5), MODES(6)};
  for (long long t = 0; t < n; t++)
    for (int m = 0; m < 28; m++) out[t * 28 + m] = table[m](v[t]);
}

}  // namespace

// n raw source values -> (n, 7, 4) raw results of shape `shape`; returns 1 for an unknown shape.
extern "C" int ops_fixed_cast(int shape, long long n, const long long* v, long long* out) {
  switch (shape) {
#define X(K, WI, II, WO, IO, S)               \
  case K:                                     \
    cast_all_modes<WI, II, WO, IO, S>(n, v, out); \
    return 0;
    FIXED_CAST_SHAPES
#undef X
  }
  return 1;
}
