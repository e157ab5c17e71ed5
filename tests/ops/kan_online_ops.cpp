// The HLS functions of hls/codesign/kan_grid.h, kan_online.h and online_error.h behind a C interface, for tests/ops.
//
// Compiled with g++ into a shared library against a generated firmware/parameters.h and
// basis_roms.h (one spec per library) and called through ctypes. Every value crosses the
// interface as its raw int64; each entry point runs its HLS function on n vectors in a row.
// `layer` picks layer0_config or layer1_config (the specs of the tests have two layers).
#include <ap_fixed.h>
#include <ap_int.h>

#include "basis_roms.h"
#include "kan_online.h"
#include "parameters.h"
#include "ops_raw.h"

using namespace codesign;
using namespace codesign::kan_online;

namespace {

using ops_raw::load;
using ops_raw::store;

template <class CFG>
void grid_coordinate_n(long long n, const long long* x, long long* cell, long long* addr, long long* clamped) {
  for (long long t = 0; t < n; t++) {
    typename CFG::act_t xv;
    set_raw(xv, x[t]);
    typename CFG::cell_t c;
    typename CFG::addr_t a;
    bool cl;
    grid_coordinate<CFG>(xv, c, a, cl);
    cell[t] = c.to_int64();
    addr[t] = a.to_int64();
    clamped[t] = cl ? 1 : 0;
  }
}

// n vectors of n_in addresses -> (n, n_in, k1) values of the basis (derivative = 0) or derivative ROM.
template <class CFG, class VALUE_T, class WORD_T>
void read_rom_n(long long n, const long long* addr, const WORD_T rom[CFG::k1][CFG::lut_size], long long* values) {
  for (long long t = 0; t < n; t++) {
    typename CFG::addr_t a[CFG::n_in];
    for (int i = 0; i < CFG::n_in; i++) a[i] = addr[t * CFG::n_in + i];
    VALUE_T v[CFG::n_in][CFG::k1];
    read_rom<CFG>(a, rom, v);
    for (int i = 0; i < CFG::n_in; i++)
      for (int j = 0; j < CFG::k1; j++) values[(t * CFG::n_in + i) * CFG::k1 + j] = to_raw(v[i][j]);
  }
}

// Flat (o, i, m) raw coefficients into the banked memory the HLS layer reads.
template <class CFG>
void to_banks(const long long* flat, typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth]) {
  for (int o = 0; o < CFG::n_out; o++)
    for (int i = 0; i < CFG::n_in; i++) {
      for (int b = 0; b < CFG::k1; b++)
        for (int r = 0; r < CFG::bank_depth; r++) coef[o][i][b][r] = 0;
      for (int m = 0; m < CFG::n_coef; m++)
        set_raw(coef[o][i][m % CFG::k1][m / CFG::k1], flat[(o * CFG::n_in + i) * CFG::n_coef + m]);
    }
}

template <class CFG>
struct sizes {
  static const int coefs = CFG::n_out * CFG::n_in * CFG::n_coef;
  static const int window = CFG::n_out * CFG::n_in * CFG::k1;
  static const int basis = CFG::n_in * CFG::k1;
};

template <class CFG>
void read_window_n(long long n, const long long* coef_flat, const long long* cell, long long* window) {
  typedef sizes<CFG> S;
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth];
    to_banks<CFG>(coef_flat + t * S::coefs, coef);
    typename CFG::cell_t c[CFG::n_in];
    for (int i = 0; i < CFG::n_in; i++) c[i] = cell[t * CFG::n_in + i];
    typename CFG::coef_t w[CFG::n_out][CFG::n_in][CFG::k1];
    read_window<CFG>(coef, c, w);
    store<typename CFG::coef_t, S::window>(&w[0][0][0], window + t * S::window);
  }
}

template <class CFG>
void layer_forward_n(long long n, const long long* window, const long long* basis, long long* y) {
  typedef sizes<CFG> S;
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t w[CFG::n_out][CFG::n_in][CFG::k1];
    typename CFG::basis_t b[CFG::n_in][CFG::k1];
    typename CFG::act_t out[CFG::n_out];
    load<typename CFG::coef_t, S::window>(window + t * S::window, &w[0][0][0]);
    load<typename CFG::basis_t, S::basis>(basis + t * S::basis, &b[0][0]);
    layer_forward<CFG>(w, b, out);
    store<typename CFG::act_t, CFG::n_out>(out, y + t * CFG::n_out);
  }
}

template <class CFG>
void layer_input_gradient_n(long long n, const long long* window, const long long* dbasis, const long long* clamped,
                            const long long* g_out, long long* g_in) {
  typedef sizes<CFG> S;
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t w[CFG::n_out][CFG::n_in][CFG::k1];
    typename CFG::dbasis_t d[CFG::n_in][CFG::k1];
    bool cl[CFG::n_in];
    typename CFG::g_t g[CFG::n_out];
    typename CFG::grad_t out[CFG::n_in];
    load<typename CFG::coef_t, S::window>(window + t * S::window, &w[0][0][0]);
    load<typename CFG::dbasis_t, S::basis>(dbasis + t * S::basis, &d[0][0]);
    for (int i = 0; i < CFG::n_in; i++) cl[i] = clamped[t * CFG::n_in + i] != 0;
    load<typename CFG::g_t, CFG::n_out>(g_out + t * CFG::n_out, g);
    layer_input_gradient<CFG>(w, d, cl, g, out);
    store<typename CFG::grad_t, CFG::n_in>(out, g_in + t * CFG::n_in);
  }
}

// coef_flat (n, o, i, m) is updated in place.
template <class CFG>
void layer_update_n(long long n, long long* coef_flat, const long long* cell, const long long* window,
                    const long long* basis, const long long* g_out) {
  typedef sizes<CFG> S;
  for (long long t = 0; t < n; t++) {
    typename CFG::coef_t coef[CFG::n_out][CFG::n_in][CFG::k1][CFG::bank_depth];
    to_banks<CFG>(coef_flat + t * S::coefs, coef);
    typename CFG::cell_t c[CFG::n_in];
    for (int i = 0; i < CFG::n_in; i++) c[i] = cell[t * CFG::n_in + i];
    typename CFG::coef_t w[CFG::n_out][CFG::n_in][CFG::k1];
    typename CFG::basis_t b[CFG::n_in][CFG::k1];
    typename CFG::g_t g[CFG::n_out];
    load<typename CFG::coef_t, S::window>(window + t * S::window, &w[0][0][0]);
    load<typename CFG::basis_t, S::basis>(basis + t * S::basis, &b[0][0]);
    load<typename CFG::g_t, CFG::n_out>(g_out + t * CFG::n_out, g);
    layer_update<CFG>(coef, c, w, b, g);
    read_coefficients<CFG>(coef, coef_flat + t * S::coefs);
  }
}

}  // namespace

extern "C" {

int ops_grid_coordinate(int layer, long long n, const long long* x, long long* cell, long long* addr, long long* clamped) {
#define CALL(CFG) grid_coordinate_n<CFG>(n, x, cell, addr, clamped)
  BY_LAYER(CALL)
#undef CALL
}

int ops_read_rom(int layer, int derivative, long long n, const long long* addr, long long* values) {
#define CALL(CFG)                                                                   \
  if (derivative)                                                                   \
    read_rom_n<CFG, CFG::dbasis_t>(n, addr, dbasis_rom, values); \
  else                                                                              \
    read_rom_n<CFG, CFG::basis_t>(n, addr, basis_rom, values)
  BY_LAYER(CALL)
#undef CALL
}

int ops_read_window(int layer, long long n, const long long* coef, const long long* cell, long long* window) {
#define CALL(CFG) read_window_n<CFG>(n, coef, cell, window)
  BY_LAYER(CALL)
#undef CALL
}

int ops_layer_forward(int layer, long long n, const long long* window, const long long* basis, long long* y) {
#define CALL(CFG) layer_forward_n<CFG>(n, window, basis, y)
  BY_LAYER(CALL)
#undef CALL
}

int ops_layer_input_gradient(int layer, long long n, const long long* window, const long long* dbasis,
                             const long long* clamped, const long long* g_out, long long* g_in) {
#define CALL(CFG) layer_input_gradient_n<CFG>(n, window, dbasis, clamped, g_out, g_in)
  BY_LAYER(CALL)
#undef CALL
}

int ops_layer_update(int layer, long long n, long long* coef, const long long* cell, const long long* window,
                     const long long* basis, const long long* g_out) {
#define CALL(CFG) layer_update_n<CFG>(n, coef, cell, window, basis, g_out)
  BY_LAYER(CALL)
#undef CALL
}

// n vectors of N_OUT raw predictions and targets (act_t) -> the raw errors (err_t).
int ops_output_error(long long n, const long long* y_hat, const long long* y, long long* e) {
  return ops_raw::output_error_n<act_t, err_t, N_OUT>(n, y_hat, y, e);
}

}  // extern "C"
