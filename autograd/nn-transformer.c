/*
 * nn-transformer.c - attention and Transformer modules of the eager engine, as torch.nn's
 * MultiheadAttention, TransformerEncoderLayer and TransformerDecoderLayer with batch_first=True:
 * the same parameters under the same state_dict names and the same initialisation, so weights
 * move between the two by name.  Attention is ga_scaled_dot_product_attention per head (heads
 * are a batch dimension), its gradient exact by composition.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"
#include "nn-impl.h"

/* ------------------------------------------------------------ attention */

/* MultiheadAttention: tensors in_proj_weight (3E, E), in_proj_bias (3E); child out_proj;
 * i[0] = heads, i[1] = causal when used as a module, f[0] = dropout. */
static ga_tensor *mha_module_forward(ga_module *m, const ga_tensor *x) {
    return ga_multihead_attention(m, x, x, x, NULL, NULL, m->i[1] != 0);
}

static const struct ga_module_ops mha_ops = {"MultiheadAttention", mha_module_forward};

ga_module *ga_multihead_attention_module(ga_device *dev, int64_t embed_dim, int num_heads,
                                         bool bias, float dropout, bool causal) {
    const char *fn = "ga_multihead_attention_module";
    if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "%s: embed_dim %lld is not a positive multiple of num_heads %d", fn,
                               (long long)embed_dim, num_heads),
               NULL;
    if (!(dropout >= 0 && dropout < 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: dropout %g not in [0, 1)", fn, dropout),
               NULL;
    ga_module *m = ggmlc__ga_module_new(&mha_ops);
    if (!m) return NULL;
    m->i[0] = num_heads;
    m->i[1] = causal;
    m->f[0] = dropout;
    /* xavier_uniform over (3E, E) as PyTorch; biases start at zero */
    const double bound = sqrt(6.0 / (double)(embed_dim + 3 * embed_dim));
    ga_tensor *w = ggmlc__ga_uniform_param(dev, GA_SHAPE(3 * embed_dim, embed_dim), bound);
    bool ok = ggmlc__ga_module_add_tensor(m, "in_proj_weight", w, true);
    if (ok && bias)
        ok = ggmlc__ga_module_add_tensor(
            m, "in_proj_bias", ggmlc__ga_uniform_param(dev, GA_SHAPE(3 * embed_dim), 0), true);
    ga_module *out = ok ? ga_linear_module(dev, embed_dim, embed_dim, bias) : NULL;
    ok = out != NULL;
    if (ok && bias) { /* PyTorch zeroes out_proj.bias */
        ggmlc__ga_untracked(1);
        ga_tensor *z = ga_zeros(dev, GA_SHAPE(embed_dim));
        ok = z && ga_assign_(out->tensors[1], z) == GGMLC_OK;
        ga_release(z);
        ggmlc__ga_untracked(-1);
    }
    if (!ok) ga_module_free(out);
    if (ok && ggmlc__ga_module_add_child(m, "out_proj", out) == GGMLC_OK) return m;
    ga_module_free(m);
    return NULL;
}

/* x (B, L, E) projected by the rows [part E, (part + 1) E) of the packed in_proj, split into
 * heads: (B, H, L, E / H). */
static ga_tensor *project_heads(struct ga_tmps *s, ga_module *m, const ga_tensor *x, int part) {
    const int64_t e = ga_size(m->tensors[0], 1), h = m->i[0];
    ga_tensor *w = ggmlc__ga_tmp(s, ga_narrow(m->tensors[0], 0, part * e, e));
    ga_tensor *b =
        m->n_tensors > 1 ? ggmlc__ga_tmp(s, ga_narrow(m->tensors[1], 0, part * e, e)) : NULL;
    ga_tensor *y = w ? ggmlc__ga_tmp(s, ga_linear(x, w, b)) : NULL;
    ga_tensor *split =
        y ? ggmlc__ga_tmp(s, ga_reshape(y, GA_SHAPE(ga_size(x, 0), ga_size(x, 1), h, e / h)))
          : NULL;
    return split ? ggmlc__ga_tmp(s, ga_transpose(split, 1, 2)) : NULL;
}

/* The additive mask: attn_mask (L, S) or (B*?, L, S) plus key_padding_mask (B, S) (nonzero:
 * padding, never attended), broadcast to (B, 1, L, S) or NULL when there is neither. */
static ga_tensor *combined_mask(struct ga_tmps *s, const ga_tensor *attn_mask, const ga_tensor *pad,
                                int64_t batch, int64_t src_len) {
    ga_tensor *mask = (ga_tensor *)attn_mask;
    if (!pad) return mask;
    if (ga_ndim(pad) != 2 || ga_size(pad, 0) != batch || ga_size(pad, 1) != src_len) {
        ggmlc_set_error(GGMLC_ERR_SHAPE,
                        "ga_multihead_attention: key_padding_mask must be "
                        "(batch %lld, source length %lld)",
                        (long long)batch, (long long)src_len);
        return NULL;
    }
    ga_tensor *zero = ggmlc__ga_tmp(s, ga_zeros_like(pad));
    ga_tensor *neg = zero ? ggmlc__ga_tmp(s, ga_masked_fill(zero, pad, -INFINITY)) : NULL;
    ga_tensor *p4 = neg ? ggmlc__ga_tmp(s, ga_reshape(neg, GA_SHAPE(batch, 1, 1, src_len))) : NULL;
    return p4 && mask ? ggmlc__ga_tmp(s, ga_add(p4, mask)) : p4;
}

static bool mha_shapes_ok(const ga_module *m, const ga_tensor *q, const ga_tensor *k,
                          const ga_tensor *v) {
    const int64_t e = ga_size(m->tensors[0], 1);
    const bool ok = ga_ndim(q) == 3 && ga_ndim(k) == 3 && ga_ndim(v) == 3 && ga_size(q, 2) == e &&
                    ga_size(k, 2) == e && ga_size(v, 2) == e && ga_size(k, 0) == ga_size(q, 0) &&
                    ga_size(v, 0) == ga_size(q, 0) && ga_size(k, 1) == ga_size(v, 1);
    if (!ok)
        ggmlc_set_error(GGMLC_ERR_SHAPE,
                        "ga_multihead_attention: query (B, L, %lld), key and value (B, S, %lld)",
                        (long long)e, (long long)e);
    return ok;
}

ga_tensor *ga_multihead_attention(ga_module *m, const ga_tensor *query, const ga_tensor *key,
                                  const ga_tensor *value, const ga_tensor *attn_mask,
                                  const ga_tensor *key_padding_mask, bool is_causal) {
    if (!m || m->ops != &mha_ops)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_multihead_attention: not a MultiheadAttention module"),
               NULL;
    if (!ggmlc__ga_check_pair(query, key, "ga_multihead_attention") ||
        !ggmlc__ga_check_pair(query, value, "ga_multihead_attention") ||
        !mha_shapes_ok(m, query, key, value))
        return NULL;
    const int64_t batch = ga_size(query, 0), len = ga_size(query, 1), e = ga_size(query, 2);
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *q = project_heads(&s, m, query, 0);
    ga_tensor *k = q ? project_heads(&s, m, key, 1) : NULL;
    ga_tensor *v = k ? project_heads(&s, m, value, 2) : NULL;
    ga_tensor *mask =
        v ? combined_mask(&s, attn_mask, key_padding_mask, batch, ga_size(key, 1)) : NULL;
    const bool mask_ok = v && (mask || (!attn_mask && !key_padding_mask));
    const float p = m->training ? m->f[0] : 0.0f;
    ga_tensor *o =
        mask_ok ? ggmlc__ga_tmp(&s, ga_scaled_dot_product_attention(q, k, v, mask, p, is_causal, 0))
                : NULL;
    ga_tensor *merged = o ? ggmlc__ga_tmp(&s, ga_transpose(o, 1, 2)) : NULL;
    ga_tensor *flat =
        merged ? ggmlc__ga_tmp(&s, ga_reshape(merged, GA_SHAPE(batch, len, e))) : NULL;
    return ggmlc__ga_tmp_end(&s, flat ? ga_module_forward(m->children[0], flat) : NULL);
}

/* ---------------------------------------------------------- Transformer */

/* Encoder and decoder layers: children self_attn, [multihead_attn,] linear1, linear2, norm1,
 * norm2[, norm3]; i[0] = norm_first, i[1] = GELU (else ReLU), i[2] = causal self-attention,
 * f[0] = dropout. */
static ga_module *child_module(ga_module *m, const char *name) {
    for (int c = 0; c < m->n_children; c++)
        if (m->child_names[c] && strcmp(m->child_names[c], name) == 0) return m->children[c];
    return NULL;
}

static ga_tensor *drop(struct ga_tmps *s, ga_module *m, ga_tensor *x) {
    return x && m->training && m->f[0] > 0 ? ggmlc__ga_tmp(s, ga_dropout(x, m->f[0], true)) : x;
}

/* linear2(dropout(activation(linear1(x)))), then dropout */
static ga_tensor *feed_forward(struct ga_tmps *s, ga_module *m, ga_tensor *x) {
    ga_tensor *h = ggmlc__ga_tmp(s, ga_module_forward(child_module(m, "linear1"), x));
    h = h ? ggmlc__ga_tmp(s, m->i[1] ? ga_gelu(h) : ga_relu(h)) : NULL;
    h = drop(s, m, h);
    h = h ? ggmlc__ga_tmp(s, ga_module_forward(child_module(m, "linear2"), h)) : NULL;
    return drop(s, m, h);
}

static ga_tensor *attend(struct ga_tmps *s, ga_module *m, const char *which, ga_tensor *x,
                         ga_tensor *mem, bool causal) {
    ga_module *a = child_module(m, which);
    ga_tensor *kv = mem ? mem : x;
    return x ? drop(s, m,
                    ggmlc__ga_tmp(s, ga_multihead_attention(a, x, kv, kv, NULL, NULL, causal)))
             : NULL;
}

static ga_tensor *norm(struct ga_tmps *s, ga_module *m, const char *which, ga_tensor *x) {
    return x ? ggmlc__ga_tmp(s, ga_module_forward(child_module(m, which), x)) : NULL;
}

static ga_tensor *residual(struct ga_tmps *s, ga_tensor *x, ga_tensor *y) {
    return x && y ? ggmlc__ga_tmp(s, ga_add(x, y)) : NULL;
}

/* One sublayer: pre-norm x + f(norm(x)) or post-norm norm(x + f(x)); f is 0 self-attention,
 * 1 cross-attention over mem, 2 feed-forward. */
static ga_tensor *sublayer(struct ga_tmps *s, ga_module *m, ga_tensor *x, ga_tensor *mem, int f,
                           const char *norm_name) {
    const bool pre = m->i[0] != 0;
    ga_tensor *in = pre ? norm(s, m, norm_name, x) : x;
    ga_tensor *y = f == 0   ? attend(s, m, "self_attn", in, NULL, m->i[2] != 0)
                   : f == 1 ? attend(s, m, "multihead_attn", in, mem, false)
                            : (in ? feed_forward(s, m, in) : NULL);
    ga_tensor *sum = residual(s, x, y);
    return pre ? sum : norm(s, m, norm_name, sum);
}

static ga_tensor *encoder_forward(ga_module *m, const ga_tensor *x) {
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *h = sublayer(&s, m, (ga_tensor *)x, NULL, 0, "norm1");
    h = sublayer(&s, m, h, NULL, 2, "norm2");
    return ggmlc__ga_tmp_end(&s, h ? ga_retain(h) : NULL);
}

static ga_tensor *decoder_alone(ga_module *m, const ga_tensor *x) {
    (void)m, (void)x;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "a TransformerDecoderLayer needs the encoder's "
                                           "output: call ga_transformer_decoder_forward");
    return NULL;
}

static const struct ga_module_ops encoder_ops = {"TransformerEncoderLayer", encoder_forward};
static const struct ga_module_ops decoder_ops = {"TransformerDecoderLayer", decoder_alone};

/* The layer's children in PyTorch's order; false (m freed by the caller) on failure. */
static bool build_layer(ga_module *m, ga_device *dev, int64_t d, int heads, int64_t ff,
                        bool decoder) {
    bool ok = ggmlc__ga_module_add_child(
                  m, "self_attn",
                  ga_multihead_attention_module(dev, d, heads, true, m->f[0], false)) == GGMLC_OK;
    if (ok && decoder)
        ok = ggmlc__ga_module_add_child(
                 m, "multihead_attn",
                 ga_multihead_attention_module(dev, d, heads, true, m->f[0], false)) == GGMLC_OK;
    ok = ok &&
         ggmlc__ga_module_add_child(m, "linear1", ga_linear_module(dev, d, ff, true)) == GGMLC_OK;
    ok = ok &&
         ggmlc__ga_module_add_child(m, "linear2", ga_linear_module(dev, ff, d, true)) == GGMLC_OK;
    static const char *norms[] = {"norm1", "norm2", "norm3"};
    for (int k = 0; k < (decoder ? 3 : 2) && ok; k++)
        ok = ggmlc__ga_module_add_child(m, norms[k], ga_layer_norm_module(dev, d, 1e-5f)) ==
             GGMLC_OK;
    return ok;
}

static ga_module *transformer_layer(const struct ga_module_ops *ops, ga_device *dev,
                                    int64_t d_model, int nhead, int64_t dim_ff, float dropout,
                                    bool gelu, bool norm_first, bool causal, const char *fn) {
    if (dim_ff < 1 || d_model < 1 || nhead < 1 || d_model % nhead != 0 ||
        !(dropout >= 0 && dropout < 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "%s: need d_model a positive multiple of nhead, dim_feedforward >= "
                               "1 and dropout in [0, 1)",
                               fn),
               NULL;
    ga_module *m = ggmlc__ga_module_new(ops);
    if (!m) return NULL;
    m->i[0] = norm_first;
    m->i[1] = gelu;
    m->i[2] = causal;
    m->f[0] = dropout;
    if (build_layer(m, dev, d_model, nhead, dim_ff, ops == &decoder_ops)) return m;
    ga_module_free(m);
    return NULL;
}

ga_module *ga_transformer_encoder_layer_module(ga_device *dev, int64_t d_model, int nhead,
                                               int64_t dim_ff, float dropout, bool gelu,
                                               bool norm_first, bool causal) {
    return transformer_layer(&encoder_ops, dev, d_model, nhead, dim_ff, dropout, gelu, norm_first,
                             causal, "ga_transformer_encoder_layer_module");
}

ga_module *ga_transformer_decoder_layer_module(ga_device *dev, int64_t d_model, int nhead,
                                               int64_t dim_ff, float dropout, bool gelu,
                                               bool norm_first) {
    return transformer_layer(&decoder_ops, dev, d_model, nhead, dim_ff, dropout, gelu, norm_first,
                             true, "ga_transformer_decoder_layer_module");
}

ga_tensor *ga_transformer_decoder_forward(ga_module *m, const ga_tensor *tgt,
                                          const ga_tensor *memory) {
    if (!m || m->ops != &decoder_ops)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_transformer_decoder_forward: not a TransformerDecoderLayer"),
               NULL;
    if (!ggmlc__ga_check_pair(tgt, memory, "ga_transformer_decoder_forward")) return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *h = sublayer(&s, m, (ga_tensor *)tgt, NULL, 0, "norm1");
    h = h ? sublayer(&s, m, h, (ga_tensor *)memory, 1, "norm2") : NULL;
    h = h ? sublayer(&s, m, h, NULL, 2, "norm3") : NULL;
    return ggmlc__ga_tmp_end(&s, h ? ga_retain(h) : NULL);
}
