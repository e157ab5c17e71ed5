// Raw bit patterns of ap_fixed values, and the exact power-of-two rescaling the learners use.
//
// The learners' arithmetic (docs/arithmetic.md) is written on raw integers; these helpers
// move between an ap_fixed value and its raw integer without any rounding, so a testbench
// can exchange raw integers with the Python reference and the datapath can scale by 2^-s.
#ifndef CODESIGN_FIXED_BITS_H_
#define CODESIGN_FIXED_BITS_H_

#include <ap_fixed.h>
#include <ap_int.h>

namespace codesign {

// The raw integer r of a value v = r * 2^-F (sign-extended for signed types).
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
long long to_raw(const ap_fixed_base<W, I, S, Q, O, N>& v) {
#pragma HLS INLINE
  ap_int_base<W, S> r;
  r = v.range(W - 1, 0);
  return r.to_int64();
}

// Sets v to the value raw * 2^-F; raw must fit the type (its low W bits are taken).
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
void set_raw(ap_fixed_base<W, I, S, Q, O, N>& v, long long raw) {
#pragma HLS INLINE
  ap_int_base<64, true> r = raw;
  v.range(W - 1, 0) = r.range(W - 1, 0);
}

// v * 2^-SHIFT, exactly: the same bits read with SHIFT more fractional bits (no logic).
template <int SHIFT, int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
ap_fixed_base<W, I - SHIFT, S, AP_TRN, AP_WRAP, 0> scale_down(const ap_fixed_base<W, I, S, Q, O, N>& v) {
#pragma HLS INLINE
  ap_fixed_base<W, I - SHIFT, S, AP_TRN, AP_WRAP, 0> r;
  r.range(W - 1, 0) = v.range(W - 1, 0);
  return r;
}

// Floor shift of a raw integer by a compile-time amount: right when SHIFT >= 0, else left.
// The caller sizes T so that a left shift cannot lose bits.
template <int SHIFT, bool RIGHT = (SHIFT >= 0)>
struct floor_shift {
  template <class T>
  static T apply(const T& v) {
#pragma HLS INLINE
    return v >> SHIFT;
  }
};

template <int SHIFT>
struct floor_shift<SHIFT, false> {
  template <class T>
  static T apply(const T& v) {
#pragma HLS INLINE
    return v << (-SHIFT);
  }
};

}  // namespace codesign

#endif  // CODESIGN_FIXED_BITS_H_
