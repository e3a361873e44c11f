/*
 * test-unary-back.c - the CPU kernel of UNARY_BACK (dy * f'(x)) for the activations
 * with a vectorized row loop (GELU, GELU quick, SiLU, sigmoid, tanh, ReLU), against
 * the derivative computed in double precision by hand, over a wide range of x
 * (saturated tails included) and on rows long enough for every vector width and a
 * tail.  The same values also go through a transposed x, which takes the kernel's
 * scalar loop: both paths must agree with the reference.
 */
#include <math.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

#define ROW 1003 /* odd: a masked or scalar tail after the vectors */
#define ROWS 3

static double sigmoid_d(double v) { return 1.0 / (1.0 + exp(-v)); }

/* f'(x) in double precision, written from the functions' definitions. */
static double derivative(enum ggml_unary_op op, double v) {
    switch (op) {
    case GGML_UNARY_OP_GELU: { /* y = x/2 (1 + tanh(c (x + k x^3))) */
        const double c = sqrt(2.0 / M_PI), k = 0.044715, t = tanh(c * (v + k * v * v * v));
        return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * k * v * v);
    }
    case GGML_UNARY_OP_GELU_QUICK: { /* y = x sigmoid(1.702 x) */
        const double s = sigmoid_d(1.702 * v);
        return s + 1.702 * v * s * (1.0 - s);
    }
    case GGML_UNARY_OP_SILU: {
        const double s = sigmoid_d(v);
        return s * (1.0 + v * (1.0 - s));
    }
    case GGML_UNARY_OP_SIGMOID: return sigmoid_d(v) * (1.0 - sigmoid_d(v));
    case GGML_UNARY_OP_TANH: return 1.0 - tanh(v) * tanh(v);
    case GGML_UNARY_OP_RELU: return v > 0 ? 1.0 : 0.0;
    default: return NAN;
    }
}

/* Runs unary_back on x (contiguous, or a transposed view of the same values) and dy;
 * returns the largest error relative to max(1, |reference|). */
static double run_case(enum ggml_unary_op op, bool transposed, const float *xv, const float *dyv) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *x, *dy = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ROW, ROWS);
    if (transposed) {
        struct ggml_tensor *xt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ROWS, ROW);
        for (int r = 0; r < ROWS; r++)
            for (int i = 0; i < ROW; i++) ((float *)xt->data)[i * ROWS + r] = xv[r * ROW + i];
        x = ggml_transpose(ctx, xt);
    } else {
        x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ROW, ROWS);
        for (int i = 0; i < ROW * ROWS; i++) ((float *)x->data)[i] = xv[i];
    }
    for (int i = 0; i < ROW * ROWS; i++) ((float *)dy->data)[i] = dyv[i];
    struct ggml_tensor *out = ggml_unary_back(ctx, x, dy, op);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    double worst = INFINITY;
    if (ggml_graph_compute_with_ctx(ctx, g, 2) == GGML_STATUS_SUCCESS) {
        worst = 0;
        for (int i = 0; i < ROW * ROWS; i++) {
            const double ref = (double)dyv[i] * derivative(op, (double)xv[i]);
            const double err = fabs(((float *)out->data)[i] - ref) / fmax(1.0, fabs(ref));
            if (!(err <= worst)) worst = err; /* NaN counts as the worst */
        }
    }
    ggml_free(ctx);
    return worst;
}

int main(void) {
    static const struct {
        const char *name;
        enum ggml_unary_op op;
    } ops[] = {
        {"gelu", GGML_UNARY_OP_GELU},       {"gelu_quick", GGML_UNARY_OP_GELU_QUICK},
        {"silu", GGML_UNARY_OP_SILU},       {"sigmoid", GGML_UNARY_OP_SIGMOID},
        {"tanh", GGML_UNARY_OP_TANH},       {"relu", GGML_UNARY_OP_RELU},
    };
    float *x = malloc(ROW * ROWS * sizeof *x), *dy = malloc(ROW * ROWS * sizeof *dy);
    test_seed(21);
    /* an even sweep over [-20, 20] (both saturated tails, and 0) plus random values near 0 */
    for (int i = 0; i < ROW * ROWS; i++)
        x[i] = i % 2 ? -20.0f + 40.0f * (float)i / (ROW * ROWS - 1) : test_uniform(-3.0f, 3.0f);
    x[0] = 0.0f;
    test_fill_uniform(dy, ROW * ROWS, -2.0f, 2.0f);
    for (size_t c = 0; c < sizeof ops / sizeof ops[0]; c++)
        for (int t = 0; t < 2; t++) {
            const double err = run_case(ops[c].op, t == 1, x, dy);
            tap_ok(err <= 2e-6, "unary_back %s, %s x: max relative error %.2e (<= 2e-6)", ops[c].name,
                   t ? "transposed (scalar loop)" : "contiguous (vector loop)", err);
        }
    free(x);
    free(dy);
    return tap_done();
}
