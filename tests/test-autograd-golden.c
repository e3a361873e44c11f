/*
 * test-autograd-golden.c - compound programs of eager tensors (an MLP, attention, norms,
 * losses, broadcasting, views) against PyTorch autograd: the output and the gradient of every
 * input that requires one (tests/golden/gen_autograd.py, data autograd.gold).  Runs on the
 * device named by argv[1] (default: the configuration's).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggmlc-autograd.h"
#include "testutil.h"

#define MAX_IN 7

static ga_device *dev;
static struct gold_set *gold;

typedef ga_tensor *(*program)(ga_tensor *const *in);

/* ---------------------------------------------------------------- programs */

static ga_tensor *mlp_ce(ga_tensor *const *in) {
    ga_tensor *h = ga_relu(ga_linear(in[0], in[1], in[2]));
    return ga_cross_entropy(ga_linear(h, in[3], in[4]), in[5], -100, 0);
}

static ga_tensor *mlp_mse_tanh(ga_tensor *const *in) {
    return ga_mse_loss(ga_matmul(ga_tanh(ga_matmul(in[0], in[1])), in[2]), in[3]);
}

static ga_tensor *attention(ga_tensor *const *in) {
    return ga_scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0, false, 0);
}

static ga_tensor *attention_causal(ga_tensor *const *in) {
    return ga_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0, true, 0.3f);
}

static ga_tensor *ln_gelu_linear(ga_tensor *const *in) {
    return ga_linear(ga_gelu(ga_layer_norm(in[0], in[1], in[2], 1e-5f)), in[3], NULL);
}

static ga_tensor *losses(ga_tensor *const *in) {
    ga_tensor *a = in[0], *b = in[1], *lp = in[4], *y = in[5];
    ga_tensor *sum = ga_add(ga_smooth_l1_loss(a, b, 0.7f), ga_l1_loss(a, b));
    sum = ga_add(sum, ga_bce_with_logits(in[2], in[3]));
    sum = ga_add(sum, ga_nll_loss(ga_log_softmax(lp, 1), y, 1));
    sum = ga_add(sum, ga_cross_entropy(lp, y, -100, 0.1f));
    ga_tensor *probs = ga_softmax(ga_mul_scalar(ga_narrow(b, 1, 0, 3), 2), 1);
    return ga_add(sum, ga_cross_entropy_probs(lp, probs, 0));
}

static ga_tensor *broadcast(ga_tensor *const *in) {
    ga_tensor *a = in[0], *b = in[1], *c = in[2];
    ga_tensor *e = ga_div(ga_exp(ga_add(ga_mul(a, b), c)), ga_add_scalar(b, 3));
    return ga_sub(ga_sum(ga_mean_dim(e, 1, false)), ga_sum(ga_sub(a, c)));
}

static ga_tensor *bmm_softmax_lse(ga_tensor *const *in) {
    ga_tensor *p = ga_matmul(in[0], in[1]);
    ga_tensor *l = ga_logsumexp(ga_softmax(p, 1), -1, false);
    return ga_mul(l, ga_mean(ga_sum_dim(ga_log_softmax(p, 0), 0, false)));
}

static ga_tensor *batchnorm_relu(ga_tensor *const *in) {
    return ga_mean(ga_relu(ga_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1f, 1e-5f)));
}

static ga_tensor *groupnorm_silu_var(ga_tensor *const *in) {
    return ga_var(ga_silu(ga_group_norm(in[0], 2, in[1], in[2], 1e-5f)), 2, true, false);
}

static ga_tensor *rms_softplus_leaky_std(ga_tensor *const *in) {
    return ga_std(ga_leaky_relu(ga_softplus(ga_rms_norm(in[0], in[1], 1e-6f)), 0.2f), -1, true,
                  false);
}

static ga_tensor *embedding_ln(ga_tensor *const *in) {
    ga_tensor *e = ga_layer_norm(ga_embedding(in[0], in[1]), NULL, NULL, 1e-5f);
    return ga_mean_dim(ga_pow(e, 3), 0, false);
}

static ga_tensor *views(ga_tensor *const *in) {
    ga_tensor *b2[2] = {in[1], ga_mul_scalar(in[1], 2)};
    ga_tensor *parts[2] = {ga_permute(in[0], (const int[]){0, 2, 1}), ga_stack(b2, 2, 0)};
    ga_tensor *m = ga_max_dim(ga_narrow(ga_cat(parts, 2, 1), 2, 1, 2), 1, false);
    return ga_sum(ga_sqrt(m));
}

static ga_tensor *clamp_where_minmax(ga_tensor *const *in) {
    ga_tensor *x = in[0], *y = in[1], *c = in[2];
    ga_tensor *w = ga_where(c, ga_clamp(x, -0.5f, 0.8f), ga_pow(y, 2));
    ga_tensor *m = ga_sum(ga_min_dim(w, 0, false));
    return ga_add(m, ga_mean(ga_sigmoid(ga_masked_fill(x, c, 3.0f))));
}

static ga_tensor *cnn(ga_tensor *const *in) {
    ga_tensor *x = in[0];
    ga_tensor *c = ga_max_pool2d(ga_relu(ga_conv2d(x, in[1], in[2], 1, 1, 1)), 2, 2, 0);
    ga_tensor *f = ga_reshape(ga_avg_pool2d(c, 2, 2, 0), GA_SHAPE(2, -1));
    ga_tensor *c1 = ga_conv1d(ga_reshape(x, GA_SHAPE(2, 2, 16)), in[3], NULL, 1, 1, 1);
    ga_tensor *h = ga_add(f, ga_mean_dim(c1, 2, false));
    return ga_cross_entropy(ga_linear(h, in[4], in[5]), in[6], -100, 0);
}

static const struct {
    const char *name;
    program f;
    const char *inputs[MAX_IN];
    const char *grads; /* initials of the inputs with gradients, by position: "110" */
} programs[] = {
    {"mlp_ce", mlp_ce, {"x", "w1", "b1", "w2", "b2", "y"}, "111110"},
    {"mlp_mse_tanh", mlp_mse_tanh, {"x", "w1", "w2", "t"}, "1110"},
    {"attention", attention, {"q", "k", "v", "m"}, "1110"},
    {"attention_causal", attention_causal, {"q", "k", "v"}, "111"},
    {"ln_gelu_linear", ln_gelu_linear, {"x", "g", "b", "lw"}, "1111"},
    {"losses", losses, {"a", "b", "z", "t", "lp", "y"}, "111010"},
    {"broadcast", broadcast, {"a", "b", "c"}, "111"},
    {"bmm_softmax_lse", bmm_softmax_lse, {"a", "b"}, "11"},
    {"batchnorm_relu", batchnorm_relu, {"x", "g", "b"}, "111"},
    {"groupnorm_silu_var", groupnorm_silu_var, {"x", "g", "b"}, "111"},
    {"rms_softplus_leaky_std", rms_softplus_leaky_std, {"x", "g"}, "11"},
    {"embedding_ln", embedding_ln, {"idx", "e"}, "01"},
    {"views", views, {"a", "b"}, "11"},
    {"clamp_where_minmax", clamp_where_minmax, {"x", "y", "c"}, "110"},
    {"cnn", cnn, {"x", "cw", "cb", "c1w", "lw", "lb", "y"}, "1111110"},
};

/* ------------------------------------------------------------------ harness */

static const struct gold_tensor *golden(const char *prog, const char *what) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s", prog, what);
    return gold_get(gold, name);
}

static ga_tensor *from_gold(const struct gold_tensor *g) {
    int nd = 0;
    for (int i = 0; i < 4; i++)
        if (g->ne[i] > 1) nd = i + 1;
    int64_t shape[4];
    for (int i = 0; i < nd; i++) shape[i] = g->ne[nd - 1 - i];
    return ga_from_array(dev, g->data, g->n, nd, shape);
}

static bool matches(const ga_tensor *t, const struct gold_tensor *want, const char *what) {
    float got[512];
    if (!t || !want || want->n > 512 || (size_t)ga_numel(t) != want->n ||
        ga_to_host(t, got, want->n) != GGMLC_OK) {
        tap_diag("%s: missing or of another size (%s)", what, ggmlc_last_error());
        return false;
    }
    const float *ref = want->data;
    for (size_t i = 0; i < want->n; i++) {
        if (!(fabsf(got[i] - ref[i]) <= 2e-4f + 2e-4f * fabsf(ref[i]))) {
            tap_diag("%s[%zu]: %.7g, PyTorch %.7g", what, i, got[i], ref[i]);
            return false;
        }
    }
    return true;
}

static void run_program(int p) {
    const char *name = programs[p].name;
    ga_tensor *in[MAX_IN] = {0};
    int n = 0;
    for (; n < MAX_IN && programs[p].inputs[n]; n++) {
        in[n] = from_gold(golden(name, programs[p].inputs[n]));
        if (programs[p].grads[n] == '1') ga_requires_grad_(in[n], true);
    }
    ga_scope_begin();
    ga_tensor *out = programs[p].f(in);
    ga_tensor *loss = out;
    if (out && ga_numel(out) > 1) {
        ga_tensor *w = from_gold(golden(name, "w"));
        loss = ga_sum(ga_mul(out, w)); /* w: out's shape */
    }
    bool ok = loss && ga_backward(loss) == GGMLC_OK;
    ok = ok && matches(out, golden(name, "out"), "output");
    for (int i = 0; i < n && ok; i++) {
        if (programs[p].grads[i] != '1') continue;
        char what[64];
        snprintf(what, sizeof what, "grad_%s", programs[p].inputs[i]);
        ok = matches(ga_grad(in[i]), golden(name, what), what);
    }
    ga_scope_end();
    tap_ok(ok, "%s: output and gradients equal PyTorch's%s%s", name, ok ? "" : ": ",
           ok ? "" : ggmlc_last_error());
    for (int i = 0; i < n; i++) ga_release(in[i]);
}

int main(int argc, char **argv) {
    dev = ga_device_get(argc > 1 ? argv[1] : NULL);
    if (!dev) return tap_skip_all(ggmlc_last_error());
    gold = gold_load("autograd.gold");
    if (!gold) return tap_done();
    tap_diag("device %s", ga_device_name(dev));
    for (size_t p = 0; p < sizeof programs / sizeof *programs; p++) run_program((int)p);
    tap_ok(ga_device_tensors_alive(dev) == 0, "every tensor was released (%zu alive)",
           ga_device_tensors_alive(dev));
    gold_free(gold);
    ga_shutdown();
    return tap_done();
}
