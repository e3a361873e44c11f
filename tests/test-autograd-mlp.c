/*
 * test-autograd-mlp.c - an MLP trained by eager tensors equals the same MLP trained by the
 * static-graph model API (ggmlc-nn.h): same initial weights, same batches, AdamW through the
 * shared optimizer module; the losses of every step and the final weights agree within 1e-6.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggmlc-autograd.h"
#include "ggmlc-nn.h"
#include "testutil.h"

#define IN     6
#define HIDDEN 5
#define OUT    3
#define BATCH  8
#define STEPS  6

static const int64_t arch[3] = {IN, HIDDEN, OUT};

static ggmlc_model *static_model(const struct ggmlc_compile_options *co) {
    ggmlc_model *m = ggmlc_sequential(&arch[0], 1);
    ggmlc_model_add(m, ggmlc_dense(HIDDEN, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(OUT, GGMLC_ACT_NONE));
    if (ggmlc_model_compile(m, co) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static double max_rel_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1e-3 + fabs((double)b[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

int main(void) {
    ga_device *dev = ga_device_get("CPU");
    if (!dev) return tap_skip_all(ggmlc_last_error());
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.learning_rate = 0.01f;
    co.weight_decay = 0.02f;
    co.backend = "cpu";
    ggmlc_model *model = static_model(&co);
    const int64_t n_w = model ? ggmlc_model_get_weights(model, NULL, 0) : 0;
    tap_ok(n_w == IN * HIDDEN + HIDDEN + HIDDEN * OUT + OUT, "the static model has %lld weights",
           (long long)n_w);
    if (n_w != IN * HIDDEN + HIDDEN + HIDDEN * OUT + OUT) return tap_done();
    float w0[IN * HIDDEN + HIDDEN + HIDDEN * OUT + OUT], w_static[sizeof w0 / sizeof *w0];
    ggmlc_model_get_weights(model, w0, (size_t)n_w);
    /* the eager parameters: dense kernels are (out, in) row-major, as PyTorch's */
    const int64_t shapes[4][2] = {{HIDDEN, IN}, {HIDDEN, 1}, {OUT, HIDDEN}, {OUT, 1}};
    ga_tensor *p[4], *m[4], *v[4];
    size_t off = 0;
    for (int i = 0; i < 4; i++) {
        size_t len = (size_t)(shapes[i][0] * shapes[i][1]);
        p[i] = i % 2 ? ga_from_array(dev, w0 + off, len, 1, shapes[i])
                     : ga_from_array(dev, w0 + off, len, 2, shapes[i]);
        ga_requires_grad_(p[i], true);
        m[i] = ga_zeros_like(p[i]);
        v[i] = ga_zeros_like(p[i]);
        off += len;
    }
    test_seed(3);
    float x[STEPS][BATCH * IN], y[STEPS][BATCH];
    for (int s = 0; s < STEPS; s++) {
        test_fill_uniform(x[s], BATCH * IN, -1, 1);
        for (int i = 0; i < BATCH; i++) y[s][i] = (float)((s + 3 * i) % OUT);
    }
    double worst_loss = 0;
    bool ok = true;
    for (int s = 0; s < STEPS && ok; s++) {
        double static_loss = 0;
        ok = ggmlc_model_train_on_batch(model, x[s], BATCH * IN, y[s], BATCH, BATCH, &static_loss,
                                        NULL) == GGMLC_OK;
        ga_scope_begin();
        ga_tensor *xt = ga_from_array(dev, x[s], BATCH * IN, GA_SHAPE(BATCH, IN));
        ga_tensor *yt = ga_from_array(dev, y[s], BATCH, GA_SHAPE(BATCH));
        ga_tensor *logits = ga_linear(ga_relu(ga_linear(xt, p[0], p[1])), p[2], p[3]);
        ga_tensor *loss = ga_cross_entropy(logits, yt, -100, 0);
        ok = ok && ga_backward(loss) == GGMLC_OK;
        for (int i = 0; i < 4 && ok; i++) {
            ok = ga_adamw_step_(p[i], m[i], v[i], s + 1, co.learning_rate, co.beta1, co.beta2,
                                co.eps, co.weight_decay) == GGMLC_OK;
            ga_zero_grad(p[i]);
        }
        double d = fabs(ga_item(loss) - static_loss) / (1e-3 + fabs(static_loss));
        if (d > worst_loss) worst_loss = d;
        ga_scope_end();
    }
    tap_ok(ok && worst_loss <= 1e-6, "%d steps: eager and static losses agree (relative %.2g)",
           STEPS, worst_loss);
    float w_eager[sizeof w0 / sizeof *w0];
    off = 0;
    for (int i = 0; i < 4; i++) {
        size_t len = (size_t)ga_numel(p[i]);
        ga_to_host(p[i], w_eager + off, len);
        off += len;
    }
    ggmlc_model_get_weights(model, w_static, (size_t)n_w);
    double dw = max_rel_diff(w_eager, w_static, (size_t)n_w);
    tap_ok(dw <= 1e-6, "the trained weights agree (relative %.2g)", dw);
    tap_ok(max_rel_diff(w0, w_static, (size_t)n_w) > 1e-3, "training changed the weights");
    for (int i = 0; i < 4; i++) ga_release(p[i]), ga_release(m[i]), ga_release(v[i]);
    ggmlc_model_free(model);
    ga_shutdown();
    return tap_done();
}
