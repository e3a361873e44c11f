/*
 * test-grad-golden.c - gradients of key operators compared with PyTorch
 * autograd (golden data from tests/golden/gen_grad.py).
 */
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

struct golden_case {
    const char *name;
    const char *inputs[3];  /* golden tensor names after "<case>." */
    bool param[3];
    struct ggml_tensor *(*build)(struct ggml_context *ctx, struct ggml_tensor **in);
};

static struct ggml_tensor *g_mul_mat(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_mul_mat(ctx, in[0], in[1]); }
static struct ggml_tensor *g_sm_scale(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_soft_max_ext(ctx, in[0], in[1], 0.6f, 0.0f); }
static struct ggml_tensor *g_sm_alibi(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_soft_max_ext(ctx, in[0], in[1], 0.6f, 8.0f); }
static struct ggml_tensor *g_ce(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_cross_entropy_loss(ctx, in[0], in[1]); }
static struct ggml_tensor *g_rms(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_rms_norm(ctx, in[0], 1e-5f); }
static struct ggml_tensor *g_norm(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_norm(ctx, in[0], 1e-5f); }
static struct ggml_tensor *g_rope(struct ggml_context *ctx, struct ggml_tensor **in) {
    return ggml_rope_ext(ctx, in[0], in[1], NULL, 8, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
}
static struct ggml_tensor *g_conv(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_conv_2d(ctx, in[0], in[1], 1, 1, 1, 1, 1, 1); }
static struct ggml_tensor *g_get_rows(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_get_rows(ctx, in[0], in[1]); }
static struct ggml_tensor *g_silu(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_silu(ctx, in[0]); }
static struct ggml_tensor *g_gelu(struct ggml_context *ctx, struct ggml_tensor **in) { return ggml_gelu(ctx, in[0]); }

static const struct golden_case cases[] = {
    {"mul_mat", {"a", "b"}, {true, true}, g_mul_mat},
    {"soft_max_scale", {"x", "mask"}, {true, false}, g_sm_scale},
    {"soft_max_alibi", {"x", "mask"}, {true, false}, g_sm_alibi},
    {"cross_entropy", {"logits", "labels"}, {true, false}, g_ce},
    {"rms_norm", {"x"}, {true}, g_rms},
    {"norm", {"x"}, {true}, g_norm},
    {"rope", {"x", "pos"}, {true, false}, g_rope},
    {"conv_2d", {"k", "x"}, {true, true}, g_conv},
    {"get_rows", {"a", "idx"}, {true, false}, g_get_rows},
    {"silu", {"x"}, {true}, g_silu},
    {"gelu", {"x"}, {true}, g_gelu},
};

static const struct gold_tensor *get(const struct gold_set *set, const char *c, const char *suffix) {
    char name[160];
    snprintf(name, sizeof name, "%s.%s", c, suffix);
    return gold_get(set, name);
}

static void run(const struct gold_set *set, const struct golden_case *c) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *in[3] = {NULL};
    for (int i = 0; i < 3 && c->inputs[i]; i++) {
        in[i] = gold_new_tensor(ctx, get(set, c->name, c->inputs[i]));
        if (in[i] && c->param[i]) ggml_set_param(in[i]);
    }
    struct ggml_tensor *y = in[0] ? c->build(ctx, in) : NULL;
    struct ggml_tensor *w = gold_new_tensor(ctx, get(set, c->name, "w"));
    if (!y || !w || ggml_nelements(y) != ggml_nelements(w)) {
        tap_ok(false, "%s: graph construction (%s)", c->name, ggmlc_last_error());
        ggml_free(ctx);
        return;
    }
    struct ggml_tensor *loss = ggml_sum(ctx, ggml_mul(ctx, y, ggml_reshape(ctx, w, y)));
    struct ggml_cgraph *gb = test_compute_backward(ctx, loss, 1024);
    for (int i = 0; i < 3 && c->inputs[i]; i++) {
        if (!c->param[i]) continue;
        char suffix[64];
        snprintf(suffix, sizeof suffix, "grad_%s", c->inputs[i]);
        const struct gold_tensor *ref = get(set, c->name, suffix);
        struct ggml_tensor *g = ggml_graph_get_grad(gb, in[i]);
        if (!ref || !g) {
            tap_ok(false, "%s: gradient of %s exists", c->name, c->inputs[i]);
            continue;
        }
        float *got = malloc(sizeof(float) * ref->n);
        tensor_get_f32(g, got);
        ok_nmse(got, ref->data, ref->n, 1e-8, "%s: d loss / d %s equals PyTorch autograd", c->name, c->inputs[i]);
        free(got);
    }
    ggml_free(ctx);
}

int main(void) {
    struct gold_set *set = gold_load("grad.gold");
    if (!set) return tap_done() | 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run(set, &cases[i]);
    gold_free(set);
    return tap_done();
}
