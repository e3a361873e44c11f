/*
 * test-rope-table.c - the CPU rope's two ways of keeping angles: a table per position (few
 * positions: filled on first use, rows of several heads and batches sharing it) and the
 * single cache refilled when the position changes (long sequences).  Both, forward and
 * backward, in NeoX and normal mode, with positions in random order (below 64: float
 * angles keep the error under 2e-5), against rotations computed in double precision here.
 */
#include <math.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

#define BASE 10000.0

/* Largest |out - rotate(x)| of rope over x [ne0, heads, T, batches], positions random. */
static double run(int64_t ne0, int64_t heads, int64_t t, int64_t batches, int mode, bool back) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){64 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ne0, heads, t, batches);
    struct ggml_tensor *pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, t);
    const int64_t n = ggml_nelements(x);
    test_fill_uniform(x->data, (size_t)n, -1.0f, 1.0f);
    for (int64_t i = 0; i < t; i++) ((int32_t *)pos->data)[i] = (int32_t)(rand() % 64);
    struct ggml_tensor *y =
        back ? ggml_rope_ext_back(ctx, x, pos, NULL, (int)ne0, mode, 4096, (float)BASE, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)
             : ggml_rope_ext(ctx, x, pos, NULL, (int)ne0, mode, 4096, (float)BASE, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    double worst = INFINITY;
    if (ggml_graph_compute_with_ctx(ctx, g, 2) == GGML_STATUS_SUCCESS) {
        worst = 0;
        const float *xv = x->data, *yv = y->data;
        const bool neox = mode == GGML_ROPE_TYPE_NEOX;
        for (int64_t row = 0; row < n / ne0; row++) {
            const int64_t i2 = (row / heads) % t;
            const double p = ((const int32_t *)pos->data)[i2], sign = back ? -1.0 : 1.0;
            for (int64_t k = 0; k < ne0 / 2; k++) {
                const double theta = p * pow(BASE, -2.0 * (double)k / (double)ne0);
                const int64_t a = row * ne0 + (neox ? k : 2 * k), b = a + (neox ? ne0 / 2 : 1);
                const double c = cos(theta), s = sign * sin(theta);
                const double ya = xv[a] * c - xv[b] * s, yb = xv[a] * s + xv[b] * c;
                worst = fmax(worst, fmax(fabs(yv[a] - ya), fabs(yv[b] - yb)));
            }
        }
    }
    ggml_free(ctx);
    return worst;
}

int main(void) {
    test_seed(23);
    srand(23);
    static const struct {
        const char *what;
        int64_t ne0, heads, t, batches;
    } shapes[] = {
        {"per-position tables (4 heads x 37 positions x 3 batches)", 32, 4, 37, 3},
        {"refilled cache (1100 positions of 64 dimensions)", 64, 2, 1100, 2},
    };
    for (int s = 0; s < 2; s++)
        for (int m = 0; m < 2; m++)
            for (int back = 0; back < 2; back++) {
                const int mode = m ? GGML_ROPE_TYPE_NEOX : 0;
                const double err = run(shapes[s].ne0, shapes[s].heads, shapes[s].t, shapes[s].batches, mode, back);
                tap_ok(err <= 2e-5, "rope%s %s, %s: max error %.2e (<= 2e-5)", back ? "_back" : "",
                       m ? "neox" : "normal", shapes[s].what, err);
            }
    return tap_done();
}
