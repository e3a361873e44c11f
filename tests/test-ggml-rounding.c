/*
 * test-ggml-rounding.c - RMS_NORM and ROPE on the CPU backend round as ggml's
 * CPU backend does, bit for bit, so that a model's activations keep ggml's
 * bits into its quantized products (whose activation rounding would
 * otherwise amplify a last-bit difference).  The expected values are a
 * scalar model of ggml's arithmetic written out here, checked against
 * llama.cpp c198af4d's bundled ggml (per-node dumps of a llama model):
 *  - RMS_NORM: float squares summed in double, mean and 1 / sqrtf(mean + eps)
 *    in float, then x * scale;
 *  - ROPE (normal mode, no YaRN): theta_scale = powf(base, -2 / n_dims),
 *    the angle of pair k the angle of pair k - 1 times theta_scale in float
 *    from the position, and (x0, x1) turned to fma(x0, cos, -(x1 sin)),
 *    fma(x0, sin, x1 cos) as ggml's x86 build fuses them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N_EMBD = 768, N_TOK = 9, HEAD = 64, N_HEAD = 4 };

static bool compute(struct ggml_context *ctx, struct ggml_tensor *out, int n_threads) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const bool ok = ggml_graph_compute_with_ctx(ctx, gf, n_threads) == GGML_STATUS_SUCCESS;
    if (!ok) tap_diag("%s", ggmlc_last_error());
    return ok;
}

static int count_differ(const float *a, const float *b, size_t n) {
    int differ = 0;
    for (size_t i = 0; i < n; i++) differ += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return differ;
}

static void check_rms_norm(int n_threads) {
    static float x[N_TOK * N_EMBD], want[N_TOK * N_EMBD];
    const float eps = 1e-5f;
    for (int i = 0; i < N_TOK * N_EMBD; i++) x[i] = test_normal() * (1.0f + (float)(i % 7));
    for (int t = 0; t < N_TOK; t++) {
        const float *r = x + t * N_EMBD;
        double sum = 0.0;
        for (int i = 0; i < N_EMBD; i++) sum += (double)(r[i] * r[i]);
        const float mean = (float)(sum / N_EMBD), scale = 1.0f / sqrtf(mean + eps);
        for (int i = 0; i < N_EMBD; i++) want[t * N_EMBD + i] = r[i] * scale;
    }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    struct ggml_tensor *in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N_EMBD, N_TOK);
    memcpy(in->data, x, sizeof x);
    struct ggml_tensor *out = ggml_rms_norm(ctx, in, eps);
    const int differ = compute(ctx, out, n_threads) ? count_differ(out->data, want, N_TOK * N_EMBD) : -1;
    tap_ok(differ == 0, "rms_norm of %d rows of %d, %d thread(s): ggml's rounding (%d differ)", N_TOK, N_EMBD,
           n_threads, differ);
    ggml_free(ctx);
}

static void check_rope(int n_threads) {
    static float x[N_TOK * N_HEAD * HEAD], want[N_TOK * N_HEAD * HEAD];
    const float base = 10000.0f;
    int32_t pos[N_TOK];
    for (int t = 0; t < N_TOK; t++) pos[t] = t == N_TOK - 1 ? 4000 : 3 * t; /* a far position too */
    for (int i = 0; i < N_TOK * N_HEAD * HEAD; i++) x[i] = test_normal();
    const float theta_scale = powf(base, -2.0f / HEAD);
    for (int t = 0; t < N_TOK; t++)
        for (int h = 0; h < N_HEAD; h++) {
            const float *r = x + (t * N_HEAD + h) * HEAD;
            float *o = want + (t * N_HEAD + h) * HEAD, theta = (float)pos[t];
            for (int k = 0; k < HEAD / 2; k++, theta *= theta_scale) {
                const float c = cosf(theta), s = sinf(theta), x0 = r[2 * k], x1 = r[2 * k + 1];
                o[2 * k] = fmaf(x0, c, -(x1 * s));
                o[2 * k + 1] = fmaf(x0, s, x1 * c);
            }
        }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    struct ggml_tensor *in = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, HEAD, N_HEAD, N_TOK);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, N_TOK);
    memcpy(in->data, x, sizeof x);
    memcpy(p->data, pos, sizeof pos);
    struct ggml_tensor *out = ggml_rope_ext(ctx, in, p, NULL, HEAD, 0, 4096, base, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    const int differ = compute(ctx, out, n_threads) ? count_differ(out->data, want, N_TOK * N_HEAD * HEAD) : -1;
    tap_ok(differ == 0, "rope (normal mode, head %d, positions up to 4000), %d thread(s): ggml's rounding (%d differ)",
           HEAD, n_threads, differ);
    ggml_free(ctx);
}

int main(void) {
    test_seed(7);
    for (int t = 1; t <= 2; t++) {
        check_rms_norm(t);
        check_rope(t);
    }
    return tap_done();
}
