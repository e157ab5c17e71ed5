// The HLS functions of hls/codesign/mlp_online.h and online_error.h behind a C interface, for tests/ops.
//
// Compiled with g++ into a shared library against a generated firmware/parameters.h (one spec per
// library) and called through ctypes. Every value crosses the interface as its raw int64; each entry
// point runs its HLS function on n vectors in a row. `layer` picks layer0_config or layer1_config
// (the specs of the tests have two layers). Weights are rows of n_in weights then the bias.
#include <ap_fixed.h>
#include <ap_int.h>

#include "parameters.h"
#include "ops_raw.h"

using namespace codesign;
using namespace codesign::mlp_online;

namespace {

using ops_raw::load;
using ops_raw::store;

template <class CFG>
struct sizes {
  static const int weights = CFG::n_out * (CFG::n_in + 1);
};

template <class CFG>
void dense_forward_n(long long n, const long long* w, const long long* x, long long* z, long long* y) {
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t wt[CFG::n_out][CFG::n_in + 1];
    typename CFG::act_t xv[CFG::n_in], zv[CFG::n_out], yv[CFG::n_out];
    load<typename CFG::coef_t, sizes<CFG>::weights>(w + t * sizes<CFG>::weights, &wt[0][0]);
    load<typename CFG::act_t, CFG::n_in>(x + t * CFG::n_in, xv);
    dense_forward<CFG>(wt, xv, zv, yv);
    store<typename CFG::act_t, CFG::n_out>(zv, z + t * CFG::n_out);
    store<typename CFG::act_t, CFG::n_out>(yv, y + t * CFG::n_out);
  }
}

template <class CFG>
void activation_mask_n(long long n, const long long* z, const long long* g_in, long long* g_out) {
  for (long long t = 0; t < n; t++) {
    typename CFG::act_t zv[CFG::n_out];
    typename CFG::g_t gi[CFG::n_out], go[CFG::n_out];
    load<typename CFG::act_t, CFG::n_out>(z + t * CFG::n_out, zv);
    load<typename CFG::g_t, CFG::n_out>(g_in + t * CFG::n_out, gi);
    activation_mask<CFG>(zv, gi, go);
    store<typename CFG::g_t, CFG::n_out>(go, g_out + t * CFG::n_out);
  }
}

template <class CFG>
void dense_input_gradient_n(long long n, const long long* w, const long long* g_out, long long* g_in) {
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t wt[CFG::n_out][CFG::n_in + 1];
    typename CFG::g_t g[CFG::n_out];
    typename CFG::grad_t out[CFG::n_in];
    load<typename CFG::coef_t, sizes<CFG>::weights>(w + t * sizes<CFG>::weights, &wt[0][0]);
    load<typename CFG::g_t, CFG::n_out>(g_out + t * CFG::n_out, g);
    dense_input_gradient<CFG>(wt, g, out);
    store<typename CFG::grad_t, CFG::n_in>(out, g_in + t * CFG::n_in);
  }
}

// w (n, o, n_in + 1) is updated in place.
template <class CFG>
void dense_update_n(long long n, long long* w, const long long* x, const long long* g_out) {
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t wt[CFG::n_out][CFG::n_in + 1];
    typename CFG::act_t xv[CFG::n_in];
    typename CFG::g_t g[CFG::n_out];
    load<typename CFG::coef_t, sizes<CFG>::weights>(w + t * sizes<CFG>::weights, &wt[0][0]);
    load<typename CFG::act_t, CFG::n_in>(x + t * CFG::n_in, xv);
    load<typename CFG::g_t, CFG::n_out>(g_out + t * CFG::n_out, g);
    dense_update<CFG>(wt, xv, g);
    store<typename CFG::coef_t, sizes<CFG>::weights>(&wt[0][0], w + t * sizes<CFG>::weights);
  }
}

}  // namespace

extern "C" {

int ops_dense_forward(int layer, long long n, const long long* w, const long long* x, long long* z, long long* y) {
#define CALL(CFG) dense_forward_n<CFG>(n, w, x, z, y)
  BY_LAYER(CALL)
#undef CALL
}

int ops_activation_mask(int layer, long long n, const long long* z, const long long* g_in, long long* g_out) {
#define CALL(CFG) activation_mask_n<CFG>(n, z, g_in, g_out)
  BY_LAYER(CALL)
#undef CALL
}

int ops_dense_input_gradient(int layer, long long n, const long long* w, const long long* g_out, long long* g_in) {
#define CALL(CFG) dense_input_gradient_n<CFG>(n, w, g_out, g_in)
  BY_LAYER(CALL)
#undef CALL
}

int ops_dense_update(int layer, long long n, long long* w, const long long* x, const long long* g_out) {
#define CALL(CFG) dense_update_n<CFG>(n, w, x, g_out)
  BY_LAYER(CALL)
#undef CALL
}

// n vectors of N_OUT raw predictions and targets (act_t) -> the raw errors (err_t).
int ops_output_error(long long n, const long long* y_hat, const long long* y, long long* e) {
  return ops_raw::output_error_n<act_t, err_t, N_OUT>(n, y_hat, y, e);
}

}  // extern "C"
