/*
 * gpt-model.c - weights, training and generation graphs, and the GGUF checkpoint of the GPT
 * of ggmlc-gpt (see gpt-model.h).
 */
#include "gpt-model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggmlc.h"
#include "gguf.h"

#define RMS_EPS 1e-5f
#define ROPE_BASE 10000.0f
#define GGUF_ARCH "ggmlc-gpt"

const char *gpt_hparams_check(const struct gpt_hparams *hp) {
    if (hp->n_layer < 1 || hp->n_layer > GPT_MAX_LAYERS) return "--layers must be 1..64";
    if (hp->n_head < 1 || hp->n_head > 1024) return "--heads must be 1..1024";
    if (hp->n_embd < 2 || hp->n_embd > 65536) return "--width must be 2..65536";
    if (hp->n_embd % hp->n_head != 0 || (hp->n_embd / hp->n_head) % 2 != 0)
        return "--width must be a multiple of --heads with an even head size";
    if (hp->n_ctx < 2 || hp->n_ctx > 65536) return "--context must be 2..65536";
    return NULL;
}

/* ---------------------------------------------------------------- weights */

/* A vector (n1 = 0) in F32 or a matrix of the given type. */
static struct ggml_tensor *new_weight(struct ggml_context *ctx, const char *name, int64_t n0,
                                      int64_t n1, enum ggml_type matrix_type) {
    struct ggml_tensor *t = n1 > 0 ? ggml_new_tensor_2d(ctx, matrix_type, n0, n1)
                                   : ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n0);
    ggml_set_name(t, name);
    return t;
}

/* The tensors, the projections' weights of type wtype (the embedding and norms stay F32: a
 * token reads one embedding row, and get_rows and training want it in F32). */
static void create_tensors(struct gpt_model *m, enum ggml_type wtype) {
    const int64_t c = m->hp.n_embd;
    char name[64];
    m->tok_embd = new_weight(m->ctx, "token_embd.weight", c, GPT_VOCAB, GGML_TYPE_F32);
    for (int il = 0; il < m->hp.n_layer; il++) {
        struct gpt_layer *l = &m->layers[il];
#define LAYER_WEIGHT(field, suffix, n0, n1)                            \
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);              \
    l->field = new_weight(m->ctx, name, n0, n1, wtype)
        LAYER_WEIGHT(attn_norm, "attn_norm.weight", c, 0);
        LAYER_WEIGHT(wqkv, "attn_qkv.weight", c, 3 * c);
        LAYER_WEIGHT(wo, "attn_output.weight", c, c);
        LAYER_WEIGHT(mlp_norm, "ffn_norm.weight", c, 0);
        LAYER_WEIGHT(w_up, "ffn_up.weight", c, 4 * c);
        LAYER_WEIGHT(w_down, "ffn_down.weight", 4 * c, c);
#undef LAYER_WEIGHT
    }
    m->out_norm = new_weight(m->ctx, "output_norm.weight", c, 0, wtype);
    m->out = new_weight(m->ctx, "output.weight", c, GPT_VOCAB, wtype);
    m->train_pos = ggml_new_tensor_1d(m->ctx, GGML_TYPE_I32, m->hp.n_ctx);
    ggml_set_name(m->train_pos, "positions");
    m->train_mask = ggml_new_tensor_2d(m->ctx, GGML_TYPE_F32, m->hp.n_ctx, m->hp.n_ctx);
    ggml_set_name(m->train_mask, "causal_mask");
}

/* splitmix64, then Box-Muller: the same weights for the same seed on every machine. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state) { return ((next_random(state) >> 11) + 0.5) / 9007199254740992.0; }

static void fill_tensor(struct ggml_tensor *t, float stddev, uint64_t *state) {
    const int64_t n = ggml_nelements(t);
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return;
    for (int64_t i = 0; i < n; i++) {
        const double r = sqrt(-2 * log(uniform01(state))), a = 2 * M_PI * uniform01(state);
        v[i] = stddev > 0 ? (float)(stddev * r * cos(a)) : 1.0f;
    }
    ggml_backend_tensor_set(t, v, 0, ggml_nbytes(t));
    free(v);
}

static void init_weights(struct gpt_model *m, uint64_t seed) {
    uint64_t state = seed;
    const float std = 0.02f, std_resid = std / sqrtf(2.0f * (float)m->hp.n_layer);
    fill_tensor(m->tok_embd, std, &state);
    for (int il = 0; il < m->hp.n_layer; il++) {
        struct gpt_layer *l = &m->layers[il];
        fill_tensor(l->attn_norm, 0, &state);
        fill_tensor(l->wqkv, std, &state);
        fill_tensor(l->wo, std_resid, &state);
        fill_tensor(l->mlp_norm, 0, &state);
        fill_tensor(l->w_up, std, &state);
        fill_tensor(l->w_down, std_resid, &state);
    }
    fill_tensor(m->out_norm, 0, &state);
    fill_tensor(m->out, std, &state);
}

/* Positions 0, 1, ... and the causal mask of a whole context (the first step of generation). */
static void set_train_positions(struct gpt_model *m) {
    const int32_t n = m->hp.n_ctx;
    int32_t *pos = malloc((size_t)n * sizeof *pos);
    int64_t *rows = malloc((size_t)n * sizeof *rows);
    float *mask = malloc((size_t)n * (size_t)n * sizeof *mask);
    if (pos && rows && mask) {
        gpt_step_values(0, n, n, pos, rows, mask);
        ggml_backend_tensor_set(m->train_pos, pos, 0, ggml_nbytes(m->train_pos));
        ggml_backend_tensor_set(m->train_mask, mask, 0, ggml_nbytes(m->train_mask));
    }
    free(pos);
    free(rows);
    free(mask);
}

/* A buffer type of the backend's device whose layout its matrix products read faster than the
 * default one (ggml's "extra" buffer types, such as a CPU's repacked rows), if one of them takes
 * w as a product's weights: asked as llama.cpp asks, through supports_op with w placed in it. */
static ggml_backend_buffer_type_t product_buft_for(ggml_backend_t backend, struct ggml_tensor *w) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : NULL;
    ggml_backend_dev_get_extra_bufts_t get =
        reg ? (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts") : NULL;
    struct ggml_context *ctx = get ? ggml_init((struct ggml_init_params){2 * ggml_tensor_overhead(), NULL, true}) : NULL;
    if (!ctx) return NULL;
    struct ggml_tensor *op = ggml_mul_mat(ctx, w, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w->ne[0], 1));
    ggml_backend_buffer_type_t found = NULL;
    for (ggml_backend_buffer_type_t *b = get(dev); b && *b && !found; b++) {
        ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(*b, 0);
        if (!probe) continue;
        w->buffer = probe;
        if (ggml_backend_dev_supports_op(dev, op)) found = *b;
        w->buffer = NULL;
        ggml_backend_buffer_free(probe);
    }
    ggml_free(ctx);
    return found;
}

/* Place the projections (attention, MLP, output) in the device's product buffer type where it
 * has one that takes them; the rest stays for the default buffer.  Nothing is placed (and true
 * returned) when there is none; false only when such a buffer cannot be had. */
static bool place_products(struct gpt_model *m, ggml_backend_t backend) {
    struct ggml_tensor *w[1 + 4 * GPT_MAX_LAYERS];
    int n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const struct gpt_layer *l = &m->layers[il];
        w[n++] = l->wqkv, w[n++] = l->wo, w[n++] = l->w_up, w[n++] = l->w_down;
    }
    w[n++] = m->out;
    ggml_backend_buffer_type_t buft = product_buft_for(backend, w[0]);
    if (!buft) return true;
    bool take[1 + 4 * GPT_MAX_LAYERS]; /* asked once per weight: each answer allocates a probe */
    const size_t align = ggml_backend_buft_get_alignment(buft);
    size_t size = 0;
    for (int i = 0; i < n; i++) {
        take[i] = i == 0 || product_buft_for(backend, w[i]) == buft;
        if (take[i]) size += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, w[i]), align);
    }
    m->product_buffer = ggml_backend_buft_alloc_buffer(buft, size);
    if (!m->product_buffer) return false;
    ggml_backend_buffer_set_usage(m->product_buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    struct ggml_tallocr ta = ggml_tallocr_new(m->product_buffer);
    for (int i = 0; i < n; i++)
        if (take[i] && ggml_tallocr_alloc(&ta, w[i]) != GGML_STATUS_SUCCESS) return false;
    return true;
}

/* The model's tensors with projections of type wtype, allocated on backend. */
static bool model_create(struct gpt_model *m, const struct gpt_hparams *hp, ggml_backend_t backend,
                         enum ggml_type wtype) {
    memset(m, 0, sizeof *m);
    const char *why = gpt_hparams_check(hp);
    if (why) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s", why), false;
    m->hp = *hp;
    const size_t n_tensors = 5 + 6 * (size_t)hp->n_layer;
    struct ggml_init_params ip = {n_tensors * ggml_tensor_overhead(), NULL, true};
    m->ctx = ggml_init(ip);
    if (!m->ctx) return false;
    create_tensors(m, wtype);
    /* converted weights serve generation only: they may go where the products read them best */
    if (wtype != GGML_TYPE_F32 && !place_products(m, backend)) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for the model's projections");
        gpt_model_free(m);
        return false;
    }
    m->buffer = ggml_backend_alloc_ctx_tensors(m->ctx, backend);
    if (!m->buffer) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for the model's %zu weights", n_tensors);
        gpt_model_free(m);
        return false;
    }
    ggml_backend_buffer_set_usage(m->buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    set_train_positions(m);
    return true;
}

bool gpt_model_create(struct gpt_model *m, const struct gpt_hparams *hp, ggml_backend_t backend,
                      bool init, uint64_t seed) {
    if (!model_create(m, hp, backend, GGML_TYPE_F32)) return false;
    if (init) init_weights(m, seed);
    return true;
}

void gpt_model_free(struct gpt_model *m) {
    if (m->buffer) ggml_backend_buffer_free(m->buffer);
    if (m->product_buffer) ggml_backend_buffer_free(m->product_buffer);
    if (m->ctx) ggml_free(m->ctx);
    memset(m, 0, sizeof *m);
}

/* Every weight but the positions, in file order. */
static int weight_list(const struct gpt_model *m, struct ggml_tensor **out) {
    int n = 0;
    out[n++] = m->tok_embd;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const struct gpt_layer *l = &m->layers[il];
        out[n++] = l->attn_norm, out[n++] = l->wqkv, out[n++] = l->wo;
        out[n++] = l->mlp_norm, out[n++] = l->w_up, out[n++] = l->w_down;
    }
    out[n++] = m->out_norm, out[n++] = m->out;
    return n;
}

int64_t gpt_model_n_params(const struct gpt_model *m) {
    struct ggml_tensor *w[3 + 6 * GPT_MAX_LAYERS];
    int64_t total = 0;
    for (int i = 0, n = weight_list(m, w); i < n; i++) total += ggml_nelements(w[i]);
    return total;
}

size_t gpt_model_bytes(const struct gpt_model *m) {
    struct ggml_tensor *w[3 + 6 * GPT_MAX_LAYERS];
    size_t total = 0;
    for (int i = 0, n = weight_list(m, w); i < n; i++) total += ggml_nbytes(w[i]);
    return total;
}

/* ------------------------------------------------------------------ graphs */

static struct ggml_tensor *rms_norm(struct ggml_context *ctx, struct ggml_tensor *x,
                                    struct ggml_tensor *w) {
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, RMS_EPS), w);
}

static struct ggml_tensor *rope(struct ggml_context *ctx, struct ggml_tensor *x,
                                struct ggml_tensor *pos, int n_ctx) {
    return ggml_rope_ext(ctx, x, pos, NULL, (int)x->ne[0], GGML_ROPE_TYPE_NEOX, n_ctx, ROPE_BASE,
                         1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}

/* One of q, k, v as [head, n_head, T, B] from qkv [3 C, T, B]. */
static struct ggml_tensor *qkv_part(struct ggml_context *ctx, struct ggml_tensor *qkv,
                                    const struct gpt_hparams *hp, int which) {
    const int64_t hd = hp->n_embd / hp->n_head;
    const size_t f = sizeof(float);
    return ggml_view_4d(ctx, qkv, hd, hp->n_head, qkv->ne[1], qkv->ne[2], hd * f, qkv->nb[1],
                        qkv->nb[2], (size_t)which * (size_t)hp->n_embd * f);
}

/* The normed input's queries and keys (rotated by position) and values, [head, H, T, B] each. */
static void project_qkv(struct ggml_context *ctx, const struct gpt_hparams *hp, const struct gpt_layer *l,
                        struct ggml_tensor *x, struct ggml_tensor *pos, struct ggml_tensor **q,
                        struct ggml_tensor **k, struct ggml_tensor **v) {
    struct ggml_tensor *qkv = ggml_mul_mat(ctx, l->wqkv, rms_norm(ctx, x, l->attn_norm));
    *q = rope(ctx, qkv_part(ctx, qkv, hp, 0), pos, hp->n_ctx);
    *k = rope(ctx, qkv_part(ctx, qkv, hp, 1), pos, hp->n_ctx);
    *v = qkv_part(ctx, qkv, hp, 2);
}

/* The same as project_qkv for training: q, k and v each the product of its third of the
 * rows of wqkv, [head, H, T, B] and contiguous.  Their gradients then flow into three
 * blocks of the weights' gradient (C x C each) instead of three views of one [3 C, T, B]
 * activation, whose accumulation copied the whole activation gradient three times per layer
 * (ACC, 2.5% of a training step). */
static void project_qkv_split(struct ggml_context *ctx, const struct gpt_hparams *hp, const struct gpt_layer *l,
                              struct ggml_tensor *x, struct ggml_tensor *pos, struct ggml_tensor **q,
                              struct ggml_tensor **k, struct ggml_tensor **v) {
    const int64_t c = hp->n_embd, hd = c / hp->n_head;
    struct ggml_tensor *xn = rms_norm(ctx, x, l->attn_norm), *part[3];
    for (int i = 0; i < 3; i++) {
        struct ggml_tensor *w = ggml_view_2d(ctx, l->wqkv, c, c, l->wqkv->nb[1], (size_t)i * (size_t)c * l->wqkv->nb[1]);
        part[i] = ggml_mul_mat(ctx, w, xn);
        part[i] = ggml_reshape_4d(ctx, part[i], hd, hp->n_head, part[i]->ne[1], part[i]->ne[2]);
    }
    *q = rope(ctx, part[0], pos, hp->n_ctx);
    *k = rope(ctx, part[1], pos, hp->n_ctx);
    *v = part[2];
}

/* softmax(k^T q / sqrt(head) + mask) applied to v^T: q [head, Tq, H, B], k [head, Tk, H, B]
 * (views: the product reads them strided), vt [Tk, head, H, B], mask [Tk, Tq] (-inf on the
 * future: added inside the softmax, which saves a masking pass forward and backward);
 * result [head, Tq, H, B]. */
static struct ggml_tensor *attention(struct ggml_context *ctx, struct ggml_tensor *q,
                                     struct ggml_tensor *k, struct ggml_tensor *vt, struct ggml_tensor *mask) {
    struct ggml_tensor *kq = ggml_mul_mat(ctx, k, q);
    kq = ggml_soft_max_ext(ctx, kq, mask, 1.0f / sqrtf((float)q->ne[0]), 0.0f);
    return ggml_mul_mat(ctx, vt, kq);
}

static struct ggml_tensor *mlp(struct ggml_context *ctx, const struct gpt_layer *l,
                               struct ggml_tensor *x) {
    struct ggml_tensor *h = ggml_gelu(ctx, ggml_mul_mat(ctx, l->w_up, rms_norm(ctx, x, l->mlp_norm)));
    return ggml_mul_mat(ctx, l->w_down, h);
}

/* Attention output [head, Tq, H, B] back to [C, Tq, B], projected. */
static struct ggml_tensor *merge_heads(struct ggml_context *ctx, const struct gpt_layer *l,
                                       struct ggml_tensor *o, int64_t n_embd) {
    o = ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3));
    return ggml_mul_mat(ctx, l->wo, ggml_reshape_3d(ctx, o, n_embd, o->ne[2], o->ne[3]));
}

static struct ggml_tensor *output_logits(struct ggml_context *ctx, struct gpt_model *m,
                                         struct ggml_tensor *x) {
    return ggml_mul_mat(ctx, m->out, rms_norm(ctx, x, m->out_norm));
}

static void mark_params(struct gpt_model *m) {
    struct ggml_tensor *w[3 + 6 * GPT_MAX_LAYERS];
    for (int i = 0, n = weight_list(m, w); i < n; i++) ggml_set_param(w[i]);
}

struct ggml_tensor *gpt_forward_train(struct ggml_context *ctx, struct gpt_model *m,
                                      struct ggml_tensor *tokens, bool train) {
    const struct gpt_hparams *hp = &m->hp;
    const int64_t t = tokens->ne[0], b = tokens->ne[1];
    if (train) mark_params(m);
    struct ggml_tensor *pos = ggml_view_1d(ctx, m->train_pos, t, 0);
    struct ggml_tensor *mask = ggml_view_2d(ctx, m->train_mask, t, t, m->train_mask->nb[1], 0);
    struct ggml_tensor *flat = ggml_reshape_1d(ctx, tokens, t * b);
    struct ggml_tensor *x = ggml_reshape_3d(ctx, ggml_get_rows(ctx, m->tok_embd, flat), hp->n_embd, t, b);
    for (int il = 0; il < hp->n_layer; il++) {
        const struct gpt_layer *l = &m->layers[il];
        struct ggml_tensor *q, *k, *v;
        if (l->wqkv->type == GGML_TYPE_F32) /* converted weights may be repacked: no row views of them */
            project_qkv_split(ctx, hp, l, x, pos, &q, &k, &v);
        else
            project_qkv(ctx, hp, l, x, pos, &q, &k, &v);
        q = ggml_permute(ctx, q, 0, 2, 1, 3);                  /* [head, T, H, B] views */
        k = ggml_permute(ctx, k, 0, 2, 1, 3);
        v = ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3));   /* [T, head, H, B] */
        x = ggml_add(ctx, x, merge_heads(ctx, l, attention(ctx, q, k, v, mask), hp->n_embd));
        x = ggml_add(ctx, x, mlp(ctx, l, x));
    }
    return output_logits(ctx, m, x);
}

/* ------------------------------------------------------------------- cache */

enum ggml_type gpt_cache_type(const struct gpt_model *m) {
    return m->layers[0].wqkv && m->layers[0].wqkv->type != GGML_TYPE_F32 ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

bool gpt_cache_create(struct gpt_cache *c, const struct gpt_model *m, ggml_backend_t backend) {
    memset(c, 0, sizeof *c);
    const struct gpt_hparams *hp = &m->hp;
    struct ggml_init_params ip = {2 * (size_t)hp->n_layer * ggml_tensor_overhead(), NULL, true};
    c->ctx = ggml_init(ip);
    if (!c->ctx) return false;
    const enum ggml_type type = gpt_cache_type(m);
    for (int il = 0; il < hp->n_layer; il++) {
        c->k[il] = ggml_new_tensor_2d(c->ctx, type, hp->n_embd, hp->n_ctx);
        c->v[il] = ggml_new_tensor_2d(c->ctx, type, hp->n_embd, hp->n_ctx);
    }
    c->buffer = ggml_backend_alloc_ctx_tensors(c->ctx, backend);
    if (!c->buffer) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for the key/value cache");
        gpt_cache_free(c);
        return false;
    }
    /* zeros, so that masked positions never hold NaN (0 x NaN would leak through) */
    ggml_backend_buffer_clear(c->buffer, 0);
    return true;
}

void gpt_cache_free(struct gpt_cache *c) {
    if (c->buffer) ggml_backend_buffer_free(c->buffer);
    if (c->ctx) ggml_free(c->ctx);
    memset(c, 0, sizeof *c);
}

int32_t gpt_cache_span(int32_t n_filled, int32_t n_ctx) {
    const int32_t span = (int32_t)GGML_PAD(n_filled, GPT_CACHE_SPAN_STEP);
    return span < n_ctx ? span : n_ctx;
}

void gpt_step_values(int32_t n_past, int n, int32_t n_kv, int32_t *pos, int64_t *rows, float *mask) {
    for (int i = 0; i < n; i++) {
        pos[i] = n_past + i, rows[i] = n_past + i;
        for (int32_t j = 0; j < n_kv; j++) mask[(size_t)i * (size_t)n_kv + (size_t)j] = j <= n_past + i ? 0.0f : -INFINITY;
    }
}

/* Write the new keys and values (each [head, H, n], rows of n_embd per token) into the cache rows
 * of their positions and return the cache's first n_kv positions as k and v [head, n_kv, H]
 * (views, as flash attention reads them). */
static void cache_write(struct ggml_context *ctx, struct gpt_cache *c, int il, struct ggml_tensor *k,
                        struct ggml_tensor *v, const struct gpt_step_inputs *in, int64_t hd, int32_t n_kv,
                        struct ggml_tensor **k_all, struct ggml_tensor **v_all) {
    const int64_t c_embd = c->k[il]->ne[0], n = in->rows->ne[0], n_head = c_embd / hd;
    /* k: the rope's result, contiguous; v: a view of the qkv product, contiguous within a token */
    struct ggml_tensor *kc = ggml_set_rows(ctx, c->k[il], ggml_reshape_2d(ctx, k, c_embd, n), in->rows);
    struct ggml_tensor *vc = ggml_set_rows(ctx, c->v[il], ggml_view_2d(ctx, v, c_embd, n, v->nb[2], 0), in->rows);
    const size_t f = ggml_element_size(kc);
    *k_all = ggml_permute(ctx, ggml_view_3d(ctx, kc, hd, n_head, n_kv, hd * f, c_embd * f, 0), 0, 2, 1, 3);
    *v_all = ggml_permute(ctx, ggml_view_3d(ctx, vc, hd, n_head, n_kv, hd * f, c_embd * f, 0), 0, 2, 1, 3);
}

struct ggml_tensor *gpt_forward_cached(struct ggml_context *ctx, struct gpt_model *m,
                                       struct gpt_cache *c, int n, int32_t n_kv, bool last_only,
                                       struct gpt_step_inputs *in) {
    const struct gpt_hparams *hp = &m->hp;
    const int64_t hd = hp->n_embd / hp->n_head;
    in->tokens = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    in->pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    in->rows = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, n);
    /* the mask of the cache's type: CPU flash attention reads an F16 cache with an F16 mask in
     * one pass over each row of keys and values, without converting them to F32 first */
    in->mask = ggml_new_tensor_2d(ctx, gpt_cache_type(m), n_kv, n);
    ggml_set_input(in->tokens), ggml_set_input(in->pos), ggml_set_input(in->rows);
    ggml_set_input(in->mask);
    struct ggml_tensor *x = ggml_reshape_3d(ctx, ggml_get_rows(ctx, m->tok_embd, in->tokens), hp->n_embd, n, 1);
    for (int il = 0; il < hp->n_layer; il++) {
        const struct gpt_layer *l = &m->layers[il];
        struct ggml_tensor *q, *k, *v, *k_all, *v_all;
        project_qkv(ctx, hp, l, x, in->pos, &q, &k, &v);
        cache_write(ctx, c, il, k, v, in, hd, n_kv, &k_all, &v_all);
        q = ggml_permute(ctx, q, 0, 2, 1, 3); /* [head, n, H, 1] view */
        /* one node for the whole attention (scores, softmax, weighted values), its result
         * already [head, H, n]: a step graph's threads meet once for it, not four times */
        struct ggml_tensor *o = ggml_flash_attn_ext(ctx, q, k_all, v_all, in->mask, 1.0f / sqrtf((float)hd), 0.0f, 0.0f);
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, l->wo, ggml_reshape_3d(ctx, o, hp->n_embd, n, 1)));
        x = ggml_add(ctx, x, mlp(ctx, l, x));
    }
    if (last_only && n > 1) x = ggml_view_3d(ctx, x, hp->n_embd, 1, 1, x->nb[1], x->nb[2], (size_t)(n - 1) * x->nb[1]);
    return ggml_reshape_2d(ctx, output_logits(ctx, m, x), GPT_VOCAB, last_only ? 1 : n);
}

/* -------------------------------------------------------------- checkpoint */

bool gpt_model_save(const struct gpt_model *m, const char *path, int64_t steps, double val_loss) {
    struct gguf_context *g = gguf_init_empty();
    if (!g) return false;
    gguf_set_val_str(g, "general.architecture", GGUF_ARCH);
    gguf_set_val_u32(g, GGUF_ARCH ".vocab_size", GPT_VOCAB);
    gguf_set_val_u32(g, GGUF_ARCH ".context_length", (uint32_t)m->hp.n_ctx);
    gguf_set_val_u32(g, GGUF_ARCH ".embedding_length", (uint32_t)m->hp.n_embd);
    gguf_set_val_u32(g, GGUF_ARCH ".attention.head_count", (uint32_t)m->hp.n_head);
    gguf_set_val_u32(g, GGUF_ARCH ".block_count", (uint32_t)m->hp.n_layer);
    gguf_set_val_u64(g, GGUF_ARCH ".training.steps", (uint64_t)steps);
    gguf_set_val_f64(g, GGUF_ARCH ".training.val_loss", val_loss);
    struct ggml_tensor *w[3 + 6 * GPT_MAX_LAYERS];
    void *host[3 + 6 * GPT_MAX_LAYERS] = {0};
    const int n = weight_list(m, w);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        host[i] = malloc(ggml_nbytes(w[i]));
        if (!host[i]) {
            ok = ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", path) == GGMLC_OK;
            break;
        }
        ggml_backend_tensor_get(w[i], host[i], 0, ggml_nbytes(w[i]));
        gguf_add_tensor(g, w[i]);
        gguf_set_tensor_data(g, ggml_get_name(w[i]), host[i]);
    }
    if (ok) ok = gguf_write_to_file(g, path, false);
    for (int i = 0; i < n; i++) free(host[i]);
    gguf_free(g);
    return ok;
}

static bool read_u32(const struct gguf_context *g, const char *path, const char *key, int32_t *out) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0 || gguf_get_kv_type(g, id) != GGUF_TYPE_UINT32) {
        ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: not a ggmlc-gpt checkpoint (no %s)", path, key);
        return false;
    }
    const uint32_t v = gguf_get_val_u32(g, id);
    *out = v > 1u << 20 ? -1 : (int32_t)v;
    return true;
}

static bool read_hparams(const struct gguf_context *g, const char *path, struct gpt_hparams *hp) {
    int32_t vocab = 0;
    if (!read_u32(g, path, GGUF_ARCH ".vocab_size", &vocab) ||
        !read_u32(g, path, GGUF_ARCH ".context_length", &hp->n_ctx) ||
        !read_u32(g, path, GGUF_ARCH ".embedding_length", &hp->n_embd) ||
        !read_u32(g, path, GGUF_ARCH ".attention.head_count", &hp->n_head) ||
        !read_u32(g, path, GGUF_ARCH ".block_count", &hp->n_layer))
        return false;
    const char *why = vocab != GPT_VOCAB ? "a vocabulary other than 256 bytes" : gpt_hparams_check(hp);
    if (why) ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: invalid checkpoint: %s", path, why);
    return why == NULL;
}

/* Set w from the F32 values of src (same shape), converted to w's type on the host. */
static bool set_converted(struct ggml_tensor *w, const struct ggml_tensor *src) {
    if (w->type == GGML_TYPE_F32) {
        ggml_backend_tensor_set(w, src->data, 0, ggml_nbytes(w));
        return true;
    }
    void *tmp = malloc(ggml_nbytes(w));
    if (!tmp) return ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory to convert %s", ggml_get_name(w)), false;
    const bool ok = ggml_quantize_chunk(w->type, src->data, tmp, 0, w->ne[1], w->ne[0], NULL) == ggml_nbytes(w);
    if (ok) ggml_backend_tensor_set(w, tmp, 0, ggml_nbytes(w));
    free(tmp);
    return ok;
}

/* Copy each weight from the file's context, checking its name, type and shape. */
static bool copy_weights(struct gpt_model *m, struct ggml_context *file_ctx, const char *path) {
    struct ggml_tensor *w[3 + 6 * GPT_MAX_LAYERS];
    for (int i = 0, n = weight_list(m, w); i < n; i++) {
        struct ggml_tensor *src = ggml_get_tensor(file_ctx, ggml_get_name(w[i]));
        if (!src || src->type != GGML_TYPE_F32 || !ggml_are_same_shape(src, w[i])) {
            ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: tensor %s is missing or of another shape or type",
                            path, ggml_get_name(w[i]));
            return false;
        }
        if (!set_converted(w[i], src)) return false;
    }
    return true;
}

/* NULL when the projections of a model of these hyperparameters can be stored as type, else why not. */
static const char *weight_type_check(const struct gpt_hparams *hp, enum ggml_type type) {
    static char why[160];
    if (type < 0 || type >= GGML_TYPE_COUNT || ggml_blck_size(type) == 0)
        return "not a ggml type";
    if (ggml_quantize_requires_imatrix(type)) {
        snprintf(why, sizeof why, "%s needs an importance matrix", ggml_type_name(type));
        return why;
    }
    if (type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16) return NULL;
    if (!ggml_is_quantized(type) || !ggml_get_type_traits(type)->from_float_ref) {
        snprintf(why, sizeof why, "the model's weights cannot be stored as %s", ggml_type_name(type));
        return why;
    }
    if (hp->n_embd % ggml_blck_size(type) != 0) { /* the rows of every projection are n_embd or 4 n_embd long */
        snprintf(why, sizeof why, "%s stores rows in blocks of %lld values; the width %d is not a multiple",
                 ggml_type_name(type), (long long)ggml_blck_size(type), hp->n_embd);
        return why;
    }
    return NULL;
}

bool gpt_model_load(struct gpt_model *m, const char *path, ggml_backend_t backend) {
    return gpt_model_load_as(m, path, backend, GGML_TYPE_F32);
}

bool gpt_model_load_as(struct gpt_model *m, const char *path, ggml_backend_t backend, enum ggml_type wtype) {
    memset(m, 0, sizeof *m);
    struct ggml_context *file_ctx = NULL;
    struct gguf_init_params params = {false, &file_ctx};
    struct gguf_context *g = gguf_init_from_file(path, params);
    if (!g) {
        if (ggmlc_last_status() == GGMLC_OK) ggmlc_set_error(GGMLC_ERR_IO, "%s: cannot read the checkpoint", path);
        return false;
    }
    struct gpt_hparams hp;
    bool ok = read_hparams(g, path, &hp);
    const char *why = ok ? weight_type_check(&hp, wtype) : NULL;
    if (why) ok = (ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %s", path, why), false);
    ok = ok && model_create(m, &hp, backend, wtype);
    if (ok && !(ok = copy_weights(m, file_ctx, path))) gpt_model_free(m);
    gguf_free(g);
    ggml_free(file_ctx);
    return ok;
}
