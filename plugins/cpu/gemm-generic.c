/*
 * gemm-generic.c - the portable kernels of the dense product (see gemm.h):
 * plain C the compiler vectorizes with the baseline instruction set.
 */
#include "gemm.h"
#include "ggml-impl.h"

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

/* w converted in chunks so the inner loop is a plain f32 dot product. */
static void dot_rows_generic(int64_t k, enum ggml_type type, const void *w, const float *x, int64_t x_stride, int nx,
                             float *out) {
    enum { CHUNK = 256 };
    float wf[CHUNK];
    float acc[4][8] = {{0}};
    const size_t es = ggml_type_size(type);
    for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
        const int64_t kb = k - k0 < CHUNK ? k - k0 : CHUNK;
        const float *wc = wf;
        if (type == GGML_TYPE_F32) wc = (const float *)w + k0;
        else to_f32_generic(type, (const char *)w + k0 * es, wf, kb);
        for (int i = 0; i < nx; i++) {
            const float *xr = x + i * x_stride + k0;
            int64_t j = 0;
            for (; j + 8 <= kb; j += 8)
                for (int l = 0; l < 8; l++) acc[i][l] += wc[j + l] * xr[j + l];
            for (; j < kb; j++) acc[i][0] += wc[j] * xr[j];
        }
    }
    for (int i = 0; i < nx; i++) {
        float s = 0.0f;
        for (int l = 0; l < 8; l++) s += acc[i][l];
        out[i] = s;
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
    .dot_rows = dot_rows_generic,
};
