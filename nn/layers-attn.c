/*
 * layers-attn.c - multi-head attention and position embeddings.
 *
 * Attention runs through ggml_flash_attn_ext, whose backward rule trains it;
 * only attention dropout in training needs the probabilities themselves, and
 * then it runs as soft_max_ext and two mul_mat.  Masks are built in the graph
 * (no host data): zeros, -inf above the diagonal for causal attention,
 * -|i - j| for ALiBi (ggml's soft_max and flash attention scale the mask by
 * each head's slope), -1e30 on padded keys.  Grouped-query heads need no
 * copies: query head h reads key/value head h / (n_head / n_kv_head), as
 * ggml's broadcasting does.
 */
#include <math.h>

#include "attn-impl.h"

/* ----------------------------------------------------- shared helpers */

static int param_index(const ggmlc_layer *l, const char *name) {
    for (int i = 0; i < l->n_params; i++) {
        if (strcmp(l->params[i].name, name) == 0) return i;
    }
    return -1;
}

static struct ggml_tensor *param(ggmlc_layer *l, const char *prefix, const char *suffix) {
    char name[80]; /* longer than any parameter name: a longer one finds nothing */
    snprintf(name, sizeof name, "%s_%s", prefix, suffix);
    const int i = param_index(l, name);
    return i < 0 ? NULL : l->params[i].t;
}

void ggmlc__nn_declare_linear(ggmlc_layer *l, const char *prefix, int64_t in, int64_t out,
                              bool bias) {
    char name[32];
    snprintf(name, sizeof name, "%s_kernel", prefix);
    ggmlc__nn_add_param(l, name, 2, (int64_t[]){in, out}, l->kernel_init, (double)in, (double)out);
    if (!bias) return;
    snprintf(name, sizeof name, "%s_bias", prefix);
    ggmlc__nn_add_param(l, name, 1, (int64_t[]){out}, GGMLC_INIT_ZEROS, (double)in, (double)out);
}

struct ggml_tensor *ggmlc__nn_linear(ggmlc_layer *l, struct nn_build *b, const char *prefix,
                                     struct ggml_tensor *x) {
    struct ggml_tensor *y = ggml_mul_mat(b->ctx, param(l, prefix, "kernel"), x),
                       *bias = param(l, prefix, "bias");
    return bias ? ggml_add(b->ctx, y, bias) : y;
}

void ggmlc__nn_declare_norm(ggmlc_layer *l, const char *prefix, int64_t f, bool rms) {
    char name[32];
    snprintf(name, sizeof name, "%s_gamma", prefix);
    ggmlc__nn_add_param(l, name, 1, (int64_t[]){f}, GGMLC_INIT_ONES, (double)f, (double)f);
    if (rms) return;
    snprintf(name, sizeof name, "%s_beta", prefix);
    ggmlc__nn_add_param(l, name, 1, (int64_t[]){f}, GGMLC_INIT_ZEROS, (double)f, (double)f);
}

struct ggml_tensor *ggmlc__nn_norm(ggmlc_layer *l, struct nn_build *b, const char *prefix,
                                   struct ggml_tensor *x, bool rms, float eps) {
    struct ggml_tensor *y = rms ? ggml_rms_norm(b->ctx, x, eps) : ggml_norm(b->ctx, x, eps);
    y = ggml_mul(b->ctx, y, param(l, prefix, "gamma"));
    return rms ? y : ggml_add(b->ctx, y, param(l, prefix, "beta"));
}

struct ggml_tensor *ggmlc__nn_dropout(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    if (!x || !b->training || l->cfg.rate <= 0) return x;
    struct ggml_tensor *mask = ggml_new_tensor(b->ctx, GGML_TYPE_F32, GGML_MAX_DIMS, x->ne);
    if (!mask) return NULL;
    ggml_set_input(mask);
    ggml_format_name(mask, "%s mask %d", l->name, b->n_aux);
    return ggmlc__nn_add_aux(b, AUX_DROPOUT_MASK, l, mask, 0) ? ggml_mul(b->ctx, x, mask) : NULL;
}

/* ------------------------------------------------------------ attention */

struct attn_heads ggmlc__nn_attn_heads(const ggmlc_layer *l, int64_t d) {
    const struct layer_cfg *c = &l->cfg;
    const int64_t kv = c->kv_heads > 0 ? c->kv_heads : c->heads;
    const bool bias = c->attn_flags & NN_ATTN_BIAS;
    return (struct attn_heads){c->heads,      kv,          c->heads > 0 ? d / c->heads : 0,
                               c->attn_flags, c->max_bias, c->rope_base,
                               bias};
}

void ggmlc__nn_declare_attention(ggmlc_layer *l, const char *prefix, const struct attn_heads *h,
                                 int64_t d, int64_t d_src) {
    const bool bias = h->flags & NN_ATTN_BIAS, self = d_src <= 0;
    const int64_t q_width = h->n_head * h->head_dim, kv_width = h->n_kv_head * h->head_dim;
    char name[32];
    if ((h->flags & NN_ATTN_FUSED) && self) {
        snprintf(name, sizeof name, "%s.qkv", prefix);
        ggmlc__nn_declare_linear(l, name, d, q_width + 2 * kv_width, bias);
    } else {
        static const char *const which[] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof name, "%s.%s", prefix, which[i]);
            ggmlc__nn_declare_linear(l, name, i == 0 || self ? d : d_src,
                                     i == 0 ? q_width : kv_width, bias);
        }
    }
    snprintf(name, sizeof name, "%s.o", prefix);
    ggmlc__nn_declare_linear(l, name, q_width, d, h->out_bias);
}

/* A [S, T] matrix of -|j - i| (key j, query i): ALiBi's distances, which soft_max scales by the slope. */
static struct ggml_tensor *alibi_distances(struct ggml_context *ctx, int64_t S, int64_t T) {
    struct ggml_tensor *keys = ggml_repeat_4d(ctx, ggml_arange(ctx, 0, (float)S, 1), S, T, 1, 1);
    struct ggml_tensor *queries = ggml_reshape_2d(ctx, ggml_arange(ctx, 0, (float)T, 1), 1, T);
    return ggml_neg(ctx, ggml_abs(ctx, ggml_sub(ctx, keys, queries)));
}

/* The mask of attention from T queries to S keys, NULL when none is needed: [S, T] or, with a
 * padding mask pad [S, B], [S, T, 1, B]. */
static struct ggml_tensor *attention_mask(struct nn_build *b, const struct attn_heads *h, bool self,
                                          int64_t S, int64_t T, struct ggml_tensor *pad) {
    struct ggml_context *ctx = b->ctx;
    const bool causal = self && (h->flags & NN_ATTN_CAUSAL), alibi = self && h->max_bias > 0;
    if (!causal && !alibi && !pad) return NULL;
    struct ggml_tensor *m =
        alibi ? alibi_distances(ctx, S, T)
              : ggml_fill(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, S, T), 0.0f);
    if (causal) m = ggml_diag_mask_inf(ctx, m, 0);
    if (!pad) return m;
    /* 1 -> 0, 0 -> -1e30: finite, so that 0 * bias never makes a NaN */
    struct ggml_tensor *p =
        ggml_reshape_4d(ctx, ggml_scale_bias(ctx, pad, 1e30f, -1e30f), S, 1, 1, pad->ne[1]);
    return ggml_add(ctx, ggml_repeat_4d(ctx, m, S, T, 1, pad->ne[1]), p);
}

/* [width, N, B] rows as [head_dim, heads, N, B] heads, rotated when rope is on. */
static struct ggml_tensor *split_heads(struct nn_build *b, const struct attn_heads *h,
                                       struct ggml_tensor *x, int64_t heads, bool rope) {
    struct ggml_context *ctx = b->ctx;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    x = ggml_reshape_4d(ctx, x, h->head_dim, heads, x->ne[1], x->ne[2]);
    if (!rope) return x;
    struct ggml_tensor *pos =
        ggml_cast(ctx, ggml_arange(ctx, 0, (float)x->ne[2], 1), GGML_TYPE_I32);
    return ggml_rope_ext(ctx, x, pos, NULL, (int)h->head_dim, GGML_ROPE_TYPE_NEOX, 0, h->rope_base,
                         1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}

/* softmax(q k^T * scale + mask) v with its probabilities dropped at the layer's rate: [hd, H, T, B]. */
static struct ggml_tensor *attend_explicit(ggmlc_layer *l, struct nn_build *b,
                                           struct ggml_tensor *q, struct ggml_tensor *k,
                                           struct ggml_tensor *v, struct ggml_tensor *mask,
                                           float scale, float max_bias) {
    struct ggml_context *ctx = b->ctx;
    struct ggml_tensor *p =
        ggml_soft_max_ext(ctx, ggml_mul_mat(ctx, k, q), mask, scale, max_bias); /* [S, T, H, B] */
    p = ggmlc__nn_dropout(l, b, p);
    struct ggml_tensor *vt = ggml_cont(ctx, ggml_permute(ctx, v, 1, 0, 2, 3)); /* [S, hd, Hkv, B] */
    return ggml_permute(ctx, ggml_mul_mat(ctx, vt, p), 0, 2, 1, 3);            /* [hd, H, T, B] */
}

/* Queries, keys and values [width, N, B] of the attention named prefix. */
static void project(ggmlc_layer *l, struct nn_build *b, const char *prefix,
                    const struct attn_heads *h, struct ggml_tensor *x, struct ggml_tensor *src,
                    struct ggml_tensor **q, struct ggml_tensor **k, struct ggml_tensor **v) {
    char name[32];
    snprintf(name, sizeof name, "%s.qkv", prefix);
    if (!src && param(l, name, "kernel")) {
        struct ggml_tensor *qkv = ggmlc__nn_linear(l, b, name, x);
        const int64_t qw = h->n_head * h->head_dim, kvw = h->n_kv_head * h->head_dim;
        const size_t es = ggml_element_size(qkv);
        *q = ggml_view_3d(b->ctx, qkv, qw, qkv->ne[1], qkv->ne[2], qkv->nb[1], qkv->nb[2], 0);
        *k = ggml_view_3d(b->ctx, qkv, kvw, qkv->ne[1], qkv->ne[2], qkv->nb[1], qkv->nb[2],
                          (size_t)qw * es);
        *v = ggml_view_3d(b->ctx, qkv, kvw, qkv->ne[1], qkv->ne[2], qkv->nb[1], qkv->nb[2],
                          (size_t)(qw + kvw) * es);
        return;
    }
    snprintf(name, sizeof name, "%s.q", prefix);
    *q = ggmlc__nn_linear(l, b, name, x);
    snprintf(name, sizeof name, "%s.k", prefix);
    *k = ggmlc__nn_linear(l, b, name, src ? src : x);
    snprintf(name, sizeof name, "%s.v", prefix);
    *v = ggmlc__nn_linear(l, b, name, src ? src : x);
}

struct ggml_tensor *ggmlc__nn_attention(ggmlc_layer *l, struct nn_build *b, const char *prefix,
                                        const struct attn_heads *h, struct ggml_tensor *x,
                                        struct ggml_tensor *src, struct ggml_tensor *pad) {
    struct ggml_context *ctx = b->ctx;
    struct ggml_tensor *q, *k, *v;
    project(l, b, prefix, h, x, src, &q, &k, &v);
    const bool self = src == NULL, rope = self && (h->flags & NN_ATTN_ROPE);
    const int64_t T = x->ne[1], S = self ? T : src->ne[1], B = x->ne[2];
    q = ggml_cont(ctx, ggml_permute(ctx, split_heads(b, h, q, h->n_head, rope), 0, 2, 1,
                                    3)); /* [hd, T, H, B] */
    k = ggml_cont(ctx, ggml_permute(ctx, split_heads(b, h, k, h->n_kv_head, rope), 0, 2, 1,
                                    3)); /* [hd, S, Hkv, B] */
    v = ggml_cont(ctx, ggml_permute(ctx, split_heads(b, h, v, h->n_kv_head, false), 0, 2, 1, 3));
    struct ggml_tensor *mask = attention_mask(b, h, self, S, T, pad);
    const float scale = 1.0f / sqrtf((float)h->head_dim), max_bias = self ? h->max_bias : 0.0f;
    struct ggml_tensor *o = b->training && l->cfg.rate > 0
                                ? attend_explicit(l, b, q, k, v, mask, scale, max_bias)
                                : ggml_flash_attn_ext(ctx, q, k, v, mask, scale, max_bias, 0.0f);
    if (!o) return NULL;
    o = ggml_reshape_3d(ctx, ggml_cont(ctx, o), h->n_head * h->head_dim, T, B);
    char name[32];
    snprintf(name, sizeof name, "%s.o", prefix);
    return ggmlc__nn_linear(l, b, name, o);
}

/* ----------------------------------------------------- the attention layer */

/* Why heads do not fit a width d (NULL when they do). */
static const char *heads_problem(const struct attn_heads *h, int64_t d) {
    if (h->n_head <= 0 || d % h->n_head != 0)
        return "the model width is not a multiple of the head count";
    if (h->n_kv_head <= 0 || h->n_head % h->n_kv_head != 0)
        return "n_kv_head does not divide n_head";
    if ((h->flags & NN_ATTN_ROPE) && h->head_dim % 2 != 0) return "rope needs an even head width";
    return NULL;
}

static enum ggmlc_status mha_setup2(ggmlc_layer *l, const int64_t *in, int in_dims,
                                    const int64_t *in2, int in2_dims, int64_t *out, int *out_dims) {
    if (in_dims != 2) return ggmlc__nn_bad_input(l, "a {T, D}", in_dims);
    const int64_t d = in[1];
    const struct attn_heads h = ggmlc__nn_attn_heads(l, d);
    const char *why = heads_problem(&h, d);
    if (why)
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE, "%s ('%s'): %s (width %lld, %lld heads, %lld key/value heads)",
            l->ops->kind, l->name, why, (long long)d, (long long)h.n_head, (long long)h.n_kv_head);
    if (in2 && !(in2_dims == 2 || (in2_dims == 1 && in2[0] == in[0])))
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "%s ('%s'): the second input must be a {S, Dk} context or a {%lld} padding mask",
            l->ops->kind, l->name, (long long)in[0]);
    out[0] = in[0];
    out[1] = d;
    *out_dims = 2;
    ggmlc__nn_declare_attention(l, "attn", &h, d, in2 && in2_dims == 2 ? in2[1] : 0);
    return GGMLC_OK;
}

static struct ggml_tensor *mha_forward2(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x,
                                        struct ggml_tensor *x2) {
    const struct attn_heads h = ggmlc__nn_attn_heads(l, x->ne[0]);
    const bool is_mask = x2 && l->in2_dims == 1;
    struct ggml_tensor *pad = is_mask ? ggml_reshape_2d(b->ctx, x2, x2->ne[0], b->batch) : NULL;
    return ggmlc__nn_attention(l, b, "attn", &h, x, is_mask ? NULL : x2, pad);
}

const struct layer_ops ggmlc__nn_mha_ops = {"MultiHeadAttention", NULL, NULL, mha_setup2,
                                            mha_forward2};

struct ggmlc_attention_options ggmlc_attention_defaults(int64_t n_head) {
    return (struct ggmlc_attention_options){
        .n_head = n_head, .n_kv_head = n_head, .bias = true, .rope_base = 10000.0f};
}

/* The attention settings into a layer's configuration; false (error set) when out of range. */
bool ggmlc__nn_attention_settings(const char *func, const struct ggmlc_attention_options *o,
                                  struct layer_cfg *c) {
    const int64_t kv = o->n_kv_head > 0 ? o->n_kv_head : o->n_head;
    if (o->n_head <= 0 || o->n_head > NN_MAX_WINDOW || kv > o->n_head || o->n_head % kv != 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "%s: n_head %lld must be positive and a multiple of n_kv_head %lld", func,
                        (long long)o->n_head, (long long)kv);
        return false;
    }
    char why[96];
    if (!ggmlc__nn_setting_ok(o->alibi_max_bias >= 0 && o->alibi_max_bias < INFINITY,
                              "alibi_max_bias", o->alibi_max_bias, "a finite number >= 0", why,
                              sizeof why) ||
        !ggmlc__nn_setting_ok(o->rope_base > 0 && o->rope_base < INFINITY, "rope_base",
                              o->rope_base, "a finite number > 0", why, sizeof why) ||
        !ggmlc__nn_setting_ok(ggmlc__nn_in_unit_interval(o->dropout), "dropout", o->dropout,
                              "in [0, 1)", why, sizeof why)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %s", func, why);
        return false;
    }
    c->heads = o->n_head;
    c->kv_heads = kv;
    c->attn_flags = (o->causal ? NN_ATTN_CAUSAL : 0) | (o->fused_qkv ? NN_ATTN_FUSED : 0) |
                    (o->bias ? NN_ATTN_BIAS : 0) | (o->rope ? NN_ATTN_ROPE : 0);
    c->max_bias = o->alibi_max_bias;
    c->rope_base = o->rope_base;
    c->rate = o->dropout;
    return true;
}

ggmlc_layer *ggmlc_multi_head_attention(const struct ggmlc_attention_options *o) {
    if (!o) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_multi_head_attention: NULL options");
        return NULL;
    }
    struct layer_cfg c = {.slope = 0.01f};
    if (!ggmlc__nn_attention_settings("ggmlc_multi_head_attention", o, &c)) return NULL;
    ggmlc_layer *l = ggmlc__nn_layer_new(&ggmlc__nn_mha_ops, GGMLC_ACT_NONE);
    if (l) l->cfg = c;
    return l;
}

/* ----------------------------------------------------- position embedding */

static enum ggmlc_status posemb_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out,
                                      int *out_dims) {
    if (in_dims != 2) return ggmlc__nn_bad_input(l, "a {T, D}", in_dims);
    const bool learned = l->cfg.attn_flags & NN_ATTN_LEARNED;
    if (in[0] > l->cfg.units || (!learned && in[1] % 2 != 0))
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "PositionalEmbedding ('%s'): %lld positions exceed max_len %lld, or the width %lld "
            "is odd (sinusoidal)",
            l->name, (long long)in[0], (long long)l->cfg.units, (long long)in[1]);
    out[0] = in[0];
    out[1] = in[1];
    *out_dims = 2;
    if (learned)
        ggmlc__nn_add_param(l, "embeddings", 2, (int64_t[]){in[1], l->cfg.units},
                            GGMLC_INIT_GLOROT_UNIFORM, 1, in[1]);
    return GGMLC_OK;
}

/* [D, T] of sin(t w_i) at 2i and cos(t w_i) at 2i + 1, w_i = 10000^(-2i/D): ggml's timestep
 * embedding (cos half then sin half, the same frequencies) with its halves interleaved. */
static struct ggml_tensor *sinusoids(struct ggml_context *ctx, int64_t d, int64_t T) {
    struct ggml_tensor *e =
        ggml_timestep_embedding(ctx, ggml_arange(ctx, 0, (float)T, 1), (int)d, 10000); /* [D, T] */
    const int64_t half = d / 2;
    struct ggml_tensor *cosines = ggml_view_3d(ctx, e, 1, half, T, e->nb[0], e->nb[1], 0);
    struct ggml_tensor *sines =
        ggml_view_3d(ctx, e, 1, half, T, e->nb[0], e->nb[1], (size_t)half * e->nb[0]);
    return ggml_reshape_2d(ctx, ggml_concat(ctx, ggml_cont(ctx, sines), ggml_cont(ctx, cosines), 0),
                           d, T);
}

static struct ggml_tensor *posemb_forward(ggmlc_layer *l, struct nn_build *b,
                                          struct ggml_tensor *x) {
    const int64_t d = x->ne[0], T = x->ne[1];
    if (!(l->cfg.attn_flags & NN_ATTN_LEARNED)) return ggml_add(b->ctx, x, sinusoids(b->ctx, d, T));
    struct ggml_tensor *table = l->params[0].t;
    return ggml_add(b->ctx, x, ggml_view_2d(b->ctx, table, d, T, table->nb[1], 0));
}

const struct layer_ops ggmlc__nn_posemb_ops = {"PositionalEmbedding", posemb_setup, posemb_forward};

ggmlc_layer *ggmlc_positional_embedding(int64_t max_len, bool learned) {
    if (max_len <= 0 || max_len > NN_MAX_ELEMS) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ggmlc_positional_embedding: max_len %lld must be positive",
                        (long long)max_len);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(&ggmlc__nn_posemb_ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    l->cfg.units = max_len;
    l->cfg.attn_flags = learned ? NN_ATTN_LEARNED : 0;
    return l;
}

/* ------------------------------------------------------------ settings */

static bool is_attention_kind(const ggmlc_layer *l) {
    const struct layer_ops *o = l->ops;
    return o == &ggmlc__nn_mha_ops || o == &ggmlc__nn_encoder_ops || o == &ggmlc__nn_decoder_ops ||
           o == &ggmlc__nn_spatial_ops;
}

bool ggmlc__nn_attn_settings_valid(const ggmlc_layer *l, char *why, size_t size) {
    const struct layer_cfg *c = &l->cfg;
    if (!is_attention_kind(l))
        return ggmlc__nn_setting_ok(c->attn_flags <= 511 && c->groups >= 0, "attention flags",
                                    c->attn_flags, "a set of known flags", why, size);
    const bool heads_ok = c->heads > 0 && c->heads <= NN_MAX_WINDOW && c->kv_heads > 0 &&
                          c->kv_heads <= c->heads && c->heads % c->kv_heads == 0;
    return ggmlc__nn_setting_ok(heads_ok, "head count", (double)c->heads,
                                "positive and a multiple of the key/value heads", why, size) &&
           ggmlc__nn_setting_ok(c->ff >= 0 && c->ff <= NN_MAX_ELEMS, "MLP width", (double)c->ff,
                                "in [0, 2^40]", why, size) &&
           ggmlc__nn_setting_ok(c->attn_flags <= 511, "attention flags", c->attn_flags,
                                "a set of known flags", why, size) &&
           ggmlc__nn_setting_ok(c->groups >= 0, "groups", c->groups, ">= 0", why, size) &&
           ggmlc__nn_setting_ok(c->max_bias >= 0 && c->max_bias < INFINITY, "alibi_max_bias",
                                c->max_bias, "finite, >= 0", why, size) &&
           ggmlc__nn_setting_ok(c->rope_base > 0 && c->rope_base < INFINITY, "rope_base",
                                c->rope_base, "finite, > 0", why, size);
}
