/*
 * matvec-generic.c - the portable streaming mat-vec kernel (see matvec.h):
 * plain C the compiler vectorizes with the baseline instruction set.  Each
 * weight row is converted to f32 a chunk at a time (in L1) and dotted with
 * every column while the chunk is there, so the weights are read once.
 */
#include "gemm.h"
#include "ggmlc-blocks.h"
#include "matvec.h"

extern const struct cpu_gemm_kernel cpu_gemm_kernel_generic;

enum { LANES = 8 }; /* independent partial sums per column: a vector's worth */

/* acc[l] += sum over j = l mod LANES of w[j] * x[j], j < n. */
static void dot_lanes(const float *w, const float *x, int64_t n, float acc[LANES]) {
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += w[j + l] * x[j + l];
    for (; j < n; j++) acc[0] += w[j] * x[j];
}

void cpu_matvec_generic(int64_t k, enum ggml_type type, const void *w, size_t w_row_stride, int64_t nw, const float *x,
                        int64_t x_stride, int nx, float *out, int64_t out_row_stride, int64_t out_col_stride) {
    float wf[CPU_MATVEC_KC];
    const size_t es = ggml_type_size(type);
    for (int64_t r = 0; r < nw; r++) {
        const char *row = (const char *)w + r * w_row_stride;
        float acc[CPU_MATVEC_MAX_COLS][LANES] = {{0}};
        for (int64_t k0 = 0; k0 < k; k0 += CPU_MATVEC_KC) {
            const int64_t kb = k - k0 < CPU_MATVEC_KC ? k - k0 : CPU_MATVEC_KC;
            const float *wc = wf;
            if (type == GGML_TYPE_F32) wc = (const float *)row + k0;
            else cpu_gemm_kernel_generic.to_f32(type, row + k0 * es, wf, kb);
            for (int c = 0; c < nx; c++) dot_lanes(wc, x + c * x_stride + k0, kb, acc[c]);
        }
        for (int c = 0; c < nx; c++) {
            float s = 0.0f;
            for (int l = 0; l < LANES; l++) s += acc[c][l];
            out[r * out_row_stride + c * out_col_stride] = s;
        }
    }
}
