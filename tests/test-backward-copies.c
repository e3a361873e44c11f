/*
 * test-backward-copies.c - the backward graph copies a gradient only where an operator needs
 * contiguous rows and the gradient is not: a chain of the Transformer's element-wise and row
 * operators (rms_norm, gelu, diag_mask_inf, soft_max, tanh) on contiguous tensors gets no
 * CONT node, while a permuted input's gradient still does; the gradients of several views
 * of one tensor are summed without a tensor of zeros for each; weights shared by the batches
 * of their input get one product over all rows.  Gradients are checked
 * against central finite differences.
 */
#include <math.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

static int count_op(struct ggml_cgraph *g, enum ggml_op op) {
    int n = 0;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) n += ggml_graph_node(g, i)->op == op;
    return n;
}

/* The forward graph of loss (param marked by the caller) and its backward graph. */
struct graphs {
    struct ggml_cgraph *gf, *gb;
    struct ggml_tensor *loss;
};

static struct graphs build(struct ggml_context *ctx, struct ggml_tensor *loss) {
    ggml_set_loss(loss);
    struct graphs g = {ggml_new_graph_custom(ctx, 1024, true), NULL, loss};
    ggml_build_forward_expand(g.gf, loss);
    g.gb = ggml_graph_dup(ctx, g.gf, true);
    ggml_build_backward_expand(ctx, g.gb, NULL);
    return g;
}

static int added_nodes(const struct graphs *g, enum ggml_op op) {
    return count_op(g->gb, op) - count_op(g->gf, op);
}

static double loss_value(struct ggml_context *ctx, const struct graphs *g) {
    ggml_graph_compute_with_ctx(ctx, g->gf, 2);
    return ((float *)g->loss->data)[0];
}

/* Runs the backward graph and checks param's gradient against central differences. */
static void check_gradient(struct ggml_context *ctx, const struct graphs *g, struct ggml_tensor *param,
                           const char *what) {
    ggml_graph_reset(g->gb);
    ggml_graph_compute_with_ctx(ctx, g->gb, 2);
    const float *grad = ggml_graph_get_grad(g->gb, param)->data;
    float *v = param->data;
    double worst = 0;
    for (int64_t j = 0; j < ggml_nelements(param); j += 3) {
        const float v0 = v[j], step = 1e-3f;
        v[j] = v0 + step;
        const double lp = loss_value(ctx, g);
        v[j] = v0 - step;
        const double lm = loss_value(ctx, g);
        v[j] = v0;
        const double numeric = (lp - lm) / (2.0 * step), err = fabs(grad[j] - numeric) / (fabs(numeric) + 0.05);
        if (!(err <= worst)) worst = err;
    }
    tap_ok(worst <= 1e-2, "%s: gradient matches finite differences (worst relative error %.2g)", what, worst);
}

/* loss = sum(w * tanh(soft_max(diag_mask_inf(gelu(rms_norm(x)))))) over x [16, 16], or over
 * the transpose of x when permuted (whose gradient must be made contiguous again). */
static void run(bool permuted) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 16);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 16);
    test_fill_uniform(x->data, 256, -2.0f, 2.0f);
    test_fill_uniform(w->data, 256, -1.0f, 1.0f);
    ggml_set_param(x);
    struct ggml_tensor *in = permuted ? ggml_permute(ctx, x, 1, 0, 2, 3) : x;
    struct ggml_tensor *h = ggml_gelu(ctx, ggml_rms_norm(ctx, permuted ? ggml_cont(ctx, in) : in, 1e-5f));
    h = ggml_tanh(ctx, ggml_soft_max(ctx, ggml_diag_mask_inf(ctx, h, 0)));
    const struct graphs g = build(ctx, ggml_sum(ctx, ggml_mul(ctx, h, w)));
    const int copies = added_nodes(&g, GGML_OP_CONT);
    if (permuted)
        tap_ok(copies == 1, "a permuted input's gradient is copied once (%d CONT nodes added)", copies);
    else
        tap_ok(copies == 0, "contiguous gradients through rms_norm, gelu, mask, soft_max, tanh are not "
                            "copied (%d CONT nodes added)", copies);
    check_gradient(ctx, &g, x, permuted ? "permuted input" : "contiguous input");
    ggml_free(ctx);
}

/* Three views of one tensor (a fused QKV projection's q, k, v): their gradients are added
 * into one sum, so only the first needs a tensor of zeros. */
static void run_views(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 12, 5);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    test_fill_uniform(x->data, 60, -2.0f, 2.0f);
    test_fill_uniform(w->data, 20, -1.0f, 1.0f);
    ggml_set_param(x);
    struct ggml_tensor *qkv = ggml_scale(ctx, x, 0.5f), *part[3]; /* an intermediate, as a projection's */
    for (int i = 0; i < 3; i++) part[i] = ggml_view_2d(ctx, qkv, 4, 5, qkv->nb[1], (size_t)i * 4 * sizeof(float));
    struct ggml_tensor *h = ggml_add(ctx, ggml_mul(ctx, part[0], w), ggml_tanh(ctx, part[1]));
    const struct graphs g = build(ctx, ggml_sum(ctx, ggml_add(ctx, h, ggml_mul(ctx, ggml_sqr(ctx, part[2]), part[0]))));
    const int fills = added_nodes(&g, GGML_OP_FILL), accs = added_nodes(&g, GGML_OP_ACC);
    tap_ok(fills == 1 && accs == 3, "gradients of 3 views of one tensor: %d tensors of zeros, %d ACC nodes (1, 3)",
           fills, accs);
    check_gradient(ctx, &g, x, "3 views");
    ggml_free(ctx);
}

/* Weights [8, 6] applied to every batch of x [8, 5, 3] (a Linear layer on [C, T, B]): their
 * gradient is one product over all 15 rows, without a per-batch product reduced by a
 * transposing copy and sum_rows. */
static void run_batched_weights(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 6);
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 5, 3);
    struct ggml_tensor *u = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 6, 5, 3);
    test_fill_uniform(w->data, 48, -1.0f, 1.0f);
    test_fill_uniform(x->data, 120, -1.0f, 1.0f);
    test_fill_uniform(u->data, 90, -1.0f, 1.0f);
    ggml_set_param(w);
    const struct graphs g = build(ctx, ggml_sum(ctx, ggml_mul(ctx, ggml_tanh(ctx, ggml_mul_mat(ctx, w, x)), u)));
    const int copies = added_nodes(&g, GGML_OP_CONT), sums = added_nodes(&g, GGML_OP_SUM_ROWS);
    tap_ok(copies == 0 && sums == 0, "shared weights' gradient over 3 batches: %d CONT, %d SUM_ROWS nodes (0, 0)",
           copies, sums);
    check_gradient(ctx, &g, w, "shared weights");
    ggml_free(ctx);
}

int main(void) {
    test_seed(22);
    run(false);
    run(true);
    run_views();
    run_batched_weights();
    return tap_done();
}
