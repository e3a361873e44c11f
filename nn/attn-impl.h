/*
 * attn-impl.h - what the attention layer (layers-attn.c) lends the
 * Transformer and Stable-Diffusion blocks (layers-transformer.c): linear
 * projections and norms named by prefix, and multi-head attention.
 */
#ifndef GGMLC_NN_ATTN_IMPL_H
#define GGMLC_NN_ATTN_IMPL_H

#include "nn-impl.h"

/* The heads of one attention: n_head query heads of width head_dim over n_kv_head key/value heads. */
struct attn_heads {
    int64_t n_head, n_kv_head, head_dim;
    unsigned flags; /* NN_ATTN_CAUSAL, NN_ATTN_FUSED, NN_ATTN_BIAS, NN_ATTN_ROPE */
    float max_bias, rope_base;
    bool out_bias; /* the output projection's (NN_ATTN_BIAS, unless a block says otherwise) */
};

/* The heads a layer's settings describe, for an attention of model width d. */
GGMLC_HIDDEN struct attn_heads ggmlc__nn_attn_heads(const ggmlc_layer *l, int64_t d);
/* Declare "<prefix>_kernel" (PyTorch Linear layout (out, in)) and, with bias, "<prefix>_bias". */
GGMLC_HIDDEN void ggmlc__nn_declare_linear(ggmlc_layer *l, const char *prefix, int64_t in,
                                           int64_t out, bool bias);
/* x [in, ...] through the linear map named prefix: [out, ...]. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__nn_linear(ggmlc_layer *l, struct nn_build *b,
                                                  const char *prefix, struct ggml_tensor *x);
/* Declare "<prefix>_gamma" (and "<prefix>_beta" unless rms) of width f. */
GGMLC_HIDDEN void ggmlc__nn_declare_norm(ggmlc_layer *l, const char *prefix, int64_t f, bool rms);
/* Layer or RMS norm over the first dimension, with the prefix's scale (and shift). */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__nn_norm(ggmlc_layer *l, struct nn_build *b,
                                                const char *prefix, struct ggml_tensor *x, bool rms,
                                                float eps);
/* Declare the projections of an attention named prefix: queries from width d, keys and values
 * from width d_src (0 for self-attention: from d), output back to d. */
GGMLC_HIDDEN void ggmlc__nn_declare_attention(ggmlc_layer *l, const char *prefix,
                                              const struct attn_heads *h, int64_t d, int64_t d_src);
/* The attention named prefix of x [d, T, B] to src [d_src, S, B] (NULL: self-attention), with an
 * optional key padding mask pad [S, B] (1 keep, 0 pad): [d, T, B].  Attention dropout at the
 * layer's rate in training. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__nn_attention(ggmlc_layer *l, struct nn_build *b,
                                                     const char *prefix, const struct attn_heads *h,
                                                     struct ggml_tensor *x, struct ggml_tensor *src,
                                                     struct ggml_tensor *pad);
/* Attention options checked and stored in c (heads, flags, ALiBi, rope, dropout rate); false
 * with the error set, naming func, when out of range. */
GGMLC_HIDDEN bool ggmlc__nn_attention_settings(const char *func,
                                               const struct ggmlc_attention_options *o,
                                               struct layer_cfg *c);
/* x times a fresh dropout mask at the layer's rate in training; x otherwise. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__nn_dropout(ggmlc_layer *l, struct nn_build *b,
                                                   struct ggml_tensor *x);

#endif /* GGMLC_NN_ATTN_IMPL_H */
