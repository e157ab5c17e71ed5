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

// Overflow counts of the casts (the AXI top's SATURATIONS register): a cast overflows when the
// value, rounded as the target type rounds, lies outside the type's range, whatever its overflow
// mode then does (the Python reference's probe). The learners' functions take a COUNT:
// no_overflow_count builds nothing (the plain top), overflow_count adds the overflows up.
struct no_overflow_count {
  void add(bool) {}
};

struct overflow_count {
  unsigned n;
  overflow_count() : n(0) {}
  void add(bool overflowed) {
#pragma HLS INLINE
    n += overflowed ? 1u : 0u;
  }
};

// T(v), the assignment; when counted, overflows.add(whether it overflowed T): the same rounding
// into a signed type two integer bits wider than both, which nothing overflows, differs from T(v)
// exactly then.
template <class T, class COUNT, int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
T cast_counted(const ap_fixed_base<W, I, S, Q, O, N>& v, COUNT& overflows, bool counted = true) {
#pragma HLS INLINE
  const T r = v;
  enum { F_T = T::width - T::iwidth, I_WIDE = (I > T::iwidth ? I : T::iwidth) + 2 };
  const ap_fixed<I_WIDE + F_T, I_WIDE, T::qmode, AP_SAT> wide = v;
  overflows.add(counted && wide != r);
  return r;
}

}  // namespace codesign

#endif  // CODESIGN_FIXED_BITS_H_
