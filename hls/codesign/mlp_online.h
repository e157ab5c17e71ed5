// MLP online learner, the baseline to the KAN: one dense layer's forward pass, activation
// mask, input gradient and update (docs/arithmetic.md §8). The generated top function calls
// these per layer in the order of §7; every function is inlined into the top's pipeline.
//
// A layer is described by a configuration struct CFG (generated in firmware/parameters.h):
//   types   act_t, coef_t (weights and biases), g_t (gradient at this layer's outputs:
//           err_t for the last layer, grad_t otherwise), grad_t (gradient to the inputs),
//           one_t (a type that holds +-1.0 exactly, for hardtanh),
//           acc_t, bwd_sum_t, upd_t (exact intermediates)
//   sizes   n_in, n_out
//   flags   hidden (apply the activation), activation (activation_relu or activation_hardtanh)
//   update  lr_shift (learning rate 2^-lr_shift)
//
// Weight memory: w[o][0..n_in-1] are the weights of neuron o and w[o][n_in] its bias (the
// same row layout as the Python reference); it is partitioned completely, since every
// weight is read and written every sample.
#ifndef CODESIGN_MLP_ONLINE_H_
#define CODESIGN_MLP_ONLINE_H_

#include <ap_fixed.h>
#include <ap_int.h>

#include "fixed_bits.h"
#include "online_error.h"

namespace codesign {
namespace mlp_online {

enum activation_kind { activation_relu = 0, activation_hardtanh = 1 };

// z_o = cast_act_t(sum_i w_oi * x_i + b_o) (exact sum), x'_o = act(z_o) on hidden layers.
// COUNT counts the casts' overflows (fixed_bits.h); the overload without it counts nothing.
template <class CFG, class COUNT>
void dense_forward(const typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1], const typename CFG::act_t x[CFG::n_in],
                   typename CFG::act_t z[CFG::n_out], typename CFG::act_t y[CFG::n_out], COUNT& overflows) {
#pragma HLS INLINE
  typedef typename CFG::one_t one_t;
  const one_t one = 1;
dense_forward_outputs:
  for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
    typename CFG::acc_t acc = w[o][CFG::n_in];  // the bias, exactly
  dense_forward_inputs:
    for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
      acc += w[o][i] * x[i];
    }
    const typename CFG::act_t zo = cast_counted<typename CFG::act_t>(acc, overflows);  // cast_act_t
    z[o] = zo;
    if (!CFG::hidden) {
      y[o] = zo;
    } else if (CFG::activation == activation_relu) {
      y[o] = zo > 0 ? zo : typename CFG::act_t(0);
    } else if (zo < -one) {  // hardtanh: clip to [-1, 1]; one_t holds 1.0 even when act_t cannot
      y[o] = -one;
    } else if (zo > one) {
      y[o] = one;
    } else {
      y[o] = zo;
    }
  }
}

template <class CFG>
void dense_forward(const typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1], const typename CFG::act_t x[CFG::n_in],
                   typename CFG::act_t z[CFG::n_out], typename CFG::act_t y[CFG::n_out]) {
#pragma HLS INLINE
  no_overflow_count none;
  dense_forward<CFG>(w, x, z, y, none);
}

// The output gradient through the activation: passes where ReLU's z > 0 or hardtanh's
// -1 < z < 1 (on the cast z), zero elsewhere; the last (linear) layer passes everything.
template <class CFG>
void activation_mask(const typename CFG::act_t z[CFG::n_out], const typename CFG::g_t g_in[CFG::n_out],
                     typename CFG::g_t g_out[CFG::n_out]) {
#pragma HLS INLINE
  typedef typename CFG::one_t one_t;
  const one_t one = 1;
activation_mask_outputs:
  for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
    bool active = true;
    if (CFG::hidden) {
      active = CFG::activation == activation_relu ? z[o] > 0 : (z[o] > -one && z[o] < one);
    }
    g_out[o] = active ? g_in[o] : typename CFG::g_t(0);
  }
}

// g_i = cast_grad_t(sum_o g_o * w_oi) with the weights before this sample's update.
template <class CFG, class COUNT>
void dense_input_gradient(const typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1],
                          const typename CFG::g_t g_out[CFG::n_out], typename CFG::grad_t g_in[CFG::n_in],
                          COUNT& overflows) {
#pragma HLS INLINE
dense_input_gradient_inputs:
  for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
    typename CFG::bwd_sum_t s = 0;
  dense_input_gradient_outputs:
    for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
      s += g_out[o] * w[o][i];
    }
    g_in[i] = cast_counted<typename CFG::grad_t>(s, overflows);  // cast_grad_t
  }
}

template <class CFG>
void dense_input_gradient(const typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1],
                          const typename CFG::g_t g_out[CFG::n_out], typename CFG::grad_t g_in[CFG::n_in]) {
#pragma HLS INLINE
  no_overflow_count none;
  dense_input_gradient<CFG>(w, g_out, g_in, none);
}

// w_oi = cast_coef_t(w_oi - 2^-lr_shift * g_o * x_i), b_o = cast_coef_t(b_o - 2^-lr_shift * g_o).
template <class CFG, class COUNT>
void dense_update(typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1], const typename CFG::act_t x[CFG::n_in],
                  const typename CFG::g_t g_out[CFG::n_out], COUNT& overflows) {
#pragma HLS INLINE
dense_update_outputs:
  for (int o = 0; o < CFG::n_out; o++) {
#pragma HLS UNROLL
  dense_update_inputs:
    for (int i = 0; i < CFG::n_in; i++) {
#pragma HLS UNROLL
      // g * x is exact; reading it with lr_shift more fractional bits multiplies by 2^-lr_shift.
      const typename CFG::upd_t full = w[o][i] - scale_down<CFG::lr_shift>(g_out[o] * x[i]);
      w[o][i] = cast_counted<typename CFG::coef_t>(full, overflows);  // cast_coef_t
    }
    const typename CFG::upd_t full = w[o][CFG::n_in] - scale_down<CFG::lr_shift>(g_out[o]);
    w[o][CFG::n_in] = cast_counted<typename CFG::coef_t>(full, overflows);  // the bias sees a constant input of 1.0
  }
}

template <class CFG>
void dense_update(typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1], const typename CFG::act_t x[CFG::n_in],
                  const typename CFG::g_t g_out[CFG::n_out]) {
#pragma HLS INLINE
  no_overflow_count none;
  dense_update<CFG>(w, x, g_out, none);
}

#ifndef __SYNTHESIS__
// C-simulation only: the layer's weights and biases as raw integers, row by row (each
// neuron's n_in weights, then its bias), written from out onwards; returns the next position.
template <class CFG>
long long* read_weights(const typename CFG::coef_t w[CFG::n_out][CFG::n_in + 1], long long* out) {
  for (int o = 0; o < CFG::n_out; o++) {
    for (int i = 0; i <= CFG::n_in; i++) {
      *out++ = to_raw(w[o][i]);
    }
  }
  return out;
}
#endif

}  // namespace mlp_online
}  // namespace codesign

#endif  // CODESIGN_MLP_ONLINE_H_
