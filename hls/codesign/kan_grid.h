// Grid coordinate of a KAN input on a uniform grid (docs/arithmetic.md §2).
//
// One multiply by the constant 1/h (a shift when the cell width is a power of two) gives the
// grid coordinate u with A fractional bits; its integer part is the cell, its fraction the
// address of the basis and derivative ROMs. Inputs outside [lo, hi) are clamped to the grid.
#ifndef CODESIGN_KAN_GRID_H_
#define CODESIGN_KAN_GRID_H_

#include <ap_fixed.h>
#include <ap_int.h>

#include "fixed_bits.h"

namespace codesign {
namespace kan_online {

// CFG provides act_t, cell_t, addr_t and the grid constants lo_raw, inv_h_raw, inv_h_bits,
// u_shift, u_max, lut_bits (see kan_online.h for the whole configuration).
template <class CFG>
void grid_coordinate(const typename CFG::act_t& x, typename CFG::cell_t& cell,
                     typename CFG::addr_t& addr, bool& clamped) {
#pragma HLS INLINE
  static const int W = CFG::act_t::width;
  // (x - lo) needs one bit more than x; the product with the (unsigned) 1/h mantissa is exact.
  typedef ap_int<W + 1> diff_t;
  typedef ap_int<W + 1 + CFG::inv_h_bits> prod_t;
  // Room for a left shift when 1/h has fewer fractional bits than the address (u_shift < 0).
  typedef ap_int<W + 1 + CFG::inv_h_bits + (CFG::u_shift < 0 ? -CFG::u_shift : 0)> coord_t;

  ap_int<W> x_raw;
  x_raw = x.range(W - 1, 0);
  const diff_t d = diff_t(x_raw) - diff_t(CFG::lo_raw);
  const prod_t p = d * ap_uint<CFG::inv_h_bits>(CFG::inv_h_raw);
  coord_t u = floor_shift<CFG::u_shift>::apply(coord_t(p));

  // Clamp rule: an input outside the grid sees the spline at the nearest grid edge.
  clamped = false;
  if (u < 0) {
    u = 0;
    clamped = true;
  } else if (u > CFG::u_max) {
    u = CFG::u_max;
    clamped = true;
  }
  cell = u >> CFG::lut_bits;
  addr = u.range(CFG::lut_bits - 1, 0);
}

}  // namespace kan_online
}  // namespace codesign

#endif  // CODESIGN_KAN_GRID_H_
