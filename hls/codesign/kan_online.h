// KAN online learner: one layer's forward pass, input gradient and sparse coefficient update
// (docs/arithmetic.md §3, §5, §6). The generated top function calls these per layer in the
// order of §7; every function is inlined into the top's II=1 pipeline.
//
// A layer is described by a configuration struct CFG (generated in firmware/parameters.h):
//   types   act_t (layer inputs and outputs), coef_t, basis_t, dbasis_t, dphi_t,
//           g_t (gradient at this layer's outputs: err_t for the last layer, grad_t otherwise),
//           grad_t (gradient passed to this layer's inputs), cell_t, addr_t,
//           inv_h_t (1/h, an ap_ufixed that holds inv_h_raw * 2^-F_inv exactly),
//           fwd_acc_t, dacc_t, bwd_sum_t, upd_t (exact intermediates, docs/arithmetic.md §9)
//   sizes   n_in, n_out, n_coef (G + k), k1 (k + 1), bank_depth (ceil(n_coef / k1)),
//           lut_bits (A), lut_size (2^A)
//   grid    lo_raw, inv_h_raw, inv_h_bits, u_shift, u_max
//   update  lr_shift (learning rate 2^-lr_shift)
//
// Coefficient memory: the G + k coefficients of an edge are spread cyclically over k + 1
// banks (coefficient m lives in bank m % (k+1) at row m / (k+1)), so the k + 1 consecutive
// coefficients cell .. cell + k that one input activates sit in k + 1 different banks: each
// bank is read once and written once per sample. Memory layout: coef[o][i][bank][row].
#ifndef CODESIGN_KAN_ONLINE_H_
#define CODESIGN_KAN_ONLINE_H_

#include <ap_fixed.h>
#include <ap_int.h>

#include "fixed_bits.h"
#include "kan_grid.h"
#include "online_error.h"

namespace codesign {
namespace kan_online {

// Which of the k + 1 active coefficients (j = 0..k, coefficient cell + j) bank b holds.
template <class CFG>
int bank_position(const typename CFG::cell_t& cell, int b) {
#pragma HLS INLINE
  return (b + CFG::k1 - int(cell % CFG::k1)) % CFG::k1;
}

// Grid coordinates of all inputs of a layer.
template <class CFG>
void grid_coordinates(const typename CFG::act_t x[CFG::n_in], typename CFG::cell_t cell[CFG::n_in],
                      typename CFG::addr_t addr[CFG::n_in], bool clamped[CFG::n_in]) {
#pragma HLS INLINE
grid_coordinates_loop:
  for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
    grid_coordinate<CFG>(x[i], cell[i], addr[i], clamped[i]);
  }
}

// The k + 1 non-zero basis values (or derivatives) of every input, from a ROM indexed by
// the local coordinate: rom[j][addr] holds the raw bits of b_j at the centre of address
// interval addr (the W-bit pattern of a VALUE_T, zero-extended to a plain unsigned word), and
// each read puts exactly those W bits into a VALUE_T (no rounding, no logic).
template <class CFG, class WORD_T, class VALUE_T>
void read_rom(const typename CFG::addr_t addr[CFG::n_in], const WORD_T rom[CFG::k1][CFG::lut_size],
              VALUE_T values[CFG::n_in][CFG::k1]) {
#pragma HLS INLINE
read_rom_inputs:
  for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
  read_rom_bases:
    for (int j = 0; j < CFG::k1; j++) {
#pragma HLS UNROLL
      set_raw(values[i][j], (long long)rom[j][addr[i]]);
    }
  }
}

// Reads the active window coef[o][i][cell_i + j], j = 0..k, of every edge: one read per bank.
template <class CFG>
void read_window(const typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth],
                 const typename CFG::cell_t cell[CFG::n_in],
                 typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1]) {
#pragma HLS INLINE
read_window_inputs:
  for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
  read_window_banks:
    for (int b = 0; b < CFG::k1; b++) {
#pragma HLS UNROLL
      const int j = bank_position<CFG>(cell[i], b);
      const int row = (int(cell[i]) + j) / CFG::k1;
    read_window_outputs:
      for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
        window[o][i][j] = coef[o][i][b][row];
      }
    }
  }
}

// y_o = cast_act_t(sum_i sum_j B_j(a_i) * c[o][i][cell_i + j]): (k + 1) MACs per edge, exact sum.
// COUNT counts the casts' overflows (fixed_bits.h); the overload without it counts nothing.
template <class CFG, class COUNT>
void layer_forward(const typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1],
                   const typename CFG::basis_t basis[CFG::n_in][CFG::k1], typename CFG::act_t y[CFG::n_out],
                   COUNT& overflows) {
#pragma HLS INLINE
  typedef typename CFG::fwd_acc_t acc_t;
layer_forward_outputs:
  for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
    acc_t acc = 0;
  layer_forward_inputs:
    for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
    layer_forward_bases:
      for (int j = 0; j < CFG::k1; j++) {
#pragma HLS UNROLL
        acc += basis[i][j] * window[o][i][j];
      }
    }
    y[o] = cast_counted<typename CFG::act_t>(acc, overflows);  // cast_act_t: the layer's one rounding and saturation
  }
}

template <class CFG>
void layer_forward(const typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1],
                   const typename CFG::basis_t basis[CFG::n_in][CFG::k1], typename CFG::act_t y[CFG::n_out]) {
#pragma HLS INLINE
  no_overflow_count none;
  layer_forward<CFG>(window, basis, y, none);
}

// g_i = cast_grad_t(sum_o g_o * cast_dphi_t(sum_j D_j(a_i) * c[o][i][cell_i + j]) * 1/h),
// or 0 for a clamped input. Uses the window read before this sample's update. The casts of a
// clamped input are not counted (the reference does not make them).
template <class CFG, class COUNT>
void layer_input_gradient(const typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1],
                          const typename CFG::dbasis_t dbasis[CFG::n_in][CFG::k1],
                          const bool clamped[CFG::n_in], const typename CFG::g_t g_out[CFG::n_out],
                          typename CFG::grad_t g_in[CFG::n_in], COUNT& overflows) {
#pragma HLS INLINE
  typename CFG::inv_h_t inv_h;
  set_raw(inv_h, CFG::inv_h_raw);
layer_input_gradient_inputs:
  for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
    typename CFG::bwd_sum_t s = 0;
  layer_input_gradient_outputs:
    for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
      typename CFG::dacc_t dacc = 0;
    layer_input_gradient_bases:
      for (int j = 0; j < CFG::k1; j++) {
#pragma HLS UNROLL
        dacc += dbasis[i][j] * window[o][i][j];
      }
      const typename CFG::dphi_t dphi =
          cast_counted<typename CFG::dphi_t>(dacc, overflows, !clamped[i]);  // cast_dphi_t: d phi / dt of edge (o, i)
      s += g_out[o] * dphi;
    }
    // The chain rule through t = (x - lo) / h contributes 1/h (not k/h).
    const typename CFG::grad_t g = cast_counted<typename CFG::grad_t>(s * inv_h, overflows, !clamped[i]);  // cast_grad_t
    g_in[i] = clamped[i] ? typename CFG::grad_t(0) : g;
  }
}

template <class CFG>
void layer_input_gradient(const typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1],
                          const typename CFG::dbasis_t dbasis[CFG::n_in][CFG::k1],
                          const bool clamped[CFG::n_in], const typename CFG::g_t g_out[CFG::n_out],
                          typename CFG::grad_t g_in[CFG::n_in]) {
#pragma HLS INLINE
  no_overflow_count none;
  layer_input_gradient<CFG>(window, dbasis, clamped, g_out, g_in, none);
}

// c[o][i][cell_i + j] = cast_coef_t(c - 2^-lr_shift * g_o * B_j(a_i)) for the k + 1 active
// coefficients of every edge, written back to the bank each was read from.
// With CFG::lr_span > 0 the shift is CFG::lr_shift + CFG::lr_span - lr_up (the AXI top's run-time
// shift): g * b moved up lr_up bits, read at the largest shift's fraction bits, is the same exact
// value as at the shift's own, so the cast is too (docs/arithmetic.md §6).
template <class CFG, class COUNT>
void layer_update(typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth],
                  const typename CFG::cell_t cell[CFG::n_in],
                  const typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1],
                  const typename CFG::basis_t basis[CFG::n_in][CFG::k1],
                  const typename CFG::g_t g_out[CFG::n_out], COUNT& overflows, unsigned lr_up = 0) {
#pragma HLS INLINE
layer_update_inputs:
  for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
  layer_update_banks:
    for (int b = 0; b < CFG::k1; b++) {
#pragma HLS UNROLL
      const int j = bank_position<CFG>(cell[i], b);
      const int row = (int(cell[i]) + j) / CFG::k1;
    layer_update_outputs:
      for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
        // g * b is exact; reading it with lr_shift more fractional bits multiplies by 2^-lr_shift.
        typename CFG::upd_t full;
        if (CFG::lr_span == 0) {
          full = window[o][i][j] - scale_down<CFG::lr_shift>(g_out[o] * basis[i][j]);
        } else {
          auto gb = g_out[o] * basis[i][j];
          ap_fixed<decltype(gb)::width + CFG::lr_span, decltype(gb)::iwidth + CFG::lr_span> up = gb;
          up <<= lr_up;  // exact: lr_up <= lr_span
          full = window[o][i][j] - scale_down<CFG::lr_shift + CFG::lr_span>(up);
        }
        coef[o][i][b][row] = cast_counted<typename CFG::coef_t>(full, overflows);  // cast_coef_t
      }
    }
  }
}

template <class CFG>
void layer_update(typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth],
                  const typename CFG::cell_t cell[CFG::n_in],
                  const typename CFG::coef_t window[CFG::n_out][CFG::n_in][CFG::k1],
                  const typename CFG::basis_t basis[CFG::n_in][CFG::k1],
                  const typename CFG::g_t g_out[CFG::n_out]) {
#pragma HLS INLINE
  no_overflow_count none;
  layer_update<CFG>(coef, cell, window, basis, g_out, none);
}

#ifndef __SYNTHESIS__
// C-simulation only: the layer's coefficients as raw integers in (o, i, m) order, written
// from out onwards; returns the position after the last one.
template <class CFG>
long long* read_coefficients(const typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth],
                             long long* out) {
  for (int o = 0; o < CFG::n_out; o++) {
    for (int i = 0; i < CFG::n_in; i++) {
      for (int m = 0; m < CFG::n_coef; m++) {
        *out++ = to_raw(coef[o][i][m % CFG::k1][m / CFG::k1]);
      }
    }
  }
  return out;
}
#endif

}  // namespace kan_online
}  // namespace codesign

#endif  // CODESIGN_KAN_ONLINE_H_
