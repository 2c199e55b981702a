// runtime.cuh — the portability layer every translation unit of the cupy backend includes.
//
// Generated kernel bodies are written once against these macros and helpers and compiled two
// ways: by NVRTC for the GPU (one thread block per SPMD block, the block's threads sharing
// the work of every instruction), and by the host C++ compiler with -DPTO_HOST (host
// emulation: one thread per block, PTO_SYNC a no-op, the warp reductions sequential), so the
// semantics of the generated code are tested on machines without a GPU.
//
// Numerics: f16 through cuda_fp16 (round to nearest even, once), bf16 in integer code (the
// same bits numpy's ml_dtypes gives, NaNs included), integers wrap through their unsigned
// type (signed overflow is undefined in C++), exp/log by the llvm backend's polynomials.
#pragma once

#ifdef PTO_HOST
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cuda_fp16.h>
#define PTO_FN static inline
#define PTO_TID 0
#define PTO_NT 1
#define PTO_LANES 1
#define PTO_SYNC() ((void)0)
#else
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#ifdef __CUDACC_RTC__       // NVRTC has no C library headers
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#else
#include <cstdint>
#endif
#define PTO_FN static __device__ __forceinline__
#define PTO_TID ((int64_t)threadIdx.x)
#define PTO_NT ((int64_t)blockDim.x)
#define PTO_LANES 32
#define PTO_SYNC() __syncthreads()
#endif

#define PTO_ERR_SLOTS 8

// ------------------------------------------------------------------ bits and conversions

#ifdef PTO_HOST
PTO_FN uint32_t pto_f2u(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
PTO_FN float pto_u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
PTO_FN uint64_t pto_d2u(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
PTO_FN double pto_u2d(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
#else
PTO_FN uint32_t pto_f2u(float x) { return __float_as_uint(x); }
PTO_FN float pto_u2f(uint32_t u) { return __uint_as_float(u); }
PTO_FN uint64_t pto_d2u(double x) { return (uint64_t)__double_as_longlong(x); }
PTO_FN double pto_u2d(uint64_t u) { return __longlong_as_double((long long)u); }
#endif
#define pto_nan pto_u2f(0x7fc00000u)
#define pto_inf pto_u2f(0x7f800000u)

// f16 -> f32 is exact: in integer code, so NaN payloads widen as numpy widens them (the CUDA
// conversion returns one canonical NaN); f32 -> f16 rounds once through cuda_fp16, NaNs as numpy
// narrows them (sign and top payload bits; a payload that would vanish becomes 1)
PTO_FN float pto_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return pto_u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0u) {
        const float f = (float)m * 5.9604644775390625e-8f;     // m * 2**-24, exact
        return sign ? -f : f;
    }
    return pto_u2f(sign | ((e + 112u) << 23) | (m << 13));
}
PTO_FN uint16_t pto_f2h(float x) {
    if (x != x) {
        const uint32_t u = pto_f2u(x);
        uint32_t m = (u >> 13) & 0x3ffu;
        if (m == 0u) m = 1u;
        return (uint16_t)(((u >> 16) & 0x8000u) | 0x7c00u | m);
    }
    return __half_as_ushort(__float2half_rn(x));
}
PTO_FN float pto_bf2f(uint16_t b) { return pto_u2f(((uint32_t)b) << 16); }
PTO_FN uint16_t pto_f2bf(float x) {
    uint32_t u = pto_f2u(x);
    if (x != x) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

// ------------------------------------------------------------------ integer arithmetic (wraps)

template <typename T> struct pto_u;
template <> struct pto_u<int8_t> { typedef uint8_t t; };
template <> struct pto_u<int16_t> { typedef uint16_t t; };
template <> struct pto_u<int32_t> { typedef uint32_t t; };
template <> struct pto_u<int64_t> { typedef uint64_t t; };
template <> struct pto_u<uint8_t> { typedef uint8_t t; };
template <> struct pto_u<uint16_t> { typedef uint16_t t; };
template <> struct pto_u<uint32_t> { typedef uint32_t t; };
template <> struct pto_u<uint64_t> { typedef uint64_t t; };
template <> struct pto_u<bool> { typedef bool t; };

template <typename T> PTO_FN T pto_iadd(T a, T b) { typedef typename pto_u<T>::t U; return (T)(U)((U)a + (U)b); }
template <typename T> PTO_FN T pto_isub(T a, T b) { typedef typename pto_u<T>::t U; return (T)(U)((U)a - (U)b); }
template <typename T> PTO_FN T pto_imul(T a, T b) {
    typedef typename pto_u<T>::t U;
    return (T)(U)((uint64_t)(U)a * (uint64_t)(U)b);
}
template <typename T> PTO_FN T pto_ineg(T a) { typedef typename pto_u<T>::t U; return (T)(U)((U)0 - (U)a); }
template <typename T> PTO_FN bool pto_is_min(T a) { return (T)-1 < (T)0 && a == (T)((typename pto_u<T>::t)1 << (8 * sizeof(T) - 1)); }

// kind 0 div, 1 rem, 2 floordiv, 3 ceildiv: x / 0 = -1, x rem 0 = x, MIN / -1 = MIN
template <typename T> PTO_FN T pto_idiv(T a, T d, int kind) {
    const bool is_signed = (T)-1 < (T)0;
    if (d == (T)0) return kind == 1 ? a : (T)-1;
    if (is_signed && d == (T)-1 && pto_is_min(a)) return kind == 1 ? (T)0 : a;
    T q = a / d, r = a % d;
    if (kind == 1) return r;
    if (kind == 2 && r != (T)0 && ((r < (T)0) != (d < (T)0))) q = pto_isub(q, (T)1);
    if (kind == 3 && r != (T)0 && (!is_signed || ((r < (T)0) == (d < (T)0)))) q = pto_iadd(q, (T)1);
    return q;
}

// shifts: the count read unsigned; a count >= the width shifts everything out
template <typename T> PTO_FN T pto_shl(T a, T n) {
    typedef typename pto_u<T>::t U;
    const U w = (U)(8 * sizeof(T));
    return (U)n >= w ? (T)0 : (T)(U)((U)a << (U)n);
}
template <typename T> PTO_FN T pto_shr(T a, T n) {   // arithmetic for signed, logical for unsigned
    typedef typename pto_u<T>::t U;
    const U w = (U)(8 * sizeof(T));
    const bool is_signed = (T)-1 < (T)0;
    if ((U)n >= w) return is_signed ? (a < (T)0 ? (T)-1 : (T)0) : (T)0;
    return (T)(a >> (U)n);
}
template <typename T> PTO_FN T pto_lshr(T a, T n) {
    typedef typename pto_u<T>::t U;
    const U w = (U)(8 * sizeof(T));
    return (U)n >= w ? (T)0 : (T)(U)((U)a >> (U)n);
}

// ------------------------------------------------------------------ float helpers (f32 compute)

// IEEE 754-2019 maximum / minimum: NaN propagates (the first NaN operand), -0 < +0
PTO_FN float pto_fmaximum(float a, float b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a == b) return (pto_f2u(a) >> 31) ? b : a;
    return a > b ? a : b;
}
PTO_FN float pto_fminimum(float a, float b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a == b) return (pto_f2u(a) >> 31) ? a : b;
    return a < b ? a : b;
}
// IEEE maxNum / minNum: a NaN operand is ignored
PTO_FN float pto_fmaxnum(float a, float b) { return a != a ? b : b != b ? a : pto_fmaximum(a, b); }
PTO_FN float pto_fminnum(float a, float b) { return a != a ? b : b != b ? a : pto_fminimum(a, b); }

// floored remainder with the divisor's sign (numpy remainder); a zero result takes its sign
PTO_FN float pto_fremainder(float a, float c) {
    float m = fmodf(a, c);
    if (m != 0.0f || m != m) {
        if ((c < 0.0f) != (m < 0.0f)) m = m + c;
        return m;
    }
    return copysignf(0.0f, c);
}

// saturating float -> integer conversion, NaN -> 0
template <typename T> PTO_FN T pto_f2i(float x, double lo, double hi) {
    if (x != x) return (T)0;
    double d = (double)x;
    if (d <= lo) return (T)lo;
    if (d >= hi) return (T)hi;
    return (T)d;
}
PTO_FN int64_t pto_f2i64(float x) {
    if (x != x) return 0;
    if (x >= 9.2233720368547758e18f) return (int64_t)0x7fffffffffffffffLL;
    if (x <= -9.2233720368547758e18f) return (int64_t)(-0x7fffffffffffffffLL - 1);
    return (int64_t)x;
}
PTO_FN uint64_t pto_f2u64(float x) {
    if (x != x || x <= 0.0f) return 0;
    if (x >= 1.8446744073709552e19f) return ~(uint64_t)0;
    return (uint64_t)x;
}

// e**x in f32: Cody-Waite reduction x = n ln2 + r, a degree-4 correction polynomial with fused
// multiply-adds, scaling by 2**n in two halves (the llvm backend's routine: at most 1 ulp from
// the correctly rounded result over every f32 input; the spec allows 2)
PTO_FN float pto_pow2i(int32_t k) { return pto_u2f((uint32_t)(k + 127) << 23); }
PTO_FN float pto_exp(float x) {
    if (x != x) return x;
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    float n = rintf(xc * 1.4426950408889634f);
    float r = fmaf(n, 0.00021219444005471377f, fmaf(n, -0.693359375f, xc));
    float q = 0.0013933643521609437f;
    q = fmaf(q, r, 0.00836317556546637f);
    q = fmaf(q, r, 0.041666464976140724f);
    q = fmaf(q, r, 0.1666657700316029f);
    q = fmaf(q, r, 0.5000000013462214f);
    float p = fmaf(r * r, q, r) + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t half = ni >> 1;
    return (p * pto_pow2i(half)) * pto_pow2i(ni - half);
}

// ln x: through f64 (range reduction around sqrt(2) and an odd series in f = (m-1)/(m+1)),
// rounded once to f32 (correctly rounded over every f32 input, as the llvm backend's)
PTO_FN float pto_log(float x) {
    if (x != x || x < 0.0f) return pto_nan;
    if (x == 0.0f) return -pto_inf;
    if (x == pto_inf) return pto_inf;
    double xd = (double)x;
    uint64_t bits = pto_d2u(xd);
    int64_t e = ((int64_t)(bits - 0x3FE6A09E667F3BCDULL)) >> 52;
    double m = pto_u2d(bits - ((uint64_t)e << 52));
    double f = (m - 1.0) / (m + 1.0);
    double s = f * f;
    double p = 2.0 / 17.0;
    p = p * s + 2.0 / 15.0;
    p = p * s + 2.0 / 13.0;
    p = p * s + 2.0 / 11.0;
    p = p * s + 2.0 / 9.0;
    p = p * s + 2.0 / 7.0;
    p = p * s + 2.0 / 5.0;
    p = p * s + 2.0 / 3.0;
    p = p * s + 2.0;
    double lm = f * p;
    double ed = (double)(int32_t)e;
    double y = ed * 0.6931471803691238 + (ed * 1.9082146973659064e-10 + lm);
    return (float)y;
}

// ------------------------------------------------------------------ reductions inside a warp

#ifdef PTO_HOST
#define PTO_WARP_COMBINE(v, fn) (v)
#else
template <typename T> __device__ __forceinline__ T pto_shfl(T v, int d) {   // integers of any width
    return (T)__shfl_down_sync(0xffffffffu, (long long)v, d);
}
__device__ __forceinline__ float pto_shfl(float v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ double pto_shfl(double v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
#define PTO_WARP_COMBINE(v, fn) ([&] { auto _a = (v); \
    for (int _d = 16; _d > 0; _d >>= 1) _a = fn(_a, pto_shfl(_a, _d)); return _a; }())
#endif

// combine steps of the reductions (two accumulators -> one)
PTO_FN float pto_addf_(float a, float b) { return a + b; }
PTO_FN double pto_muld_(double a, double b) { return a * b; }
template <typename T> PTO_FN T pto_imax(T a, T b) { return a > b ? a : b; }
template <typename T> PTO_FN T pto_imin(T a, T b) { return a < b ? a : b; }

// ------------------------------------------------------------------ faults and counters

// A failed check: the first block to fail claims the record (err[PTO_ERR_SLOTS]), writes the
// site and its details, and every thread of the block returns (checks are block-uniform).
PTO_FN void pto_fail(int64_t* err, int64_t bid, int64_t site, int64_t d0, int64_t d1, int64_t d2,
                     int64_t d3, int64_t d4, int64_t d5, int64_t d6) {
#ifdef PTO_HOST
    err[0] = site; err[1] = d0; err[2] = d1; err[3] = d2; err[4] = d3; err[5] = d4; err[6] = d5; err[7] = d6;
    err[PTO_ERR_SLOTS + 1] = bid;
#else
    if (threadIdx.x != 0) return;
    if (atomicCAS((unsigned long long*)(err + PTO_ERR_SLOTS), 0ULL, 1ULL) != 0ULL) return;
    err[0] = site; err[1] = d0; err[2] = d1; err[3] = d2; err[4] = d3; err[5] = d4; err[6] = d5; err[7] = d6;
    err[PTO_ERR_SLOTS + 1] = bid;
    __threadfence();
#endif
}

PTO_FN void pto_count(int64_t* counts, const int64_t* local, int n) {
#ifdef PTO_HOST
    for (int k = 0; k < n; ++k) counts[k] += local[k];
#else
    if (threadIdx.x != 0) return;
    for (int k = 0; k < n; ++k) atomicAdd((unsigned long long*)(counts + k), (unsigned long long)local[k]);
#endif
}

// unsigned window test: [start, start + extent) not inside [0, limit), never forming the sum
PTO_FN bool pto_outside(int64_t start, int64_t extent, int64_t limit) {
    return (uint64_t)start > (uint64_t)limit || (uint64_t)extent > (uint64_t)(limit - start);
}

// floored integer remainder with the divisor's sign (numpy remainder); x rem 0 = x
template <typename T> PTO_FN T pto_iremainder(T a, T c) {
    T r = pto_idiv(a, c, 1);
    const bool is_signed = (T)-1 < (T)0;
    if (is_signed && r != (T)0 && ((r < (T)0) != (c < (T)0))) r = pto_iadd(r, c);
    return r;
}
