/*
 * matvec-avx512.c - the AVX-512 streaming mat-vec kernel (see matvec.h and
 * the loops in matvec-x86.h): register blocks of 4 weight rows by up to 4
 * columns of 16 lanes.  Compiled for AVX-512 F/BW/DQ/VL by the target pragma
 * below; called only when simd.c found them on the CPU and the OS saves
 * their state.  Measured against 3 rows x 8 columns (one pass over the
 * weights for 8 columns): 4 x 4 was faster at 1 to 16 columns, in cache and
 * streaming (8 columns of 4096 values do not stay in L1 for a whole pass).
 */
#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
#include <immintrin.h>

#include "gemm-load-avx512.h"

typedef __m512 mv_vec;
#define LANES 16
#define ROWS 4 /* 16 accumulators + 4 weight vectors + 1 column vector of the 32 registers */
#define COLS 4
#define mv_zero() _mm512_setzero_ps()
#define mv_add(a, b) _mm512_add_ps(a, b)
#define mv_fmadd(a, b, c) _mm512_fmadd_ps(a, b, c)
#define mv_hsum(v) _mm512_reduce_add_ps(v)
#define mv_load_w(type, p, left) load16(type, p, tail_mask(left))
#define mv_load_x(p, left) _mm512_maskz_loadu_ps(tail_mask(left), p)
#define mv_store(p, v) _mm512_store_ps(p, v)
#define MATVEC_NAME cpu_matvec_avx512

#include "matvec-x86.h"
#endif /* __x86_64__ */
