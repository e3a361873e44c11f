/*
 * test-autograd-nn.c - the eager engine's modules, optimizers, schedulers, gradient clipping,
 * module state files and data loader (ggmlc-autograd-nn.h) against PyTorch 1.13 (golden data
 * of tests/golden/gen_autograd_nn.py), and their error paths.  Runs on the device named by
 * its argument (default: the configuration's default device).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggmlc-autograd-nn.h"
#include "ggmlc-nn.h"
#include "testutil.h"

static ga_device *dev;
static struct gold_set *gold;

static const float *gold_f32(const char *name, size_t n) {
    const struct gold_tensor *g = gold_get(gold, name);
    if (!g || g->n != n) {
        tap_diag("golden %s: missing or %zu elements, expected %zu", name, g ? g->n : 0, n);
        return NULL;
    }
    return g->data;
}

static bool close_to(const ga_tensor *t, const char *gold_name, float tol) {
    size_t n = t ? (size_t)ga_numel(t) : 0;
    const float *want = gold_f32(gold_name, n);
    float *got = malloc(n * sizeof *got);
    bool ok = want && got && ga_to_host(t, got, n) == GGMLC_OK;
    for (size_t i = 0; ok && i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])))) {
            tap_diag("%s[%zu]: %.8g, PyTorch %.8g", gold_name, i, got[i], want[i]);
            ok = false;
        }
    free(got);
    return ok;
}

/* The golden test model: Linear(4, 5), ReLU, Linear(5, 3) with PyTorch's initial weights. */
static ga_module *golden_mlp(void) {
    ga_module *net = ga_sequential();
    ga_sequential_add(net, ga_linear_module(dev, 4, 5, true));
    ga_sequential_add(net, ga_relu_module());
    ga_sequential_add(net, ga_linear_module(dev, 5, 3, true));
    ga_param_list ps = ga_module_parameters(net);
    for (int k = 0; k < ps.n; k++) {
        char name[64];
        snprintf(name, sizeof name, "init.%s", ps.names[k]);
        int64_t shape[GA_MAX_DIMS];
        int nd = ga_shape(ps.params[k], shape);
        const float *v = gold_f32(name, (size_t)ga_numel(ps.params[k]));
        ga_tensor *t = v ? ga_from_array(dev, v, (size_t)ga_numel(ps.params[k]), nd, shape) : NULL;
        if (!t || ga_assign_(ps.params[k], t) != GGMLC_OK) tap_diag("cannot set %s", name);
        ga_release(t);
    }
    return net;
}

enum clip_kind { NO_CLIP, CLIP_L2, CLIP_INF };

/* Four cross-entropy steps as gen_autograd_nn.py's train(); compares weights, rates, norms. */
static void train_case(const char *name, ga_optimizer *(*make)(ga_param_list), enum clip_kind clip,
                       ga_scheduler *(*sched)(ga_optimizer *)) {
    ga_module *net = golden_mlp();
    ga_optimizer *opt = make(ga_module_parameters(net));
    ga_scheduler *s = sched && opt ? sched(opt) : NULL;
    ga_tensor *x = ga_from_array(dev, gold_f32("x", 24), 24, GA_SHAPE(6, 4));
    ga_tensor *y = ga_from_array(dev, gold_f32("y", 6), 6, GA_SHAPE(6));
    float lrs[4], norms[4];
    bool ok = opt && x && y;
    for (int step = 0; step < 4 && ok; step++) {
        ga_scope_begin();
        ga_optimizer_zero_grad(opt);
        ga_tensor *loss = ga_cross_entropy(ga_module_forward(net, x), y, -100, 0.0f);
        ok = loss && ga_backward(loss) == GGMLC_OK;
        if (ok && clip != NO_CLIP) {
            ga_tensor *nt =
                ga_clip_grad_norm(ga_module_parameters(net), clip == CLIP_L2 ? 0.5f : 0.3f,
                                  clip == CLIP_L2 ? 2.0f : INFINITY);
            ok = nt != NULL;
            norms[step] = nt ? ga_item(nt) : NAN;
        }
        lrs[step] = ga_optimizer_get_lr(opt);
        ok = ok && ga_optimizer_step(opt) == GGMLC_OK;
        ga_scheduler_step(s);
        ga_scope_end();
    }
    ga_param_list ps = ga_module_parameters(net);
    for (int k = 0; k < ps.n && ok; k++) {
        char gname[64];
        snprintf(gname, sizeof gname, "%s.%s", name, ps.names[k]);
        ok = close_to(ps.params[k], gname, 2e-5f);
    }
    char gname[64];
    snprintf(gname, sizeof gname, "%s.lrs", name);
    const float *want_lr = gold_f32(gname, 4);
    for (int k = 0; k < 4 && ok; k++)
        ok = want_lr && fabsf(lrs[k] - want_lr[k]) <= 1e-6f * (1 + want_lr[k]);
    if (clip != NO_CLIP) {
        snprintf(gname, sizeof gname, "%s.norms", name);
        const float *want = gold_f32(gname, 4);
        for (int k = 0; k < 4 && ok; k++)
            if (!(want && fabsf(norms[k] - want[k]) <= 1e-5f * (1 + want[k]))) {
                tap_diag("norm %d: %g, PyTorch %g", k, norms[k], want ? want[k] : NAN);
                ok = false;
            }
    }
    tap_ok(ok, "%s: 4 steps equal PyTorch's weights%s", name,
           clip != NO_CLIP ? " and gradient norms" : "");
    ga_scheduler_free(s);
    ga_optimizer_free(opt);
    ga_module_free(net);
    ga_release(x);
    ga_release(y);
}

static ga_optimizer *sgd_plain(ga_param_list p) { return ga_sgd(p, 0.1f, 0.5f, 0, 0.01f, false); }
static ga_optimizer *sgd_damp(ga_param_list p) { return ga_sgd(p, 0.1f, 0.9f, 0.1f, 0.01f, false); }
static ga_optimizer *sgd_nesterov(ga_param_list p) { return ga_sgd(p, 0.1f, 0.9f, 0, 0.01f, true); }
static ga_optimizer *adam(ga_param_list p) { return ga_adam(p, 0.01f, 0.8f, 0.95f, 1e-6f, 0.05f); }
static ga_optimizer *adamw(ga_param_list p) { return ga_adamw(p, 0.01f, 0.8f, 0.95f, 1e-6f, 0.1f); }
static ga_optimizer *adamw_default(ga_param_list p) {
    return ga_adamw(p, 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f);
}
static ga_optimizer *sgd_default(ga_param_list p) { return ga_sgd(p, 0.01f, 0, 0, 0, false); }
static ga_scheduler *cycle_adamw(ga_optimizer *o) { return ga_one_cycle_lr(o, 0.05f, 4, 0.5f); }
static ga_scheduler *cycle_sgd(ga_optimizer *o) { return ga_one_cycle_lr(o, 0.2f, 4, 0.3f); }

static void test_optimizers(void) {
    train_case("sgd_plain", sgd_plain, NO_CLIP, NULL);
    train_case("sgd_damp", sgd_damp, NO_CLIP, NULL);
    train_case("sgd_nesterov", sgd_nesterov, NO_CLIP, NULL);
    train_case("adam", adam, NO_CLIP, NULL);
    train_case("adamw", adamw, NO_CLIP, NULL);
    train_case("adamw_clip2", adamw_default, CLIP_L2, NULL);
    train_case("adamw_clipinf", adamw_default, CLIP_INF, NULL);
    train_case("adamw_onecycle", adamw_default, NO_CLIP, cycle_adamw);
    train_case("sgd_onecycle", sgd_default, NO_CLIP, cycle_sgd);
}

/* A scheduler's rates (and SGD momentum) over n steps against PyTorch's. */
static void lr_case(const char *name, ga_scheduler *(*make)(ga_optimizer *), int n) {
    ga_tensor *p = ga_requires_grad_(ga_zeros(dev, GA_SHAPE(1)), true);
    ga_optimizer *opt = ga_sgd((ga_param_list){&p, NULL, 1}, 0.1f, 0, 0, 0, false);
    ga_scheduler *s = opt ? make(opt) : NULL;
    char gname[64];
    snprintf(gname, sizeof gname, "%s.lrs", name);
    const float *want = gold_f32(gname, (size_t)n);
    bool ok = s && want;
    for (int k = 0; k < n && ok; k++) {
        float lr = ga_optimizer_get_lr(opt);
        if (!(fabsf(lr - want[k]) <= 1e-6f * (1 + want[k]))) {
            tap_diag("%s step %d: lr %.9g, PyTorch %.9g", name, k, lr, want[k]);
            ok = false;
        }
        ga_scheduler_step(s);
    }
    tap_ok(ok, "%s: %d learning rates equal PyTorch's", name, n);
    ga_scheduler_free(s);
    ga_optimizer_free(opt);
    ga_release(p);
}

static ga_scheduler *step_lr(ga_optimizer *o) { return ga_step_lr(o, 3, 0.5f); }
static ga_scheduler *one_cycle(ga_optimizer *o) { return ga_one_cycle_lr(o, 1.0f, 20, 0.25f); }
static ga_scheduler *cosine(ga_optimizer *o) { return ga_cosine_lr(o, 4, 16, 0.01f); }

static void test_schedulers(void) {
    lr_case("step_lr", step_lr, 10);
    lr_case("one_cycle", one_cycle, 20);
    lr_case("cosine", cosine, 20);
}

static ga_tensor *gold_tensor(const char *name, int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    const float *v = gold_f32(name, n);
    return v ? ga_from_array(dev, v, n, ndim, shape) : NULL;
}

static void test_batch_norm(void) {
    ga_module *bn = ga_batch_norm_module(dev, 3, 1e-5f, 0.2f);
    ga_scope_begin();
    ga_tensor *o1 = ga_module_forward(bn, gold_tensor("bn.x1", GA_SHAPE(4, 3, 2, 2)));
    ga_tensor *o2 = ga_module_forward(bn, gold_tensor("bn.x2", GA_SHAPE(4, 3, 2, 2)));
    ga_module_train(bn, false);
    ga_tensor *oe = ga_module_forward(bn, gold_tensor("bn.xe", GA_SHAPE(2, 3, 2, 2)));
    tap_ok(o1 && o2 && oe && !ga_module_is_training(bn), "BatchNorm: train, train, eval");
    tap_ok(oe && close_to(oe, "bn.eval_out", 1e-5f), "BatchNorm: evaluation output as PyTorch's");
    ga_param_list all = ga_module_parameters(bn);
    tap_ok(all.n == 2 && strcmp(all.names[0], "weight") == 0 && strcmp(all.names[1], "bias") == 0,
           "BatchNorm: parameters are weight and bias (statistics are buffers)");
    ga_scope_end();
    ga_module_free(bn);
}

static void test_module_basics(void) {
    ga_manual_seed(3);
    ga_module *net = ga_sequential();
    ga_sequential_add(net, ga_linear_module(dev, 100, 20, true));
    ga_sequential_add(net, ga_gelu_module());
    ga_sequential_add(net, ga_dropout_module(0.5f));
    ga_sequential_add(net, ga_linear_module(dev, 20, 2, false));
    ga_param_list ps = ga_module_parameters(net);
    tap_ok(ps.n == 3 && strcmp(ps.names[0], "0.weight") == 0 &&
               strcmp(ps.names[1], "0.bias") == 0 && strcmp(ps.names[2], "3.weight") == 0,
           "Sequential: parameters named as PyTorch's state_dict");
    float w[2000];
    bool bounded = ps.n == 3 && ga_to_host(ps.params[0], w, 2000) == GGMLC_OK;
    double sum_sq = 0;
    for (int i = 0; i < 2000 && bounded; i++) {
        bounded = fabsf(w[i]) <= 0.1f; /* 1 / sqrt(in_features) */
        sum_sq += (double)w[i] * w[i];
    }
    /* U(-b, b) has variance b^2 / 3 */
    tap_ok(bounded && fabs(sum_sq / 2000 - 0.01 / 3) < 0.0008,
           "Linear: weights uniform in +-1/sqrt(in) (PyTorch's default)");
    tap_ok(ga_requires_grad(ps.params[0]) && ga_is_leaf(ps.params[0]),
           "Linear: parameters are leaves that require grad");
    ga_scope_begin();
    ga_tensor *x = ga_randn(dev, GA_SHAPE(8, 100));
    ga_module_train(net, false);
    ga_tensor *a = ga_module_forward(net, x), *b = ga_module_forward(net, x);
    float va[16], vb[16];
    tap_ok(a && b && ga_to_host(a, va, 16) == GGMLC_OK && ga_to_host(b, vb, 16) == GGMLC_OK &&
               memcmp(va, vb, sizeof va) == 0 && ga_size(a, 1) == 2,
           "eval mode: dropout off, forward deterministic, output (8, 2)");
    ga_scope_end();
    tap_ok(strcmp(ga_module_kind(net), "Sequential") == 0, "ga_module_kind");
    ga_module_free(net);
}

static void test_state_files(void) {
    char path[] = "/tmp/ggmlc-autograd-nn-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    ga_manual_seed(11);
    ga_module *a = ga_sequential();
    ga_sequential_add(a, ga_linear_module(dev, 3, 4, true));
    ga_sequential_add(a, ga_batch_norm_module(dev, 4, 1e-5f, 0.1f));
    ga_manual_seed(12);
    ga_module *b = ga_sequential();
    ga_sequential_add(b, ga_linear_module(dev, 3, 4, true));
    ga_sequential_add(b, ga_batch_norm_module(dev, 4, 1e-5f, 0.1f));
    ga_scope_begin();
    ga_module_forward(a, ga_randn(dev, GA_SHAPE(5, 3))); /* moves a's running statistics */
    ga_scope_end();
    tap_ok(ga_module_save(a, path) == GGMLC_OK, "module state saved");
    tap_ok(ga_module_load(b, path) == GGMLC_OK, "module state loaded into a twin");
    ga_param_list pa = ga_module_parameters(a);
    ga_tensor *wa = pa.params[0];
    ga_param_list pb = ga_module_parameters(b);
    float va[12], vb[12];
    tap_ok(ga_to_host(wa, va, 12) == GGMLC_OK && ga_to_host(pb.params[0], vb, 12) == GGMLC_OK &&
               memcmp(va, vb, sizeof va) == 0,
           "loaded weights equal the saved ones");
    ga_module_train(a, false);
    ga_module_train(b, false);
    ga_scope_begin();
    ga_tensor *x = ga_randn(dev, GA_SHAPE(2, 3));
    float oa[8], ob[8];
    tap_ok(ga_to_host(ga_module_forward(a, x), oa, 8) == GGMLC_OK &&
               ga_to_host(ga_module_forward(b, x), ob, 8) == GGMLC_OK && memcmp(oa, ob, 32) == 0,
           "running statistics travel with the state (same evaluation outputs)");
    ga_scope_end();
    /* a file of another shape changes nothing */
    ga_module *c = ga_sequential();
    ga_sequential_add(c, ga_linear_module(dev, 3, 5, true));
    ga_sequential_add(c, ga_batch_norm_module(dev, 5, 1e-5f, 0.1f));
    float before[15], after[15];
    ga_param_list pc = ga_module_parameters(c);
    ga_to_host(pc.params[0], before, 15);
    enum ggmlc_status st = ga_module_load(c, path);
    pc = ga_module_parameters(c);
    ga_to_host(pc.params[0], after, 15);
    tap_ok(st == GGMLC_ERR_SHAPE && memcmp(before, after, sizeof before) == 0,
           "a state of other shapes is refused (%s) and changes nothing", ggmlc_last_error());
    FILE *f = fopen(path, "r+b");
    if (f) {
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        if (truncate(path, size / 2) != 0) tap_diag("truncate failed");
    }
    st = ga_module_load(b, path);
    tap_ok(st != GGMLC_OK, "a truncated state file is refused: %s", ggmlc_last_error());
    tap_ok(ga_module_load(b, "/nonexistent/dir/x.gguf") != GGMLC_OK, "a missing file is refused");
    unlink(path);
    ga_module_free(a);
    ga_module_free(b);
    ga_module_free(c);
}

static void test_loader(void) {
    float xs[10 * 2], ys[10];
    for (int i = 0; i < 10; i++)
        xs[2 * i] = (float)i, xs[2 * i + 1] = (float)-i, ys[i] = (float)(i % 3);
    struct ggmlc_dataset d = {xs, ys, 10, {2}, 1, 3, 10};
    ga_loader *l = ga_loader_new(&d, dev, 4, true, false, 5);
    tap_ok(l && ga_loader_batches(l) == 3, "loader: 10 samples in batches of 4 make 3 batches");
    int seen[10] = {0}, batches = 0;
    int64_t last_b = 0;
    ga_tensor *x, *y;
    bool pairs = true;
    while (l && ga_loader_next(l, &x, &y)) {
        float vx[8], vy[4];
        last_b = ga_size(x, 0);
        ga_to_host(x, vx, (size_t)(last_b * 2));
        ga_to_host(y, vy, (size_t)last_b);
        for (int b = 0; b < last_b; b++) {
            int i = (int)vx[2 * b];
            seen[i]++;
            pairs = pairs && vx[2 * b + 1] == -vx[2 * b] && vy[b] == (float)(i % 3);
        }
        batches++;
        ga_release(x);
        ga_release(y);
    }
    bool once = true;
    for (int i = 0; i < 10; i++) once = once && seen[i] == 1;
    tap_ok(batches == 3 && last_b == 2 && once && pairs,
           "loader: one epoch gives every sample once, with its label; the last batch has 2");
    float first1[8], first2[8];
    ga_loader_free(l);
    l = ga_loader_new(&d, dev, 4, true, false, 5);
    ga_loader *l2 = ga_loader_new(&d, dev, 4, true, true, 5);
    bool same = l2 && ga_loader_batches(l2) == 2;
    for (int e = 0; e < 2 && same; e++) {
        ga_tensor *x1, *y1, *x2, *y2;
        same = ga_loader_next(l, &x1, &y1) && ga_loader_next(l2, &x2, &y2) &&
               ga_to_host(x1, first1, 8) == GGMLC_OK && ga_to_host(x2, first2, 8) == GGMLC_OK &&
               memcmp(first1, first2, sizeof first1) == 0;
        ga_release(x1), ga_release(y1), ga_release(x2), ga_release(y2);
        while (same && ga_loader_next(l, &x1, &y1)) ga_release(x1), ga_release(y1);
        while (same && ga_loader_next(l2, &x2, &y2)) ga_release(x2), ga_release(y2);
    }
    tap_ok(same, "loader: the same seed gives the same order, epoch after epoch; drop_last");
    ga_loader_free(l);
    ga_loader_free(l2);
}

/* A golden tensor by name, shaped as in the file (ggml order reversed), requiring grad. */
static ga_tensor *gold_input(const char *name) {
    const struct gold_tensor *g = gold_get(gold, name);
    if (!g) return NULL;
    int nd = 4;
    while (nd > 1 && g->ne[nd - 1] == 1) nd--;
    int64_t shape[4];
    for (int d = 0; d < nd; d++) shape[d] = g->ne[nd - 1 - d];
    ga_tensor *t = ga_from_array(dev, g->data, g->n, nd, shape);
    return t ? ga_requires_grad_(t, true) : NULL;
}

/* Every parameter of m set to the golden "<case>.init.<name>". */
static bool set_params(ga_module *m, const char *name) {
    ga_param_list ps = ga_module_parameters(m);
    bool ok = ps.n > 0;
    for (int k = 0; k < ps.n && ok; k++) {
        char gname[128];
        snprintf(gname, sizeof gname, "%s.init.%s", name, ps.names[k]);
        int64_t shape[GA_MAX_DIMS];
        int nd = ga_shape(ps.params[k], shape);
        const float *v = gold_f32(gname, (size_t)ga_numel(ps.params[k]));
        ga_tensor *t = v ? ga_from_array(dev, v, (size_t)ga_numel(ps.params[k]), nd, shape) : NULL;
        ok = t && ga_assign_(ps.params[k], t) == GGMLC_OK;
        ga_release(t);
    }
    return ok;
}

static ga_tensor *param_named(ga_module *m, const char *name) {
    ga_param_list ps = ga_module_parameters(m);
    for (int k = 0; k < ps.n; k++)
        if (strcmp(ps.names[k], name) == 0) return ps.params[k];
    return NULL;
}

/* out against "<case>.out"; sum(out * r) backward; the named gradients against PyTorch's. */
static void check_layer(const char *name, ga_module *m, ga_tensor *out, ga_tensor *const *inputs,
                        const char *const *input_names, int n_inputs, const char *const *params,
                        int n_params) {
    char gname[128];
    snprintf(gname, sizeof gname, "%s.out", name);
    bool ok = out && close_to(out, gname, 2e-5f);
    snprintf(gname, sizeof gname, "%s.r", name);
    ga_tensor *r = ok ? gold_input(gname) : NULL;
    ga_tensor *loss = r ? ga_sum(ga_mul(out, r)) : NULL;
    tap_ok(ok && loss && ga_backward(loss) == GGMLC_OK, "%s: output equals PyTorch's", name);
    bool grads = loss != NULL;
    for (int k = 0; k < n_inputs && grads; k++) {
        snprintf(gname, sizeof gname, "%s.grad.%s", name, input_names[k]);
        grads = ga_grad(inputs[k]) && close_to(ga_grad(inputs[k]), gname, 1e-4f);
    }
    for (int k = 0; k < n_params && grads; k++) {
        snprintf(gname, sizeof gname, "%s.grad.%s", name, params[k]);
        ga_tensor *p = param_named(m, params[k]);
        grads = p && ga_grad(p) && close_to(ga_grad(p), gname, 1e-4f);
    }
    tap_ok(grads, "%s: gradients equal PyTorch autograd's", name);
}

static void test_attention_layers(void) {
    ga_scope_begin();
    ga_module *mha = ga_multihead_attention_module(dev, 8, 2, true, 0, false);
    ga_tensor *x = gold_input("mha.x");
    ga_tensor *pad = gold_input("mha.pad");
    float cm[25];
    for (int i = 0; i < 25; i++) cm[i] = i % 5 > i / 5 ? -INFINITY : 0.0f;
    ga_tensor *causal = ga_from_array(dev, cm, 25, GA_SHAPE(5, 5));
    bool was = ga_set_grad_enabled(false);
    ga_tensor *pad_plain = ga_detach(pad);
    ga_set_grad_enabled(was);
    ga_tensor *out = set_params(mha, "mha")
                         ? ga_multihead_attention(mha, x, x, x, causal, pad_plain, false)
                         : NULL;
    check_layer("mha", mha, out, &x, (const char *[]){"x"}, 1,
                (const char *[]){"in_proj_weight", "in_proj_bias", "out_proj.weight"}, 3);
    ga_tensor *again = ga_multihead_attention(mha, x, x, x, NULL, pad_plain, true);
    tap_ok(again && close_to(again, "mha.out", 2e-5f), "mha: is_causal equals the causal mask");
    for (int nf = 0; nf < 2; nf++) {
        char name[16];
        snprintf(name, sizeof name, "enc%d", nf);
        ga_module *enc = ga_transformer_encoder_layer_module(dev, 8, 2, 16, 0, true, nf, true);
        char xn[32];
        snprintf(xn, sizeof xn, "%s.x", name);
        ga_tensor *ex = gold_input(xn);
        ga_tensor *eo = set_params(enc, name) ? ga_module_forward(enc, ex) : NULL;
        check_layer(name, enc, eo, &ex, (const char *[]){"x"}, 1,
                    (const char *[]){"linear1.weight", "self_attn.in_proj_weight", "norm1.weight"},
                    3);
        ga_module_free(enc);
    }
    ga_module *dec = ga_transformer_decoder_layer_module(dev, 8, 2, 16, 0, false, false);
    ga_tensor *io[2] = {gold_input("dec.tgt"), gold_input("dec.mem")};
    ga_tensor *dout =
        set_params(dec, "dec") ? ga_transformer_decoder_forward(dec, io[0], io[1]) : NULL;
    check_layer("dec", dec, dout, io, (const char *[]){"tgt", "mem"}, 2,
                (const char *[]){"multihead_attn.in_proj_weight", "norm3.bias"}, 2);
    tap_ok(!ga_module_forward(dec, io[0]), "a decoder layer alone asks for memory: %s",
           ggmlc_last_error());
    tap_ok(!ga_multihead_attention_module(dev, 10, 3, true, 0, false),
           "embed_dim not a multiple of heads: %s", ggmlc_last_error());
    ga_tensor *narrow_kv = ga_zeros(dev, GA_SHAPE(2, 6, 7));
    tap_ok(!ga_multihead_attention(mha, x, narrow_kv, narrow_kv, NULL, NULL, false) &&
               ggmlc_last_status() == GGMLC_ERR_SHAPE,
           "key of another width: %s", ggmlc_last_error());
    ga_scope_end();
    ga_module_free(mha);
    ga_module_free(dec);
}

static void test_errors(void) {
    tap_ok(!ga_linear_module(dev, 0, 3, true) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "Linear with 0 inputs: %s", ggmlc_last_error());
    tap_ok(!ga_dropout_module(1.5f), "Dropout p = 1.5 refused");
    ga_module *lin = ga_linear_module(dev, 3, 2, true);
    ga_module *relu = ga_relu_module();
    tap_ok(ga_sequential_add(lin, relu) != GGMLC_OK, "adding to a non-Sequential is refused: %s",
           ggmlc_last_error());
    ga_scope_begin();
    tap_ok(!ga_module_forward(lin, ga_zeros(dev, GA_SHAPE(2, 4))) &&
               ggmlc_last_status() == GGMLC_ERR_SHAPE,
           "forward of a wrong width: %s", ggmlc_last_error());
    ga_scope_end();
    tap_ok(!ga_adamw(ga_module_parameters(lin), 0.1f, 1.5f, 0.9f, 1e-8f, 0),
           "AdamW beta1 = 1.5 refused");
    tap_ok(!ga_sgd(ga_module_parameters(lin), 0.1f, 0, 0, 0, true),
           "Nesterov without momentum refused");
    tap_ok(!ga_one_cycle_lr(NULL, 0.1f, 10, 0.3f), "scheduler without optimizer refused");
    tap_ok(ga_optimizer_step(NULL) != GGMLC_OK, "stepping a NULL optimizer is an error");
    struct ggmlc_dataset empty = {0};
    tap_ok(!ga_loader_new(&empty, dev, 4, false, false, 0), "loader over no data refused");
    ga_module_free(lin);
    ga_module_free(relu);
}

int main(int argc, char **argv) {
    dev = ga_device_get(argc > 1 ? argv[1] : NULL);
    gold = gold_load("autograd_nn.gold");
    if (!dev || !gold) return tap_skip_all("no device or golden data");
    test_optimizers();
    test_schedulers();
    test_batch_norm();
    test_module_basics();
    test_state_files();
    test_loader();
    test_attention_layers();
    test_errors();
    gold_free(gold);
    ga_shutdown();
    return tap_done();
}
