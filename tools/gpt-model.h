/*
 * gpt-model.h - the byte-level GPT of ggmlc-gpt, built directly on ggml's graph API: token
 * embedding, n_layer pre-norm blocks (RMSNorm, causal multi-head self-attention with rotary
 * positions, RMSNorm, GELU MLP of 4 x n_embd), a final RMSNorm and an output projection to the
 * 256 byte values.  No biases.  The same weights serve the training graph (a batch of whole
 * sequences) and the generation graph (new tokens appended to a key/value cache).
 */
#ifndef GGMLC_GPT_MODEL_H
#define GGMLC_GPT_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "ggml-backend.h"
#include "ggml.h"

#define GPT_VOCAB 256   /* one token per byte */
#define GPT_MAX_LAYERS 64

struct gpt_hparams {
    int32_t n_ctx;   /* longest sequence (training context and generation window) */
    int32_t n_embd;  /* width; a multiple of n_head with an even head size */
    int32_t n_head;
    int32_t n_layer;
};

struct gpt_layer {
    struct ggml_tensor *attn_norm, *wqkv, *wo; /* wqkv: [n_embd, 3 n_embd] (q, k, v rows) */
    struct ggml_tensor *mlp_norm, *w_up, *w_down;
};

struct gpt_model {
    struct gpt_hparams hp;
    struct ggml_context *ctx;          /* the weights' metadata */
    ggml_backend_buffer_t buffer;      /* the weights' memory, on the model's backend */
    ggml_backend_buffer_t product_buffer; /* converted projections in the device's product
                                             layout (gpt_model_load_as), or NULL */
    struct ggml_tensor *tok_embd;      /* [n_embd, 256] */
    struct gpt_layer layers[GPT_MAX_LAYERS];
    struct ggml_tensor *out_norm, *out; /* out: [n_embd, 256] */
    struct ggml_tensor *train_pos;     /* I32 [n_ctx]: 0, 1, ... for the training graph */
    struct ggml_tensor *train_mask;    /* F32 [n_ctx, n_ctx]: 0, or -inf where a key follows the query */
};

/* NULL when the shape is valid, else a sentence saying what is wrong. */
const char *gpt_hparams_check(const struct gpt_hparams *hp);

/* Create the weights on backend's default buffer type; with init, fill them from seed (normal
 * 0.02, the residual projections scaled by 1/sqrt(2 n_layer), norms 1).  False with
 * ggmlc_last_error set on failure (the model is then freed). */
bool gpt_model_create(struct gpt_model *m, const struct gpt_hparams *hp, ggml_backend_t backend,
                      bool init, uint64_t seed);
void gpt_model_free(struct gpt_model *m);
/* Number of weights and their bytes (what one generated token reads). */
int64_t gpt_model_n_params(const struct gpt_model *m);
size_t gpt_model_bytes(const struct gpt_model *m);

/* Logits [256, T, B] of tokens (I32 [T, B], T <= n_ctx) with causal attention from position
 * 0; every weight is marked as a parameter when train is true. */
struct ggml_tensor *gpt_forward_train(struct ggml_context *ctx, struct gpt_model *m,
                                      struct ggml_tensor *tokens, bool train);

/* The key/value cache of generation: per layer K and V [n_embd, n_ctx] (a row per position), of
 * gpt_cache_type, on the model's backend. */
struct gpt_cache {
    struct ggml_context *ctx;
    ggml_backend_buffer_t buffer;
    struct ggml_tensor *k[GPT_MAX_LAYERS], *v[GPT_MAX_LAYERS];
    int32_t n_past; /* positions filled */
};
bool gpt_cache_create(struct gpt_cache *c, const struct gpt_model *m, ggml_backend_t backend);
/* The cache's element type: F32 for a model of F32 weights (as trained: its cached logits equal
 * a full recomputation's to rounding), F16 for converted ones (generation only): attention reads
 * the cache every token, and in F32 the filled cache of a 100M model (12 layers, width 768) at 256
 * positions is 18.9 MB beside 48.7 MB of Q4_0 weights. */
enum ggml_type gpt_cache_type(const struct gpt_model *m);
void gpt_cache_free(struct gpt_cache *c);

/* The inputs of a generation graph of n new tokens: the tokens and their positions (I32 [n]),
 * the cache rows their keys and values go to (I64 [n]) and the attention mask ([n_kv, n] of
 * gpt_cache_type: 0 where token i may look at position j, -inf elsewhere). */
struct gpt_step_inputs {
    struct ggml_tensor *tokens, *pos, *rows, *mask;
};

/* Graph writing n new tokens into the cache and attending over its first n_kv positions (the
 * mask hides those not filled yet and the future), so its shape depends on the position only
 * through n_kv: one graph serves every step until the filled positions outgrow n_kv.  Returns
 * the logits [256, n] (the last column only when last_only). */
struct ggml_tensor *gpt_forward_cached(struct ggml_context *ctx, struct gpt_model *m,
                                       struct gpt_cache *c, int n, int32_t n_kv, bool last_only,
                                       struct gpt_step_inputs *in);

/* The cache positions a graph attends over once n_filled are filled: n_filled rounded up to
 * GPT_CACHE_SPAN_STEP (so a step graph is rebuilt every that many bytes), at most n_ctx.
 * Attending over the filled part only, rather than all n_ctx positions, saves reading (and
 * multiplying) the rest of the cache every step. */
#define GPT_CACHE_SPAN_STEP 32
int32_t gpt_cache_span(int32_t n_filled, int32_t n_ctx);

/* Host values of the inputs of n tokens appended after n_past, attending over n_kv positions:
 * pos and rows (n entries each) and mask (n_kv x n). */
void gpt_step_values(int32_t n_past, int n, int32_t n_kv, int32_t *pos, int64_t *rows, float *mask);

/* Save the hyperparameters and weights to a GGUF file (atomic replace); load them back onto
 * backend.  False with ggmlc_last_error set. */
bool gpt_model_save(const struct gpt_model *m, const char *path, int64_t steps, double val_loss);
bool gpt_model_load(struct gpt_model *m, const char *path, ggml_backend_t backend);
/* Load with the projection weights (attention, MLP, output) stored as wtype: F32 as trained, or
 * F16, BF16, Q8_0, Q4_0, Q4_K, ... converted on the host (a quantized type's block must divide
 * the width; types that need an importance matrix are refused).  The embedding and the norms
 * stay F32.  For generation; such a model is not trained further. */
bool gpt_model_load_as(struct gpt_model *m, const char *path, ggml_backend_t backend, enum ggml_type wtype);

#endif
