/*
 * gemm-pack-x86.h - packing with 8 x 8 in-register transposes, shared by the
 * AVX2 and AVX-512 kernel files (each includes it under its own target
 * pragma; it needs AVX2 and F16C).  Rows of w and x are contiguous along k,
 * but the micro-kernels want panels contiguous along the rows: copying
 * element by element costs more than the product for mid-sized matrices, so
 * 8 rows x 8 k are loaded, converted, transposed and stored at once.
 * Panels of any width are packed this way (a last group of fewer than 8
 * rows is stored with a mask).
 */
#ifndef GGMLC_CPU_GEMM_PACK_X86_H
#define GGMLC_CPU_GEMM_PACK_X86_H

#include <immintrin.h>
#include <string.h>

#include "gemm.h"
#include "ggmlc-blocks.h"

/* 8 values of type at p as f32. */
static inline __m256 pack_load8(enum ggml_type type, const char *p) {
    switch (type) {
    case GGML_TYPE_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    case GGML_TYPE_BF16: {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
    default: return _mm256_loadu_ps((const float *)p);
    }
}

static inline float pack_load1(enum ggml_type type, const char *p) {
    switch (type) {
    case GGML_TYPE_F16: return ggmlc_fp16_to_fp32(*(const ggml_fp16_t *)p);
    case GGML_TYPE_BF16: return ggmlc_bf16_to_fp32(*(const ggml_bf16_t *)p);
    default: return *(const float *)p;
    }
}

/* Transpose the 8 x 8 matrix held in r[0..7] (rows) in place.  Fully unrolled, so that
 * the arrays live in registers (rolled loops kept them on the stack). */
static inline void pack_transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* Bytes of one value of type (F32, F16, BF16), known at compile time where type is. */
static inline size_t pack_elem_size(enum ggml_type type) {
    return type == GGML_TYPE_F16 || type == GGML_TYPE_BF16 ? 2 : 4;
}

/* Call fn(TYPE, ...) with the operand type as a constant, so that an always-inlined fn
 * is compiled once per type without the type's switch in its inner loops. */
#define PACK_FOR_TYPE(type, fn, ...)                                                                              \
    do {                                                                                                           \
        switch (type) {                                                                                            \
        case GGML_TYPE_F16: fn(GGML_TYPE_F16, __VA_ARGS__); break;                                                 \
        case GGML_TYPE_BF16: fn(GGML_TYPE_BF16, __VA_ARGS__); break;                                               \
        default: fn(GGML_TYPE_F32, __VA_ARGS__); break;                                                            \
        }                                                                                                          \
    } while (0)

/* How far ahead (in k) the packers prefetch their sources. */
#define PACK_PREFETCH_K 32

/* One group of up to 8 rows (valid of them real, group lanes stored) of pack_rows_transposed,
 * for a type fixed at the call (always inlined: the type's switch folds away).  Missing rows
 * read row 0 of the group and are cleared after the transpose, so the loads are
 * unconditional and each of the 8 is its own instruction with a fixed stride, which the
 * hardware prefetchers follow (one load in a loop over rows defeated them). */
static inline __attribute__((always_inline)) void pack_rows_group(enum ggml_type type, const char *base,
                                                                  size_t row_stride, int valid, int group,
                                                                  int64_t kc, int width, float *dst) {
    const size_t es = pack_elem_size(type);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(group), iota);
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), iota));
    const char *row[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) row[i] = base + (i < valid ? i : 0) * row_stride;
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
        __m256 v[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            if (k % 16 == 0) _mm_prefetch(row[i] + (k + PACK_PREFETCH_K) * es, _MM_HINT_T0);
            v[i] = pack_load8(type, row[i] + k * es);
        }
        pack_transpose8(v);
        if (group == 8 && valid == 8) {
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (k + i) * width, v[i]);
        } else {
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++) _mm256_maskstore_ps(dst + (k + i) * width, lanes, _mm256_and_ps(v[i], keep));
        }
    }
    for (; k < kc; k++)
        for (int i = 0; i < group; i++) dst[k * width + i] = i < valid ? pack_load1(type, row[i] + k * es) : 0.0f;
}

static inline __attribute__((always_inline)) void pack_rows_typed(enum ggml_type type, const char *base,
                                                                  size_t row_stride, int64_t rows, int64_t kc,
                                                                  int width, float *dst) {
    for (int j0 = 0; j0 < width; j0 += 8) {
        const int group = width - j0 < 8 ? width - j0 : 8;
        const int valid = rows - j0 < 0 ? 0 : rows - j0 > group ? group : (int)(rows - j0);
        if (valid == 0) { /* padding only */
            for (int64_t k = 0; k < kc; k++) memset(dst + k * width + j0, 0, (size_t)group * sizeof(float));
            continue;
        }
        pack_rows_group(type, base + j0 * row_stride, row_stride, valid, group, kc, width, dst + j0);
    }
}

/* Pack `rows` (<= width) rows contiguous along k, starting at base, row_stride
 * bytes apart, into dst[k * width + j]; rows beyond are zero.  Groups of 8 rows
 * are transposed in registers; a last group narrower than 8 is stored masked. */
static inline void pack_rows_transposed(enum ggml_type type, const char *base, size_t row_stride, int64_t rows,
                                        int64_t kc, int width, float *dst) {
    PACK_FOR_TYPE(type, pack_rows_typed, base, row_stride, rows, kc, width, dst);
}

/* pack_cols_direct of f32 into a panel at most 8 wide (the x panels): one masked load per k
 * (lanes from rows on read as zero) and one 8-wide store, whose lanes beyond width land on
 * the next k's place and are overwritten by its store; the last k's store is masked.  The
 * element loop it replaces cost 40% of the backward's weight-gradient products. */
static inline void pack_cols_narrow_f32(const char *base, size_t k_stride, int64_t rows, int64_t kc, int width,
                                        float *dst) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rows), iota);
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(width), iota);
    for (int64_t k = 0; k < kc; k++) {
        const float *src = (const float *)(base + k * k_stride);
        if (k + PACK_PREFETCH_K < kc) _mm_prefetch((const char *)src + PACK_PREFETCH_K * k_stride, _MM_HINT_T0);
        const __m256 v = _mm256_maskload_ps(src, valid);
        if (k + 1 < kc) _mm256_storeu_ps(dst + k * width, v);
        else _mm256_maskstore_ps(dst + k * width, lanes, v);
    }
}

/* pack_cols_direct for a type fixed at the call. */
static inline __attribute__((always_inline)) void pack_cols_typed(enum ggml_type type, const char *base,
                                                                  size_t k_stride, int64_t rows, int64_t kc,
                                                                  int width, float *dst) {
    const size_t es = pack_elem_size(type);
    if (type == GGML_TYPE_F32 && width >= 4 && width <= 8) { /* 8 - width lanes spill at most one k ahead */
        pack_cols_narrow_f32(base, k_stride, rows, kc, width, dst);
        return;
    }
    const int64_t full = rows & ~(int64_t)7;
    for (int64_t k = 0; k < kc; k++) {
        const char *src = base + k * k_stride;
        float *d = dst + k * width;
        /* each k is another line, often another page, beyond the prefetchers' reach */
        if (k + PACK_PREFETCH_K < kc) _mm_prefetch(src + PACK_PREFETCH_K * k_stride, _MM_HINT_T0);
        int64_t j = 0;
        for (; j < full; j += 8) _mm256_storeu_ps(d + j, pack_load8(type, src + j * es));
        for (; j < rows; j++) d[j] = pack_load1(type, src + j * es);
        for (; j < width; j++) d[j] = 0.0f;
    }
}

/* Pack a k-major operand (a transposed view: for each k, `rows` (<= width) values of
 * consecutive rows lie contiguous, k_stride bytes after the previous k's) into
 * dst[k * width + j]; rows beyond are zero.  This is already the panel's layout, so it
 * is a converting copy per k, inlined here: the per-k call of to_f32 it replaces cost
 * as much as the copy for the 8-wide panels of x (the backward pass's products). */
static inline void pack_cols_direct(enum ggml_type type, const char *base, size_t k_stride, int64_t rows,
                                    int64_t kc, int width, float *dst) {
    PACK_FOR_TYPE(type, pack_cols_typed, base, k_stride, rows, kc, width, dst);
}

#endif /* GGMLC_CPU_GEMM_PACK_X86_H */
