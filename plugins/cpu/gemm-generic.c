/*
 * gemm-generic.c - the portable kernels of the dense product (see gemm.h):
 * plain C the compiler vectorizes with the baseline instruction set.
 */
#include "gemm.h"
#include "ggmlc-blocks.h"
#include "matvec.h"

#define NR 8
#define MR 4

static void micro_generic(int64_t kc, const float *wp, const float *xp, float *c, int64_t ldc, bool accumulate) {
    float acc[MR][NR] = {{0}};
    for (int64_t k = 0; k < kc; k++, wp += NR, xp += MR)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) acc[i][j] += wp[j] * xp[i];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + acc[i][j];
}

static void to_f32_generic(enum ggml_type type, const void *src, float *dst, int64_t n) {
    switch (type) {
    case GGML_TYPE_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = ggmlc_fp16_to_fp32(((const ggml_fp16_t *)src)[i]);
        break;
    case GGML_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = ggmlc_bf16_to_fp32(((const ggml_bf16_t *)src)[i]);
        break;
    default:
        memcpy(dst, src, (size_t)n * sizeof(float));
        break;
    }
}

const struct cpu_gemm_kernel cpu_gemm_kernel_generic = {
    .name = "generic",
    .nr = NR,
    .mr = MR,
    .kc = 256,
    .mc = 256,
    .nc = 1024,
    .micro = micro_generic,
    .to_f32 = to_f32_generic,
    .matvec = cpu_matvec_generic,
};
