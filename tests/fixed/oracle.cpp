// Reference results from Xilinx's ap_fixed.h for tests/fixed/test_ap_fixed_oracle.py.
//
// The case tables (which types and type pairs to exercise) come from "oracle_cases.inc",
// written by the test so that Python and C++ share one list. Every case is instantiated
// for all 7 x 4 (quantization, overflow) modes and chosen at run time.
//
// Compile with -DNDEBUG: with asserts on, ap_private aborts on a bit read beyond the MSB
// that ap_fixed_base::operator= performs (and then ignores) whenever a cast drops more bits
// than the source is wide (F_src - F_dst > W_src).
//
// Build with -DORACLE_PART=k -DORACLE_NPARTS=P to get the k-th of P executables; part k
// holds the mode pairs with (q * 4 + o) % P == k (q, o: the enum values), so the parts can
// be compiled in parallel. Blocks that do not depend on the modes are served by part 0.
//
// Usage:
//   oracle run IN OUT   read request blocks from IN, write raw results to OUT
//   oracle types        print the result types of +, -, *, unary - for the pair tables,
//                       and the parameters of the types spelled as codesign prints them
//
// A request block is 6 int32 (kind, case id, qmode, omode, count, 0) followed by the
// payload; the answer is appended to OUT as int64 (doubles for TO_DOUBLE, as raw bits).
//   CONV      count doubles              -> count raw values of T(x)
//   CAST      count source raw int64     -> count raw values of T t = s
//   TO_DOUBLE count raw int64            -> count doubles t.to_double()
//   SHIFT     count (raw, n) int64 pairs -> 4*count: (t << n), (t >> n) for T with default
//             modes, then the same for T with AP_RND_CONV, AP_SAT_SYM
//   BIN       count (a, b) int64 pairs   -> 4*count: a+b, a-b, a*b, -a
//   MIX       count (i, b) int64 pairs   -> 3*count: i+b, i-b, i*b (i: ap_int, b: ap_fixed)
//   INT       count (a, b) int64 pairs   -> 4*count: a+b, a-b, a*b, -a (ap_int operands)

#include <ap_fixed.h>
#include <ap_int.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "oracle_cases.inc"

enum Kind { CONV = 0, CAST = 1, TO_DOUBLE = 2, SHIFT = 3, BIN = 4, MIX = 5, INT = 6 };

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O>
struct Fx {
  typedef ap_fixed<W, I, Q, O> type;
};
template <int W, int I, ap_q_mode Q, ap_o_mode O>
struct Fx<W, I, false, Q, O> {
  typedef ap_ufixed<W, I, Q, O> type;
};

template <int W, bool S>
struct Int {
  typedef ap_int<W> type;
};
template <int W>
struct Int<W, false> {
  typedef ap_uint<W> type;
};

#ifndef ORACLE_PART
#define ORACLE_PART 0
#define ORACLE_NPARTS 1
#endif

static constexpr bool in_part(int q, int o) { return (q * 4 + o) % ORACLE_NPARTS == ORACLE_PART; }

template <ap_q_mode Q, ap_o_mode O>
struct Modes {
  static const ap_q_mode q = Q;
  static const ap_o_mode o = O;
};

#define FOR_O(X, QQ) X(QQ, AP_SAT) X(QQ, AP_SAT_ZERO) X(QQ, AP_SAT_SYM) X(QQ, AP_WRAP)
#define FOR_QO(X)                                                            \
  FOR_O(X, AP_RND) FOR_O(X, AP_RND_ZERO) FOR_O(X, AP_RND_MIN_INF)            \
  FOR_O(X, AP_RND_INF) FOR_O(X, AP_RND_CONV) FOR_O(X, AP_TRN) FOR_O(X, AP_TRN_ZERO)

template <class F>
static void with_modes(int q, int o, F&& f) {
  switch (q * 8 + o) {
#define MODE_CASE(QQ, OO)          \
  case QQ * 8 + OO:                \
    if constexpr (in_part(QQ, OO)) { \
      f(Modes<QQ, OO>());          \
      return;                      \
    }                              \
    break;
    FOR_QO(MODE_CASE)
#undef MODE_CASE
  }
  fprintf(stderr, "modes %d %d are not in part %d of %d\n", q, o, ORACLE_PART, ORACLE_NPARTS);
  exit(2);
}

template <class T>
static int64_t raw(const T& t) {
  return (int64_t)t.V.to_int64();
}

template <class T>
static void do_conv(const double* in, int64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    T t = in[i];
    out[i] = raw(t);
  }
}

template <class Src, class Dst>
static void do_cast(const int64_t* in, int64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    Src s;
    s.V = (ap_slong)in[i];
    Dst d = s;
    out[i] = raw(d);
  }
}

template <class T>
static void do_to_double(const int64_t* in, int64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    T t;
    t.V = (ap_slong)in[i];
    double d = t.to_double();
    memcpy(&out[i], &d, sizeof d);
  }
}

template <class T, class U>
static void do_shift(const int64_t* in, int64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    T t;
    U u;
    t.V = (ap_slong)in[2 * i];
    u.V = (ap_slong)in[2 * i];
    int sh = (int)in[2 * i + 1];
    out[4 * i] = raw(t << sh);
    out[4 * i + 1] = raw(t >> sh);
    out[4 * i + 2] = raw(u << sh);
    out[4 * i + 3] = raw(u >> sh);
  }
}

template <class A, class B>
static void do_bin(const int64_t* in, int64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    A a;
    B b;
    a.V = (ap_slong)in[2 * i];
    b.V = (ap_slong)in[2 * i + 1];
    out[4 * i] = raw(a + b);
    out[4 * i + 1] = raw(a - b);
    out[4 * i + 2] = raw(a * b);
    out[4 * i + 3] = raw(-a);
  }
}

template <class A, class B>
static void do_mix(const int64_t* in, int64_t* out, long n) {
  for (long i = 0; i < n; ++i) {
    A a;
    B b;
    a.V = (ap_slong)in[2 * i];
    b.V = (ap_slong)in[2 * i + 1];
    out[3 * i] = raw(a + b);
    out[3 * i + 1] = raw(a - b);
    out[3 * i + 2] = raw(a * b);
  }
}

// ---------------------------------------------------------------- result types
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
static void print_type(const char* what, const ap_fixed_base<W, I, S, Q, O, N>&) {
  printf(" %s %d %d %d %d %d", what, W, I, (int)S, (int)Q, (int)O);
}
template <int W, bool S>
static void print_type(const char* what, const ap_int_base<W, S>&) {
  printf(" %s %d %d %d -1 -1", what, W, W, (int)S);
}

static void print_types() {
#define BIN_TYPES(id, W1, I1, S1, W2, I2, S2)                     \
  {                                                               \
    typename Fx<W1, I1, S1, AP_TRN, AP_WRAP>::type a = 0;         \
    typename Fx<W2, I2, S2, AP_TRN, AP_WRAP>::type b = 0;         \
    printf("bin %d", id);                                         \
    print_type("add", a + b);                                     \
    print_type("sub", a - b);                                     \
    print_type("mul", a * b);                                     \
    print_type("neg", -a);                                        \
    printf("\n");                                                 \
  }
  BIN_CASES(BIN_TYPES)
#undef BIN_TYPES
#define MIX_TYPES(id, W1, S1, W2, I2, S2)                         \
  {                                                               \
    typename Int<W1, S1>::type a = 0;                             \
    typename Fx<W2, I2, S2, AP_TRN, AP_WRAP>::type b = 0;         \
    printf("mix %d", id);                                         \
    print_type("add", a + b);                                     \
    print_type("sub", a - b);                                     \
    print_type("mul", a * b);                                     \
    printf("\n");                                                 \
  }
  MIX_CASES(MIX_TYPES)
#undef MIX_TYPES
#define INT_TYPES(id, W1, S1, W2, S2)                             \
  {                                                               \
    typename Int<W1, S1>::type a = 0;                             \
    typename Int<W2, S2>::type b = 0;                             \
    printf("int %d", id);                                         \
    print_type("add", a + b);                                     \
    print_type("sub", a - b);                                     \
    print_type("mul", a * b);                                     \
    print_type("neg", -a);                                        \
    printf("\n");                                                 \
  }
  INT_CASES(INT_TYPES)
#undef INT_TYPES
#define SPELLED_TYPE(id, TYPE) \
  {                            \
    TYPE a = 0;                \
    printf("spelled %d", id);  \
    print_type("type", a);     \
    printf("\n");              \
  }
  SPELLED_CASES(SPELLED_TYPE)
#undef SPELLED_TYPE
}

// ---------------------------------------------------------------- dispatch
static void run_block(int kind, int id, int q, int o, const char* in, int64_t* out,
                      long n) {
  const double* din = (const double*)in;
  const int64_t* iin = (const int64_t*)in;
  (void)din;
  (void)iin;
  if (kind != CONV && kind != CAST && ORACLE_PART != 0) {
    fprintf(stderr, "block kind %d is served by part 0 only\n", kind);
    exit(2);
  }
  switch (kind) {
    case CONV:
      switch (id) {
#define CONV_CASE(cid, W, I, S)                                                   \
  case cid:                                                                       \
    with_modes(q, o, [&](auto m) {                                                \
      do_conv<typename Fx<W, I, S, decltype(m)::q, decltype(m)::o>::type>(din, out, n); \
    });                                                                           \
    return;
        CONV_CASES(CONV_CASE)
#undef CONV_CASE
      }
      break;
    case CAST:
      switch (id) {
#define CAST_CASE(cid, W1, I1, S1, W2, I2, S2)                                   \
  case cid:                                                                      \
    with_modes(q, o, [&](auto m) {                                               \
      do_cast<typename Fx<W1, I1, S1, AP_TRN, AP_WRAP>::type,                    \
              typename Fx<W2, I2, S2, decltype(m)::q, decltype(m)::o>::type>(iin, out, n); \
    });                                                                          \
    return;
        CAST_CASES(CAST_CASE)
#undef CAST_CASE
      }
      break;
    case TO_DOUBLE:
      switch (id) {
#define TD_CASE(cid, W, I, S)                                            \
  case cid:                                                              \
    do_to_double<typename Fx<W, I, S, AP_TRN, AP_WRAP>::type>(iin, out, n); \
    return;
        CONV_CASES(TD_CASE)
#undef TD_CASE
      }
      break;
    case SHIFT:
      switch (id) {
#define SHIFT_CASE(cid, W, I, S)                                   \
  case cid:                                                        \
    do_shift<typename Fx<W, I, S, AP_TRN, AP_WRAP>::type,          \
             typename Fx<W, I, S, AP_RND_CONV, AP_SAT_SYM>::type>(iin, out, n); \
    return;
        CONV_CASES(SHIFT_CASE)
#undef SHIFT_CASE
      }
      break;
    case BIN:
      switch (id) {
#define BIN_CASE(cid, W1, I1, S1, W2, I2, S2)                          \
  case cid:                                                            \
    do_bin<typename Fx<W1, I1, S1, AP_TRN, AP_WRAP>::type,             \
           typename Fx<W2, I2, S2, AP_TRN, AP_WRAP>::type>(iin, out, n); \
    return;
        BIN_CASES(BIN_CASE)
#undef BIN_CASE
      }
      break;
    case MIX:
      switch (id) {
#define MIX_CASE(cid, W1, S1, W2, I2, S2)                              \
  case cid:                                                            \
    do_mix<typename Int<W1, S1>::type,                                 \
           typename Fx<W2, I2, S2, AP_TRN, AP_WRAP>::type>(iin, out, n); \
    return;
        MIX_CASES(MIX_CASE)
#undef MIX_CASE
      }
      break;
    case INT:
      switch (id) {
#define INT_CASE(cid, W1, S1, W2, S2)                                              \
  case cid:                                                                        \
    do_bin<typename Int<W1, S1>::type, typename Int<W2, S2>::type>(iin, out, n);   \
    return;
        INT_CASES(INT_CASE)
#undef INT_CASE
      }
      break;
  }
  fprintf(stderr, "unknown block kind %d id %d\n", kind, id);
  exit(2);
}

static const int kPayloadWords[] = {1, 1, 1, 2, 2, 2, 2};
static const int kResultWords[] = {1, 1, 1, 4, 4, 3, 4};

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "types") == 0) {
    print_types();
    return 0;
  }
  if (argc != 4 || strcmp(argv[1], "run") != 0) {
    fprintf(stderr, "usage: %s run IN OUT | %s types\n", argv[0], argv[0]);
    return 2;
  }
  FILE* fin = fopen(argv[2], "rb");
  FILE* fout = fopen(argv[3], "wb");
  if (!fin || !fout) {
    fprintf(stderr, "cannot open %s or %s\n", argv[2], argv[3]);
    return 2;
  }
  int32_t hdr[6];
  std::vector<char> payload;
  std::vector<int64_t> result;
  while (fread(hdr, sizeof(int32_t), 6, fin) == 6) {
    int kind = hdr[0];
    if (kind < 0 || kind > INT) {
      fprintf(stderr, "bad block kind %d\n", kind);
      return 2;
    }
    long n = hdr[4];
    payload.resize((size_t)n * 8 * kPayloadWords[kind] + 8);
    result.resize((size_t)n * kResultWords[kind] + 1);
    if (fread(payload.data(), 8 * kPayloadWords[kind], n, fin) != (size_t)n) {
      fprintf(stderr, "truncated block\n");
      return 2;
    }
    run_block(kind, hdr[1], hdr[2], hdr[3], payload.data(), result.data(), n);
    fwrite(result.data(), 8 * kResultWords[kind], n, fout);
  }
  fclose(fin);
  fclose(fout);
  return 0;
}
