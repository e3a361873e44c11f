/*
 * layers-transformer.c - Transformer encoder and decoder blocks and the
 * Stable-Diffusion UNet blocks (residual block with timestep embedding,
 * spatial transformer), built from the attention of layers-attn.c.
 *
 * Parameters are named after their role ("n_attn_gamma", "attn.q_kernel",
 * "fc1_kernel", ...) and laid out as PyTorch's modules hold them, so that a
 * state dict copies in tensor by tensor.
 */
#include <math.h>

#include "attn-impl.h"

/* ------------------------------------------------------ Transformer blocks */

static bool is_decoder(const ggmlc_layer *l) { return l->ops == &ggmlc__nn_decoder_ops; }

static enum ggmlc_status block_setup2(ggmlc_layer *l, const int64_t *in, int in_dims,
                                      const int64_t *in2, int in2_dims, int64_t *out,
                                      int *out_dims) {
    if (in_dims != 2) return ggmlc__nn_bad_input(l, "a {T, D}", in_dims);
    const int64_t d = in[1], ff = l->cfg.ff;
    const struct attn_heads h = ggmlc__nn_attn_heads(l, d);
    if (d % h.n_head != 0 || ((h.flags & NN_ATTN_ROPE) && h.head_dim % 2 != 0))
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "%s ('%s'): the model width %lld is not a multiple of %lld heads (of even width "
            "with rope)",
            l->ops->kind, l->name, (long long)d, (long long)h.n_head);
    const bool cross = is_decoder(l) && in2;
    if (in2 && (cross ? in2_dims != 2 : in2_dims != 1 || in2[0] != in[0]))
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s ('%s'): the second input must be %s",
                               l->ops->kind, l->name,
                               is_decoder(l) ? "a {S, Dm} memory" : "a {T} padding mask");
    const bool rms = l->cfg.attn_flags & NN_ATTN_RMS,
               mlp_bias = l->cfg.attn_flags & NN_ATTN_MLP_BIAS;
    ggmlc__nn_declare_norm(l, "n_attn", d, rms);
    ggmlc__nn_declare_attention(l, "attn", &h, d, 0);
    if (cross) {
        ggmlc__nn_declare_norm(l, "n_xattn", d, rms);
        ggmlc__nn_declare_attention(l, "xattn", &h, d, in2[1]);
    }
    ggmlc__nn_declare_norm(l, "n_mlp", d, rms);
    ggmlc__nn_declare_linear(l, "fc1", d, (l->cfg.attn_flags & NN_ATTN_SWIGLU) ? 2 * ff : ff,
                             mlp_bias);
    ggmlc__nn_declare_linear(l, "fc2", ff, d, mlp_bias);
    out[0] = in[0];
    out[1] = d;
    *out_dims = 2;
    return GGMLC_OK;
}

enum block_part { PART_SELF, PART_CROSS, PART_MLP };

/* What one part computes on its (normalised) input. */
static struct ggml_tensor *part_apply(ggmlc_layer *l, struct nn_build *b, enum block_part part,
                                      struct ggml_tensor *x, struct ggml_tensor *memory,
                                      struct ggml_tensor *pad) {
    struct attn_heads h = ggmlc__nn_attn_heads(l, x->ne[0]);
    switch (part) {
    case PART_SELF:
        if (is_decoder(l)) h.flags |= NN_ATTN_CAUSAL;
        return ggmlc__nn_attention(l, b, "attn", &h, x, NULL, pad);
    case PART_CROSS: return ggmlc__nn_attention(l, b, "xattn", &h, x, memory, NULL);
    case PART_MLP: break;
    }
    struct ggml_tensor *y = ggmlc__nn_linear(l, b, "fc1", x);
    y = (l->cfg.attn_flags & NN_ATTN_SWIGLU) ? ggml_swiglu(b->ctx, y) : ggml_gelu_erf(b->ctx, y);
    return ggmlc__nn_linear(l, b, "fc2", ggmlc__nn_dropout(l, b, y));
}

/* x + f(norm(x)) before the norm (pre-norm), norm(x + f(x)) after it. */
static struct ggml_tensor *residual(ggmlc_layer *l, struct nn_build *b, enum block_part part,
                                    const char *norm, struct ggml_tensor *x,
                                    struct ggml_tensor *memory, struct ggml_tensor *pad) {
    const bool rms = l->cfg.attn_flags & NN_ATTN_RMS;
    if (l->cfg.attn_flags & NN_ATTN_PRE_NORM) {
        struct ggml_tensor *f =
            part_apply(l, b, part, ggmlc__nn_norm(l, b, norm, x, rms, l->cfg.eps), memory, pad);
        return f ? ggml_add(b->ctx, x, ggmlc__nn_dropout(l, b, f)) : NULL;
    }
    struct ggml_tensor *f = part_apply(l, b, part, x, memory, pad);
    return f ? ggmlc__nn_norm(l, b, norm, ggml_add(b->ctx, x, ggmlc__nn_dropout(l, b, f)), rms,
                              l->cfg.eps)
             : NULL;
}

static struct ggml_tensor *block_forward2(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x,
                                          struct ggml_tensor *x2) {
    const bool cross = is_decoder(l) && x2;
    struct ggml_tensor *pad =
        x2 && !cross ? ggml_reshape_2d(b->ctx, x2, x2->ne[0], b->batch) : NULL;
    x = residual(l, b, PART_SELF, "n_attn", x, NULL, pad);
    if (x && cross) x = residual(l, b, PART_CROSS, "n_xattn", x, x2, NULL);
    return x ? residual(l, b, PART_MLP, "n_mlp", x, NULL, NULL) : NULL;
}

const struct layer_ops ggmlc__nn_encoder_ops = {"TransformerEncoder", NULL, NULL, block_setup2,
                                                block_forward2};
const struct layer_ops ggmlc__nn_decoder_ops = {"TransformerDecoder", NULL, NULL, block_setup2,
                                                block_forward2};

struct ggmlc_transformer_options ggmlc_transformer_defaults(int64_t n_head, int64_t ff) {
    return (struct ggmlc_transformer_options){.attn = ggmlc_attention_defaults(n_head),
                                              .ff = ff,
                                              .norm = GGMLC_NORM_LAYER,
                                              .eps = 1e-5f,
                                              .mlp = GGMLC_MLP_GELU,
                                              .mlp_bias = true};
}

static ggmlc_layer *new_block(const struct layer_ops *ops, const char *func,
                              const struct ggmlc_transformer_options *o) {
    if (!o) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: NULL options", func);
        return NULL;
    }
    struct ggmlc_attention_options a = o->attn;
    a.dropout =
        o->dropout; /* one rate for the attention probabilities and the residual branches, as PyTorch */
    struct layer_cfg c = {.slope = 0.01f};
    if (!ggmlc__nn_attention_settings(func, &a, &c)) return NULL;
    char why[96];
    if (!ggmlc__nn_setting_ok(o->ff > 0 && o->ff <= NN_MAX_ELEMS, "ff", (double)o->ff,
                              "in [1, 2^40]", why, sizeof why) ||
        !ggmlc__nn_setting_ok(o->eps > 0 && o->eps < INFINITY, "eps", o->eps, "a finite number > 0",
                              why, sizeof why) ||
        !ggmlc__nn_setting_ok((unsigned)o->norm <= GGMLC_NORM_RMS, "norm", o->norm, "a known kind",
                              why, sizeof why) ||
        !ggmlc__nn_setting_ok((unsigned)o->mlp <= GGMLC_MLP_SWIGLU, "mlp", o->mlp, "a known kind",
                              why, sizeof why)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %s", func, why);
        return NULL;
    }
    c.ff = o->ff;
    c.eps = o->eps;
    c.attn_flags |=
        (o->pre_norm ? NN_ATTN_PRE_NORM : 0) | (o->norm == GGMLC_NORM_RMS ? NN_ATTN_RMS : 0) |
        (o->mlp == GGMLC_MLP_SWIGLU ? NN_ATTN_SWIGLU : 0) | (o->mlp_bias ? NN_ATTN_MLP_BIAS : 0);
    ggmlc_layer *l = ggmlc__nn_layer_new(ops, GGMLC_ACT_NONE);
    if (l) l->cfg = c;
    return l;
}

ggmlc_layer *ggmlc_transformer_encoder(const struct ggmlc_transformer_options *o) {
    return new_block(&ggmlc__nn_encoder_ops, "ggmlc_transformer_encoder", o);
}

ggmlc_layer *ggmlc_transformer_decoder(const struct ggmlc_transformer_options *o) {
    return new_block(&ggmlc__nn_decoder_ops, "ggmlc_transformer_decoder", o);
}

/* ------------------------------------------------- Stable-Diffusion blocks */

/* Group norm with per-channel scale and shift named prefix, over x [W, H, C, B]. */
static struct ggml_tensor *group_norm(ggmlc_layer *l, struct nn_build *b, const char *prefix,
                                      struct ggml_tensor *x, float eps) {
    char name[32];
    snprintf(name, sizeof name, "%s_gamma", prefix);
    struct ggml_tensor *y = ggml_group_norm(b->ctx, x, l->cfg.groups, eps), *gamma = NULL,
                       *beta = NULL;
    for (int i = 0; i < l->n_params; i++) {
        if (strcmp(l->params[i].name, name) == 0) gamma = l->params[i].t, beta = l->params[i + 1].t;
    }
    return ggml_add(b->ctx, ggml_mul(b->ctx, y, gamma), beta);
}

static void declare_group_norm(ggmlc_layer *l, const char *prefix, int64_t c) {
    char name[32];
    snprintf(name, sizeof name, "%s_gamma", prefix);
    ggmlc__nn_add_param(l, name, 3, (int64_t[]){1, 1, c}, GGMLC_INIT_ONES, (double)c, (double)c);
    snprintf(name, sizeof name, "%s_beta", prefix);
    ggmlc__nn_add_param(l, name, 3, (int64_t[]){1, 1, c}, GGMLC_INIT_ZEROS, (double)c, (double)c);
}

/* A k x k convolution from ic to oc channels with bias (PyTorch's Conv2d layout). */
static void declare_conv(ggmlc_layer *l, const char *prefix, int k, int64_t ic, int64_t oc) {
    char name[32];
    snprintf(name, sizeof name, "%s_kernel", prefix);
    ggmlc__nn_add_param(l, name, 4, (int64_t[]){k, k, ic, oc}, l->kernel_init, (double)(k * k * ic),
                        (double)(k * k * oc));
    snprintf(name, sizeof name, "%s_bias", prefix);
    ggmlc__nn_add_param(l, name, 3, (int64_t[]){1, 1, oc}, GGMLC_INIT_ZEROS, (double)(k * k * ic),
                        (double)(k * k * oc));
}

static struct ggml_tensor *conv(ggmlc_layer *l, struct nn_build *b, int first_param,
                                struct ggml_tensor *x) {
    struct ggml_tensor *kernel = l->params[first_param].t, *bias = l->params[first_param + 1].t;
    const int pad = (int)(kernel->ne[0] / 2);
    return ggml_add(b->ctx, ggml_conv_2d(b->ctx, kernel, x, 1, 1, pad, pad, 1, 1), bias);
}

/* Whether groups divide every channel count; else the error, naming the layer. */
static enum ggmlc_status groups_fit(ggmlc_layer *l, int64_t c1, int64_t c2) {
    const int g = l->cfg.groups;
    if (g > 0 && c1 % g == 0 && c2 % g == 0) return GGMLC_OK;
    return ggmlc_set_error(GGMLC_ERR_SHAPE,
                           "%s ('%s'): %d groups do not divide %lld and %lld channels",
                           l->ops->kind, l->name, g, (long long)c1, (long long)c2);
}

/* Parameters: gn1, conv1, emb, gn2, conv2, then skip when the channel count changes. */
enum { RES_GN1 = 0, RES_CONV1 = 2, RES_EMB = 4, RES_GN2 = 6, RES_CONV2 = 8, RES_SKIP = 10 };

static enum ggmlc_status res_setup2(ggmlc_layer *l, const int64_t *in, int in_dims,
                                    const int64_t *in2, int in2_dims, int64_t *out, int *out_dims) {
    if (in_dims != 3) return ggmlc__nn_bad_input(l, "a {C, H, W}", in_dims);
    if (!in2 || in2_dims != 1)
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "UNetResBlock ('%s'): needs a {E} timestep embedding as second input (ggmlc_apply2)",
            l->name);
    const int64_t c = in[0], oc = l->cfg.units;
    enum ggmlc_status st = groups_fit(l, c, oc);
    if (st != GGMLC_OK) return st;
    declare_group_norm(l, "gn1", c);
    declare_conv(l, "conv1", 3, c, oc);
    ggmlc__nn_declare_linear(l, "emb", in2[0], oc, true);
    declare_group_norm(l, "gn2", oc);
    declare_conv(l, "conv2", 3, oc, oc);
    if (c != oc) declare_conv(l, "skip", 1, c, oc);
    out[0] = oc;
    out[1] = in[1];
    out[2] = in[2];
    *out_dims = 3;
    return GGMLC_OK;
}

static struct ggml_tensor *res_forward2(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x,
                                        struct ggml_tensor *emb) {
    struct ggml_context *ctx = b->ctx;
    const float eps = 1e-5f;
    struct ggml_tensor *h = conv(l, b, RES_CONV1, ggml_silu(ctx, group_norm(l, b, "gn1", x, eps)));
    struct ggml_tensor *e = ggmlc__nn_linear(
        l, b, "emb", ggml_silu(ctx, ggml_reshape_2d(ctx, emb, emb->ne[0], b->batch)));
    h = ggml_add(ctx, h, ggml_reshape_4d(ctx, e, 1, 1, e->ne[0], b->batch));
    h = conv(l, b, RES_CONV2, ggml_silu(ctx, group_norm(l, b, "gn2", h, eps)));
    return ggml_add(ctx, h, l->n_params > RES_SKIP ? conv(l, b, RES_SKIP, x) : x);
}

const struct layer_ops ggmlc__nn_unet_res_ops = {"UNetResBlock", NULL, NULL, res_setup2,
                                                 res_forward2};

ggmlc_layer *ggmlc_unet_res_block(int64_t out_channels, int groups) {
    if (out_channels <= 0 || out_channels > NN_MAX_ELEMS || groups <= 0 || groups > NN_MAX_WINDOW) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ggmlc_unet_res_block: out_channels %lld and groups %d must be positive",
                        (long long)out_channels, groups);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&ggmlc__nn_unet_res_ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    l->cfg.units = out_channels;
    l->cfg.groups = groups;
    return l;
}

/* The spatial transformer's attentions: no bias in q, k, v; a bias in the output projection. */
static struct attn_heads spatial_heads(const ggmlc_layer *l) {
    return (struct attn_heads){l->cfg.heads, l->cfg.heads, l->cfg.ff, 0, 0.0f, 10000.0f, true};
}

static enum ggmlc_status spatial_setup2(ggmlc_layer *l, const int64_t *in, int in_dims,
                                        const int64_t *in2, int in2_dims, int64_t *out,
                                        int *out_dims) {
    if (in_dims != 3) return ggmlc__nn_bad_input(l, "a {C, H, W}", in_dims);
    if (!in2 || in2_dims != 2)
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "SpatialTransformer ('%s'): needs a {S, Dc} context as second input (ggmlc_apply2)",
            l->name);
    const int64_t c = in[0], inner = l->cfg.heads * l->cfg.ff;
    enum ggmlc_status st = groups_fit(l, c, c);
    if (st != GGMLC_OK) return st;
    const struct attn_heads h = spatial_heads(l);
    declare_group_norm(l, "gn", c);
    ggmlc__nn_declare_linear(l, "proj_in", c, inner, true);
    ggmlc__nn_declare_norm(l, "n1", inner, false);
    ggmlc__nn_declare_attention(l, "attn1", &h, inner, 0);
    ggmlc__nn_declare_norm(l, "n2", inner, false);
    ggmlc__nn_declare_attention(l, "attn2", &h, inner, in2[1]);
    ggmlc__nn_declare_norm(l, "n3", inner, false);
    ggmlc__nn_declare_linear(l, "geglu", inner, 8 * inner, true);
    ggmlc__nn_declare_linear(l, "ff_out", 4 * inner, inner, true);
    ggmlc__nn_declare_linear(l, "proj_out", inner, c, true);
    memcpy(out, in, sizeof(int64_t) * 3);
    *out_dims = 3;
    return GGMLC_OK;
}

static struct ggml_tensor *spatial_forward2(ggmlc_layer *l, struct nn_build *b,
                                            struct ggml_tensor *x, struct ggml_tensor *context) {
    struct ggml_context *ctx = b->ctx;
    const int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], B = x->ne[3];
    const struct attn_heads h = spatial_heads(l);
    struct ggml_tensor *t = ggml_reshape_3d(ctx, group_norm(l, b, "gn", x, 1e-6f), W * H, C, B);
    t = ggmlc__nn_linear(l, b, "proj_in",
                         ggml_cont(ctx, ggml_transpose(ctx, t))); /* [inner, WH, B] tokens */
    t = ggml_add(ctx, t,
                 ggmlc__nn_attention(l, b, "attn1", &h, ggmlc__nn_norm(l, b, "n1", t, false, 1e-5f),
                                     NULL, NULL));
    t = ggml_add(ctx, t,
                 ggmlc__nn_attention(l, b, "attn2", &h, ggmlc__nn_norm(l, b, "n2", t, false, 1e-5f),
                                     context, NULL));
    /* GEGLU: the first half gated by the exact GELU of the second */
    struct ggml_tensor *g = ggml_geglu_erf_swapped(
        ctx, ggmlc__nn_linear(l, b, "geglu", ggmlc__nn_norm(l, b, "n3", t, false, 1e-5f)));
    t = ggml_add(ctx, t, ggmlc__nn_linear(l, b, "ff_out", g));
    t = ggml_cont(ctx, ggml_transpose(ctx, ggmlc__nn_linear(l, b, "proj_out", t))); /* [WH, C, B] */
    return ggml_add(ctx, ggml_reshape_4d(ctx, t, W, H, C, B), x);
}

const struct layer_ops ggmlc__nn_spatial_ops = {"SpatialTransformer", NULL, NULL, spatial_setup2,
                                                spatial_forward2};

ggmlc_layer *ggmlc_spatial_transformer(int64_t n_head, int64_t head_dim, int groups) {
    if (n_head <= 0 || n_head > NN_MAX_WINDOW || head_dim <= 0 || head_dim > NN_MAX_WINDOW ||
        groups <= 0 || groups > NN_MAX_WINDOW) {
        ggmlc_set_error(
            GGMLC_ERR_INVALID_ARG,
            "ggmlc_spatial_transformer: n_head %lld, head_dim %lld and groups %d must be positive",
            (long long)n_head, (long long)head_dim, groups);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&ggmlc__nn_spatial_ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    l->cfg.heads = l->cfg.kv_heads = n_head;
    l->cfg.ff = head_dim;
    l->cfg.groups = groups;
    l->cfg.rope_base = 10000.0f;
    return l;
}
