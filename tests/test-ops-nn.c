/* test-ops-nn.c - softmax (+ back), normalisations (+ backs), silu_back, cross-entropy
 * and optimizer steps against PyTorch golden data (tests/golden/gen_nn.py). */
#include <math.h>

#include "test-ops-nn.h"

#define TIGHT 1e-10 /* f32 kernels against float64 references */

static void test_softmax(void) {
    struct gold_set *gs = gold_load("nn_softmax.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = nn_f32(ctx, gs, "x");
    struct ggml_tensor *xt = nn_input(ctx, gs, "x", GGML_TYPE_F32, true);
    struct ggml_tensor *mask = nn_f32(ctx, gs, "mask");
    struct ggml_tensor *mask16 = nn_input(ctx, gs, "mask", GGML_TYPE_F16, false);
    struct ggml_tensor *sinks = nn_f32(ctx, gs, "sinks");

    struct ggml_tensor *y = ggml_soft_max(ctx, x);
    tap_ok(ops_compute(ctx, y), "soft_max computes");
    nn_check(y, gs, "plain", TIGHT, "soft_max of rows with large values");

    y = ggml_soft_max_ext(ctx, xt, mask, nn_arg(gs, "masked_args", 0), nn_arg(gs, "masked_args", 1));
    ops_compute(ctx, y);
    nn_check(y, gs, "masked", TIGHT, "soft_max_ext, transposed input, f32 mask broadcast over dims 2 and 3");

    y = ggml_soft_max_ext(ctx, x, mask16, nn_arg(gs, "alibi_args", 0), nn_arg(gs, "alibi_args", 1));
    ops_compute(ctx, y);
    nn_check(y, gs, "alibi", TIGHT, "soft_max_ext with f16 mask and ALiBi over 6 heads");

    y = ggml_soft_max_ext(ctx, x, mask, nn_arg(gs, "sinks_args", 0), nn_arg(gs, "sinks_args", 1));
    ggml_soft_max_add_sinks(y, sinks);
    ops_compute(ctx, y);
    nn_check(y, gs, "with_sinks", TIGHT, "soft_max_ext with attention sinks and ALiBi");

    struct ggml_tensor *xc = ggml_dup_tensor(ctx, x);
    memcpy(xc->data, x->data, ggml_nbytes(x));
    y = ggml_soft_max_ext_inplace(ctx, xc, mask, nn_arg(gs, "masked_args", 0), nn_arg(gs, "masked_args", 1));
    ops_compute(ctx, y);
    tap_ok(y && y->data == xc->data, "soft_max_ext_inplace writes into its input");
    nn_check(xc, gs, "masked", TIGHT, "soft_max_ext_inplace values");

    struct ggml_tensor *dy = nn_f32(ctx, gs, "back_dy"), *yf = nn_f32(ctx, gs, "back_y");
    const float scale = nn_arg(gs, "alibi_args", 0), max_bias = nn_arg(gs, "alibi_args", 1);
    struct ggml_tensor *dx = ggml_soft_max_ext_back(ctx, dy, yf, scale, max_bias);
    ops_compute(ctx, dx);
    nn_check(dx, gs, "back_dx", TIGHT, "soft_max_ext_back with scale and ALiBi vs autograd");
    dx = ggml_soft_max_ext_back_inplace(ctx, dy, yf, scale, max_bias);
    ops_compute(ctx, dx);
    tap_ok(dx && dx->data == dy->data, "soft_max_ext_back_inplace writes into the gradient");
    nn_check(dy, gs, "back_dx", TIGHT, "soft_max_ext_back_inplace values");

    /* a row whose every logit is masked gives zeros (not NaN, which would poison a backward pass) */
    struct ggml_tensor *row = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 9, 2), *row_mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 9, 2);
    for (int i = 0; i < 18; i++) {
        ((float *)row->data)[i] = (float)i;
        ((float *)row_mask->data)[i] = i < 9 ? -INFINITY : 0.0f;
    }
    y = ggml_soft_max_ext(ctx, row, row_mask, 1.0f, 0.0f);
    ops_compute(ctx, y);
    const float *yv = (const float *)y->data;
    bool zeros = true;
    for (int i = 0; i < 9; i++) zeros = zeros && yv[i] == 0.0f;
    tap_ok(zeros && fabsf(yv[17] - 0.632198578f) < 1e-6f, "a fully masked row gives zeros, the next row a softmax");

    struct ggml_tensor *bad_mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 36, 7);
    nn_rejects(ggml_soft_max_ext(ctx, x, bad_mask, 1.0f, 0.0f), GGMLC_ERR_SHAPE, "ggml_soft_max_ext", "a mask of another row length");
    struct ggml_tensor *mask4 = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 37, 7, 4);
    nn_rejects(ggml_soft_max_ext(ctx, x, mask4, 1.0f, 0.0f), GGMLC_ERR_SHAPE, "ggml_soft_max_ext", "a mask whose heads do not divide");
    struct ggml_tensor *mask_i32 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 37, 7);
    nn_rejects(ggml_soft_max_ext(ctx, x, mask_i32, 1.0f, 0.0f), GGMLC_ERR_TYPE, "ggml_soft_max_ext", "an i32 mask");
    nn_rejects(ggml_soft_max_ext_back(ctx, dy, mask, 1.0f, 0.0f), GGMLC_ERR_SHAPE, "ggml_soft_max_ext_back",
               "soft_max_ext_back of different shapes");
    y = ggml_soft_max_ext(ctx, x, mask, 1.0f, 0.0f);
    ggml_soft_max_add_sinks(y, mask);
    tap_ok(y->src[2] == NULL && strstr(ggmlc_last_error(), "sinks") != NULL, "sinks of the wrong size are refused");
    tap_ok(ggml_soft_max(ctx, NULL) == NULL && ggml_soft_max_ext(ctx, NULL, mask, 1, 0) == NULL, "NULL operands give NULL");
    ggml_free(ctx);
    gold_free(gs);
}

static void test_norms(void) {
    struct gold_set *gs = gold_load("nn_norm.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = nn_f32(ctx, gs, "x");
    struct ggml_tensor *xt = nn_input(ctx, gs, "x", GGML_TYPE_F32, true);

    struct ggml_tensor *y = ggml_norm(ctx, x, 1e-5f);
    ops_compute(ctx, y);
    nn_check(y, gs, "norm", TIGHT, "norm vs layer_norm (offset 50, spread 4)");
    y = ggml_rms_norm(ctx, xt, 1e-6f);
    ops_compute(ctx, y);
    nn_check(y, gs, "rms", TIGHT, "rms_norm of a transposed view");
    y = ggml_l2_norm(ctx, x, 1e-12f);
    ops_compute(ctx, y);
    nn_check(y, gs, "l2", TIGHT, "l2_norm vs F.normalize");
    struct ggml_tensor *gx = nn_f32(ctx, gs, "gx");
    y = ggml_group_norm(ctx, gx, 3, 1e-6f);
    ops_compute(ctx, y);
    nn_check(y, gs, "group", TIGHT, "group_norm, 6 channels in 3 groups, 2 batches");
    y = ggml_group_norm_inplace(ctx, gx, 3, 1e-6f);
    ops_compute(ctx, y);
    tap_ok(y && y->data == gx->data, "group_norm_inplace writes into its input");
    nn_check(gx, gs, "group", TIGHT, "group_norm_inplace values");
    struct ggml_tensor *x16 = nn_input(ctx, gs, "x", GGML_TYPE_F16, false);
    y = ggml_norm_inplace(ctx, x16, 1e-5f);
    ops_compute(ctx, y);
    nn_check(y, gs, "norm", 1e-5, "norm_inplace of an f16 tensor");

    y = ggml_rms_norm(ctx, nn_input(ctx, gs, "x", GGML_TYPE_BF16, true), 1e-6f);
    ops_compute(ctx, y);
    tap_ok(y && y->type == GGML_TYPE_BF16, "rms_norm of bf16 stays bf16");
    nn_check(y, gs, "rms", 1e-4, "rms_norm of a transposed bf16 view (bf16 rounding)");

    struct ggml_tensor *dy = nn_f32(ctx, gs, "dy");
    struct ggml_tensor *dx = ggml_rms_norm_back(ctx, dy, x, 1e-6f);
    ops_compute(ctx, dx);
    nn_check(dx, gs, "rms_dx", TIGHT, "rms_norm_back(dy, x) vs autograd");
    dx = ggml_silu_back(ctx, dy, nn_f32(ctx, gs, "silu_x"));
    ops_compute(ctx, dx);
    nn_check(dx, gs, "silu_dx", TIGHT, "silu_back(dy, x) vs autograd");

    nn_rejects(ggml_group_norm(ctx, gx, 0, 1e-6f), GGMLC_ERR_INVALID_ARG, "ggml_group_norm", "group_norm with 0 groups");
    struct ggml_tensor *ints = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 8);
    nn_rejects(ggml_rms_norm(ctx, ints, 1e-6f), GGMLC_ERR_TYPE, "ggml_rms_norm", "rms_norm of an i32 tensor");
    nn_rejects(ggml_rms_norm_back(ctx, dy, gx, 1e-6f), GGMLC_ERR_SHAPE, "ggml_rms_norm_back", "rms_norm_back of different shapes");
    nn_rejects(ggml_silu_back(ctx, dy, gx), GGMLC_ERR_SHAPE, "ggml_silu_back", "silu_back of different shapes");
    ggml_free(ctx);
    gold_free(gs);
}

static void test_losses(void) {
    struct gold_set *gs = gold_load("nn_loss.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *logits = nn_f32(ctx, gs, "logits"), *labels = nn_f32(ctx, gs, "labels");
    struct ggml_tensor *dloss = nn_f32(ctx, gs, "dloss");
    struct ggml_tensor *loss = ggml_cross_entropy_loss(ctx, logits, labels);
    tap_ok(loss && ggml_nelements(loss) == 1 && ops_compute(ctx, loss), "cross_entropy_loss gives a scalar");
    nn_check(loss, gs, "loss", TIGHT, "cross_entropy_loss vs torch (soft labels, logits up to +-200)");
    struct ggml_tensor *d = ggml_cross_entropy_loss_back(ctx, dloss, logits, labels);
    ops_compute(ctx, d);
    nn_check(d, gs, "dlogits", TIGHT, "cross_entropy_loss_back(grad, logits, labels) vs autograd");
    d = ggml_cross_entropy_loss_back(ctx, logits, labels, dloss);
    ops_compute(ctx, d);
    nn_check(d, gs, "dlogits", TIGHT, "cross_entropy_loss_back in the older (logits, labels, grad) order");
    nn_rejects(ggml_cross_entropy_loss(ctx, logits, dloss), GGMLC_ERR_SHAPE, "ggml_cross_entropy_loss",
               "cross_entropy_loss of different shapes");
    nn_rejects(ggml_cross_entropy_loss_back(ctx, logits, labels, logits), GGMLC_ERR_SHAPE, "ggml_cross_entropy_loss_back",
               "cross_entropy_loss_back without a scalar gradient");
    ggml_free(ctx);
    gold_free(gs);
}

/* Cross-entropy over rows enough for two tasks (2 threads), against a double-precision
 * reference: soft labels with zeros and a -inf logit under some zero labels (left out of
 * the loss, not NaN); the gradient's error relative to its largest value (the exponentials
 * are float: about 1e-7 of a row's label sum). */
static void test_losses_split(void) {
    enum { N = 256, ROWS = 96 };
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *logits = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, ROWS), *labels = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, ROWS);
    float *x = logits->data, *t = labels->data;
    double loss_ref = 0.0, max_err = 0.0, max_ref = 0.0;
    static double dx_ref[N * ROWS];
    for (int r = 0; r < ROWS; r++) {
        float *xr = x + r * N, *tr = t + r * N;
        double label_sum = 0.0, max = -INFINITY, sum = 0.0;
        for (int i = 0; i < N; i++) {
            tr[i] = i % 7 == r % 7 ? test_uniform(0.1f, 1.0f) : 0.0f;
            xr[i] = i % 13 == 5 && tr[i] == 0.0f ? -INFINITY : 8.0f * test_normal();
            label_sum += tr[i];
            max = xr[i] > max ? xr[i] : max;
        }
        for (int i = 0; i < N; i++) sum += exp(xr[i] - max);
        const double lse = max + log(sum);
        for (int i = 0; i < N; i++) {
            if (tr[i] != 0.0f) loss_ref -= tr[i] * (xr[i] - lse) / ROWS;
            dx_ref[r * N + i] = (exp(xr[i] - lse) * label_sum - tr[i]) / ROWS;
            max_ref = fmax(max_ref, fabs(dx_ref[r * N + i]));
        }
    }
    struct ggml_tensor *loss = ggml_cross_entropy_loss(ctx, logits, labels);
    const bool loss_ok = ops_compute(ctx, loss);
    const double loss_err = loss_ok ? fabs(*(float *)loss->data - loss_ref) / fabs(loss_ref) : INFINITY;
    tap_ok(loss_err <= 1e-6, "cross_entropy_loss of %d rows of %d (two tasks) vs double: relative error %.2g <= 1e-6", ROWS, N, loss_err);
    struct ggml_tensor *one = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    *(float *)one->data = 1.0f;
    struct ggml_tensor *d = ggml_cross_entropy_loss_back(ctx, one, logits, labels);
    if (ops_compute(ctx, d))
        for (int i = 0; i < N * ROWS; i++) {
            const double err = fabs(((float *)d->data)[i] - dx_ref[i]) / max_ref;
            if (!(err <= max_err)) max_err = err;
        }
    else max_err = INFINITY;
    tap_ok(max_err <= 1e-6, "cross_entropy_loss_back of the same vs double: largest error %.2g of the largest value <= 1e-6",
           max_err);
    ggml_free(ctx);
}

static void test_optimizers(void) {
    struct gold_set *gs = gold_load("nn_loss.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *w = nn_f32(ctx, gs, "adam_w0"), *m = nn_f32(ctx, gs, "adam_m0"), *v = nn_f32(ctx, gs, "adam_v0");
    struct ggml_tensor *g = nn_f32(ctx, gs, "adam_g"), *hp = nn_f32(ctx, gs, "adam_args");
    ggml_set_param(w);
    struct ggml_tensor *step = ggml_opt_step_adamw(ctx, w, g, m, v, hp);
    tap_ok(step && step->data == w->data && ops_compute(ctx, step), "opt_step_adamw updates the parameter in place");
    nn_check(w, gs, "adam_w1", TIGHT, "AdamW step vs torch.optim.AdamW (third step, weight decay)");
    nn_check(m, gs, "adam_m1", TIGHT, "AdamW first moment");
    nn_check(v, gs, "adam_v1", TIGHT, "AdamW second moment");

    struct ggml_tensor *ws = nn_f32(ctx, gs, "sgd_w0");
    step = ggml_opt_step_sgd(ctx, ws, nn_f32(ctx, gs, "sgd_g"), nn_f32(ctx, gs, "sgd_args"));
    tap_ok(step && step->data == ws->data && ops_compute(ctx, step), "opt_step_sgd updates the parameter in place");
    nn_check(ws, gs, "sgd_w1", TIGHT, "SGD step vs torch.optim.SGD (weight decay)");

    /* strided (transposed) parameters, moments and gradients take the kernels' gather/scatter path */
    struct ggml_tensor *wt = nn_input(ctx, gs, "adam_w0", GGML_TYPE_F32, true), *mt = nn_input(ctx, gs, "adam_m0", GGML_TYPE_F32, true);
    struct ggml_tensor *vt = nn_input(ctx, gs, "adam_v0", GGML_TYPE_F32, true);
    ggml_set_param(wt);
    step = ggml_opt_step_adamw(ctx, wt, nn_input(ctx, gs, "adam_g", GGML_TYPE_F32, true), mt, vt, hp);
    tap_ok(step && ops_compute(ctx, step), "opt_step_adamw on transposed views");
    nn_check(wt, gs, "adam_w1", TIGHT, "AdamW step on a transposed parameter and gradient");
    nn_check(mt, gs, "adam_m1", TIGHT, "AdamW first moment, transposed");
    nn_check(vt, gs, "adam_v1", TIGHT, "AdamW second moment, transposed");
    ws = nn_input(ctx, gs, "sgd_w0", GGML_TYPE_F32, true);
    step = ggml_opt_step_sgd(ctx, ws, nn_input(ctx, gs, "sgd_g", GGML_TYPE_F32, true), nn_f32(ctx, gs, "sgd_args"));
    tap_ok(step && ops_compute(ctx, step), "opt_step_sgd on transposed views");
    nn_check(ws, gs, "sgd_w1", TIGHT, "SGD step on a transposed parameter and gradient");

    nn_rejects(ggml_opt_step_adamw(ctx, w, g, m, v, g), GGMLC_ERR_SHAPE, "ggml_opt_step_adamw", "adamw_params of 45 values");
    nn_rejects(ggml_opt_step_sgd(ctx, w, ws, hp), GGMLC_ERR_SHAPE, "ggml_opt_step_sgd", "sgd step with a gradient of another shape");
    ggml_free(ctx);
    gold_free(gs);
}

int main(void) {
    test_softmax();
    test_norms();
    test_losses();
    test_losses_split();
    test_optimizers();
    return tap_done();
}
