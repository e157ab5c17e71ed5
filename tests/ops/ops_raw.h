// What both ops libraries (kan_online_ops.cpp, mlp_online_ops.cpp) share: raw int64 vectors in and out of fixed-point
// arrays, and output_error on n vectors. Included after parameters.h (set_raw, to_raw and output_error come from it).
#pragma once

namespace ops_raw {

template <class T, int N>
void load(const long long* raw, T v[N]) {
  for (int k = 0; k < N; k++) codesign::set_raw(v[k], raw[k]);
}

template <class T, int N>
void store(const T v[N], long long* raw) {
  for (int k = 0; k < N; k++) raw[k] = codesign::to_raw(v[k]);
}

// n vectors of N raw predictions and targets (ACT) -> the raw errors (ERR).
template <class ACT, class ERR, int N>
int output_error_n(long long n, const long long* y_hat, const long long* y, long long* e) {
  for (long long t = 0; t < n; t++) {
    ACT a[N], b[N];
    ERR out[N];
    load<ACT, N>(y_hat + t * N, a);
    load<ACT, N>(y + t * N, b);
    codesign::output_error<ACT, ERR, N>(a, b, out);
    store<ERR, N>(out, e + t * N);
  }
  return 0;
}

}  // namespace ops_raw

// An entry point's body: run CALL on layer0_config or layer1_config (the two layers of a test's spec) by `layer`.
#define BY_LAYER(call)                 \
  switch (layer) {                     \
    case 0: call(layer0_config); break; \
    case 1: call(layer1_config); break; \
    default: return 1;                 \
  }                                    \
  return 0;
