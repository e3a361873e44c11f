/*
 * decode-graph.c - what one new decode graph costs, the way llama.cpp's token loop pays it.
 *
 *   decode-graph [--layers 4] [--embd 256] [--heads 4] [--kv-heads 2] [--ff 688] [--vocab 1024]
 *                [--ctx 256] [--type f32|f16|q8_0|q4_0] [--threads 1] [--tokens 200]
 *                [--backend NAME] [--batch 1]
 *
 * A tiny llama-layout model with random weights decodes --tokens tokens greedily at batch 1.
 * With --batch B > 1 every graph is instead a prompt of B tokens at positions 0..B-1 (as
 * llama-bench's pp runs: the cache rows rewritten each time, a causal mask of B rows, logits of
 * the last token only), whose argmax starts the next prompt: --tokens counts prompts then.
 * Every token builds a fresh graph (get_rows, rms_norm, mul_mat, rope, set_rows into an F16
 * KV cache, flash_attn_ext over its views, swiglu, add) in a context on reused memory and runs
 * it through ggml_backend_sched: reset, alloc_graph, set the inputs, graph_compute, read the
 * logits, as llama.cpp does.  Printed: medians per graph of build (ggml_init and the graph),
 * alloc (reset and alloc_graph), compute (inputs, compute, logits) and their sum, in
 * wall-clock time and in the process's CPU time (all threads, spinning included), and a
 * checksum of the greedy tokens so that two libraries' runs can be checked to agree.
 * --backend names a device (ggml_backend_dev_by_name: "Vulkan0", "CPU"): the weights and the
 * KV cache live there, the token embeddings in host memory, and the scheduler gets that
 * backend and the CPU, which takes the inputs and the embeddings' get_rows, as llama.cpp does.
 * Only ggml's public API is used: the same source builds against ggml.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode-graph.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

enum { DG_MAX_LAYERS = 64, DG_WARMUP = 5 };

struct dg_options {
    int layers, embd, heads, kv_heads, ff, vocab, ctx, threads, tokens, batch;
    enum ggml_type type;
    const char *backend; /* device name, NULL: the CPU */
};

struct dg_layer {
    struct ggml_tensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
    struct ggml_tensor *k_cache, *v_cache; /* F16 [head_dim * kv_heads, ctx] */
};

struct dg_model {
    struct dg_options opt;
    struct ggml_context *ctx, *host_ctx; /* host_ctx: the token embeddings beside a device */
    ggml_backend_buffer_t buffer, host_buffer;
    struct ggml_tensor *tok_embd, *out_norm, *output;
    struct dg_layer layers[DG_MAX_LAYERS];
};

/* The inputs of one graph, set after it is allocated. */
struct dg_inputs {
    struct ggml_tensor *tokens, *pos, *kv_index, *mask, *logits;
};

static double dg_seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall-clock, process CPU time (every thread's) and the calling thread's CPU time: on a
 * loaded machine the wall-clock times include waiting for a core, the CPU times do not; the
 * thread's time is the host work the caller pays, without the threads of a driver (lavapipe's
 * execution, a CPU backend's workers). */
struct dg_clock {
    double wall, cpu, thread;
};
enum { DG_CLOCKS = 3, DG_PHASES = 3, DG_SLOTS = DG_CLOCKS * DG_PHASES };

/* The compute phase's parts, wall-clock: the inputs set, graph_compute_async, synchronize and
 * the logits read; they follow the DG_SLOTS times of a token. */
enum { DG_PARTS = 4, DG_ALL_SLOTS = DG_SLOTS + DG_PARTS };

static struct dg_clock dg_now(void) {
    return (struct dg_clock){dg_seconds(CLOCK_MONOTONIC), dg_seconds(CLOCK_PROCESS_CPUTIME_ID),
                             dg_seconds(CLOCK_THREAD_CPUTIME_ID)};
}

/* Phase's time between a and b on each clock: times[clock * DG_PHASES + phase]. */
static void dg_elapsed(struct dg_clock a, struct dg_clock b, double times[DG_SLOTS], int phase) {
    times[phase] = b.wall - a.wall;
    times[DG_PHASES + phase] = b.cpu - a.cpu;
    times[2 * DG_PHASES + phase] = b.thread - a.thread;
}

/* ------------------------------------------------------------ options */

static void dg_usage(void) {
    fputs("usage: decode-graph [--layers 4] [--embd 256] [--heads 4] [--kv-heads 2] [--ff 688]\n"
          "       [--vocab 1024] [--ctx 256] [--type f32|f16|q8_0|q4_0] [--threads 1]\n"
          "       [--tokens 200] [--backend NAME] [--batch 1]\n",
          stderr);
}

static bool dg_parse_type(const char *s, enum ggml_type *t) {
    const enum ggml_type types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (strcmp(s, ggml_type_name(types[i])) == 0) {
            *t = types[i];
            return true;
        }
    }
    return false;
}

static int *dg_int_option(struct dg_options *o, const char *name) {
    struct {
        const char *name;
        int *value;
    } table[] = {
        {"--layers", &o->layers},     {"--embd", &o->embd},       {"--heads", &o->heads},
        {"--kv-heads", &o->kv_heads}, {"--ff", &o->ff},           {"--vocab", &o->vocab},
        {"--ctx", &o->ctx},           {"--threads", &o->threads}, {"--tokens", &o->tokens},
        {"--batch", &o->batch},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) return table[i].value;
    return NULL;
}

/* Shapes the model can have: heads divide the width into even head sizes, kv heads divide
 * heads, block types divide their rows. */
static bool dg_valid(const struct dg_options *o) {
    const int64_t blck = ggml_blck_size(o->type);
    return o->layers >= 1 && o->layers <= DG_MAX_LAYERS && o->heads >= 1 && o->kv_heads >= 1 &&
           o->embd >= 2 && o->embd <= 65536 && o->embd % (2 * o->heads) == 0 &&
           o->heads % o->kv_heads == 0 && o->ff >= 1 && o->ff <= 262144 && o->vocab >= 2 &&
           o->vocab <= 1 << 20 && o->ctx >= 1 && o->ctx <= 1 << 16 && o->threads >= 1 &&
           o->threads <= 512 && o->tokens >= 1 && o->embd % blck == 0 && o->ff % blck == 0 &&
           o->batch >= 1 && o->batch <= o->ctx;
}

static bool dg_parse(int argc, char **argv, struct dg_options *o) {
    *o = (struct dg_options){4, 256, 4, 2, 688, 1024, 256, 1, 200, 1, GGML_TYPE_F32, NULL};
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return false;
        const char *name = argv[i], *value = argv[++i];
        int *field = dg_int_option(o, name);
        if (field) {
            char *end;
            const long v = strtol(value, &end, 10);
            if (*end || end == value || v < 0 || v > 1 << 30) return false;
            *field = (int)v;
        } else if (strcmp(name, "--backend") == 0) {
            o->backend = value;
        } else if (strcmp(name, "--type") != 0 || !dg_parse_type(value, &o->type)) {
            return false;
        }
    }
    return dg_valid(o);
}

/* ------------------------------------------------------------- weights */

/* Deterministic uniform values in [-scale, scale): the same weights on every library. */
static void dg_fill(float *x, int64_t n, uint64_t *state, float scale) {
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = scale * ((float)(*state >> 40) / (float)(1 << 24) * 2.0f - 1.0f);
    }
}

/* Fill t (any of the supported types) with random values of ~unit output variance per row. */
static bool dg_set_random(struct ggml_tensor *t, uint64_t *state) {
    const int64_t n = ggml_nelements(t), row = t->ne[0];
    float *values = malloc((size_t)n * sizeof *values);
    void *data = malloc(ggml_nbytes(t));
    if (!values || !data) {
        free(values);
        free(data);
        return false;
    }
    dg_fill(values, n, state, 1.7f / sqrtf((float)row));
    if (t->type == GGML_TYPE_F32)
        memcpy(data, values, ggml_nbytes(t));
    else
        ggml_quantize_chunk(t->type, values, data, 0, n / row, row, NULL);
    ggml_backend_tensor_set(t, data, 0, ggml_nbytes(t));
    free(values);
    free(data);
    return true;
}

static void dg_set_ones(struct ggml_tensor *t) {
    const int64_t n = ggml_nelements(t);
    float *ones = malloc((size_t)n * sizeof *ones);
    if (!ones) return;
    for (int64_t i = 0; i < n; i++) ones[i] = 1.0f;
    ggml_backend_tensor_set(t, ones, 0, (size_t)n * sizeof *ones);
    free(ones);
}

static void dg_new_layer(struct dg_model *m, struct dg_layer *l) {
    const struct dg_options *o = &m->opt;
    const int head_dim = o->embd / o->heads, kv_width = head_dim * o->kv_heads;
    l->attn_norm = ggml_new_tensor_1d(m->ctx, GGML_TYPE_F32, o->embd);
    l->ffn_norm = ggml_new_tensor_1d(m->ctx, GGML_TYPE_F32, o->embd);
    l->wq = ggml_new_tensor_2d(m->ctx, o->type, o->embd, o->embd);
    l->wk = ggml_new_tensor_2d(m->ctx, o->type, o->embd, kv_width);
    l->wv = ggml_new_tensor_2d(m->ctx, o->type, o->embd, kv_width);
    l->wo = ggml_new_tensor_2d(m->ctx, o->type, o->embd, o->embd);
    l->gate = ggml_new_tensor_2d(m->ctx, o->type, o->embd, o->ff);
    l->up = ggml_new_tensor_2d(m->ctx, o->type, o->embd, o->ff);
    l->down = ggml_new_tensor_2d(m->ctx, o->type, o->ff, o->embd);
    l->k_cache = ggml_new_tensor_2d(m->ctx, GGML_TYPE_F16, kv_width, o->ctx);
    l->v_cache = ggml_new_tensor_2d(m->ctx, GGML_TYPE_F16, kv_width, o->ctx);
}

static bool dg_is_cache(const struct dg_model *m, const struct ggml_tensor *t) {
    for (int i = 0; i < m->opt.layers; i++)
        if (t == m->layers[i].k_cache || t == m->layers[i].v_cache) return true;
    return false;
}

static bool dg_fill_model(struct dg_model *m) {
    uint64_t state = 42;
    ggml_backend_buffer_clear(m->buffer, 0); /* the KV cache starts at zero */
    if (!dg_set_random(m->tok_embd, &state)) return false; /* first, wherever it lives */
    for (struct ggml_tensor *t = ggml_get_first_tensor(m->ctx); t;
         t = ggml_get_next_tensor(m->ctx, t)) {
        if (t == m->tok_embd || dg_is_cache(m, t)) continue;
        if (ggml_n_dims(t) == 1)
            dg_set_ones(t);
        else if (!dg_set_random(t, &state))
            return false;
    }
    return true;
}

/* Weights on backend's buffer, the token embeddings on host's where it is given (beside a
 * device, as llama.cpp places them); false with a message when they cannot be made. */
static bool dg_load_model(struct dg_model *m, ggml_backend_t backend, ggml_backend_t host) {
    const struct dg_options *o = &m->opt;
    const size_t n_tensors = 3 + 11 * (size_t)o->layers;
    m->ctx = ggml_init((struct ggml_init_params){n_tensors * ggml_tensor_overhead(), NULL, true});
    m->host_ctx = host ? ggml_init((struct ggml_init_params){ggml_tensor_overhead(), NULL, true}) : NULL;
    if (!m->ctx || (host && !m->host_ctx)) return false;
    m->tok_embd = ggml_new_tensor_2d(host ? m->host_ctx : m->ctx, GGML_TYPE_F32, o->embd, o->vocab);
    m->out_norm = ggml_new_tensor_1d(m->ctx, GGML_TYPE_F32, o->embd);
    m->output = ggml_new_tensor_2d(m->ctx, o->type, o->embd, o->vocab);
    for (int i = 0; i < o->layers; i++) dg_new_layer(m, &m->layers[i]);
    m->buffer = ggml_backend_alloc_ctx_tensors(m->ctx, backend);
    m->host_buffer = host ? ggml_backend_alloc_ctx_tensors(m->host_ctx, host) : NULL;
    /* marked as weights, as llama.cpp marks its model's buffers: nodes reading them run where
     * they are (the embeddings' get_rows on the CPU), not on a copy */
    if (m->buffer) ggml_backend_buffer_set_usage(m->buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    if (m->host_buffer) ggml_backend_buffer_set_usage(m->host_buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    if (!m->buffer || (host && !m->host_buffer) || !dg_fill_model(m)) {
        fprintf(stderr, "decode-graph: cannot allocate or fill the weights\n");
        return false;
    }
    return true;
}

/* --------------------------------------------------------------- graph */

static struct ggml_tensor *dg_norm(struct ggml_context *ctx, struct ggml_tensor *x,
                                   struct ggml_tensor *w) {
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), w);
}

static struct ggml_tensor *dg_rope(struct ggml_context *ctx, struct ggml_tensor *x,
                                   struct ggml_tensor *pos, int head_dim) {
    return ggml_rope_ext(ctx, x, pos, NULL, head_dim, 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f,
                         1.0f);
}

/* The layer's K or V for the cache rows 0..ctx-1 as [head_dim, ctx, kv_heads]. */
static struct ggml_tensor *dg_cache_view(struct ggml_context *ctx, struct ggml_tensor *cache,
                                         int head_dim, int kv_heads) {
    struct ggml_tensor *v = ggml_view_3d(ctx, cache, head_dim, kv_heads, cache->ne[1],
                                         ggml_row_size(cache->type, head_dim), cache->nb[1], 0);
    return ggml_permute(ctx, v, 0, 2, 1, 3);
}

static struct ggml_tensor *dg_attention(struct ggml_context *ctx, struct ggml_cgraph *gf,
                                        const struct dg_model *m, const struct dg_layer *l,
                                        struct ggml_tensor *cur, const struct dg_inputs *in) {
    const struct dg_options *o = &m->opt;
    const int head_dim = o->embd / o->heads, nb = o->batch;
    struct ggml_tensor *q =
        ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l->wq, cur), head_dim, o->heads, nb);
    struct ggml_tensor *k =
        ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l->wk, cur), head_dim, o->kv_heads, nb);
    struct ggml_tensor *v = ggml_mul_mat(ctx, l->wv, cur);
    q = dg_rope(ctx, q, in->pos, head_dim);
    k = dg_rope(ctx, k, in->pos, head_dim);
    /* store the new K and V rows first: the attention below reads the cache */
    ggml_build_forward_expand(gf, ggml_set_rows(ctx, l->k_cache,
                                                ggml_reshape_2d(ctx, k, head_dim * o->kv_heads, nb),
                                                in->kv_index));
    ggml_build_forward_expand(gf, ggml_set_rows(ctx, l->v_cache, v, in->kv_index));
    struct ggml_tensor *kc = dg_cache_view(ctx, l->k_cache, head_dim, o->kv_heads);
    struct ggml_tensor *vc = dg_cache_view(ctx, l->v_cache, head_dim, o->kv_heads);
    q = ggml_permute(ctx, q, 0, 2, 1, 3);
    struct ggml_tensor *a =
        ggml_flash_attn_ext(ctx, q, kc, vc, in->mask, 1.0f / sqrtf((float)head_dim), 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(a, GGML_PREC_F32);
    return ggml_mul_mat(ctx, l->wo, ggml_reshape_2d(ctx, a, o->embd, nb));
}

static struct ggml_tensor *dg_ffn(struct ggml_context *ctx, const struct dg_layer *l,
                                  struct ggml_tensor *cur) {
    struct ggml_tensor *g = ggml_mul_mat(ctx, l->gate, cur), *u = ggml_mul_mat(ctx, l->up, cur);
    return ggml_mul_mat(ctx, l->down, ggml_swiglu_split(ctx, g, u));
}

static struct ggml_tensor *dg_input(struct ggml_context *ctx, enum ggml_type type, int64_t ne0,
                                    int64_t ne1) {
    struct ggml_tensor *t = ggml_new_tensor_2d(ctx, type, ne0, ne1);
    ggml_set_input(t);
    return t;
}

/* Rows of the mask of a graph of batch tokens: one for a token, else padded to GGML_KQ_MASK_PAD
 * where ggml.h defines it (ggml of 2025 asked for that padding; ggml of late 2026 dropped it). */
#ifdef GGML_KQ_MASK_PAD
#define DG_MASK_PAD GGML_KQ_MASK_PAD
#else
#define DG_MASK_PAD 1
#endif
static int dg_mask_rows(int batch) { return batch == 1 ? 1 : GGML_PAD(batch, DG_MASK_PAD); }

/* One graph (a token, or a prompt of --batch tokens) in ctx; in receives its inputs and
 * output: the logits of its last token. */
static struct ggml_cgraph *dg_build(struct ggml_context *ctx, const struct dg_model *m,
                                    int max_nodes, struct dg_inputs *in) {
    const int nb = m->opt.batch;
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, max_nodes, false);
    in->tokens = dg_input(ctx, GGML_TYPE_I32, nb, 1);
    in->pos = dg_input(ctx, GGML_TYPE_I32, nb, 1);
    in->kv_index = dg_input(ctx, GGML_TYPE_I64, nb, 1);
    in->mask = dg_input(ctx, GGML_TYPE_F16, m->opt.ctx, dg_mask_rows(nb));
    struct ggml_tensor *x = ggml_get_rows(ctx, m->tok_embd, in->tokens);
    for (int i = 0; i < m->opt.layers; i++) {
        const struct dg_layer *l = &m->layers[i];
        x = ggml_add(ctx, x, dg_attention(ctx, gf, m, l, dg_norm(ctx, x, l->attn_norm), in));
        x = ggml_add(ctx, x, dg_ffn(ctx, l, dg_norm(ctx, x, l->ffn_norm)));
    }
    if (nb > 1) x = ggml_view_2d(ctx, x, x->ne[0], 1, x->nb[1], (size_t)(nb - 1) * x->nb[1]);
    in->logits = ggml_mul_mat(ctx, m->output, dg_norm(ctx, x, m->out_norm));
    ggml_set_output(in->logits);
    ggml_build_forward_expand(gf, in->logits);
    return gf;
}

/* ---------------------------------------------------------------- run */

struct dg_run {
    struct dg_model *model;
    ggml_backend_sched_t sched;
    void *meta; /* the graph contexts' memory, reused each token as llama.cpp does */
    size_t meta_size;
    int max_nodes, n_nodes;
    float *logits;
    ggml_fp16_t *mask;
    int32_t *ids;    /* a graph's tokens, then their positions: 2 * batch */
    int64_t *rows;   /* their cache rows */
};

/* The inputs of a graph of batch tokens from pos on, the first one token, the others made up
 * from it; the mask is causal, its padding rows all -inf. */
static void dg_set_inputs(struct dg_run *r, const struct dg_inputs *in, int32_t token,
                          int32_t pos) {
    const int n_ctx = r->model->opt.ctx, nb = r->model->opt.batch;
    float *mask = r->logits; /* scratch: dg_open makes it at least ctx floats */
    for (int i = 0; i < dg_mask_rows(nb); i++) {
        for (int j = 0; j < n_ctx; j++) mask[j] = i < nb && j <= pos + i ? 0.0f : -INFINITY;
        ggml_fp32_to_fp16_row(mask, r->mask + (size_t)i * n_ctx, n_ctx);
    }
    for (int i = 0; i < nb; i++) {
        r->ids[i] = (int32_t)((token + 7 * (int64_t)i) % r->model->opt.vocab);
        r->ids[nb + i] = pos + i;
        r->rows[i] = pos + i;
    }
    ggml_backend_tensor_set(in->tokens, r->ids, 0, (size_t)nb * sizeof *r->ids);
    ggml_backend_tensor_set(in->pos, r->ids + nb, 0, (size_t)nb * sizeof *r->ids);
    ggml_backend_tensor_set(in->kv_index, r->rows, 0, (size_t)nb * sizeof *r->rows);
    ggml_backend_tensor_set(in->mask, r->mask, 0, ggml_nbytes(in->mask));
}

static int32_t dg_argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* One token through a new graph: times[0..2] get build, alloc and compute wall-clock seconds,
 * times[3..5] their CPU seconds, times[6..8] the thread's; returns the next token, or -1 on
 * failure. */
static int32_t dg_step(struct dg_run *r, int32_t token, int32_t pos, double times[DG_ALL_SLOTS]) {
    const struct dg_clock t0 = dg_now();
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){r->meta_size, r->meta, true});
    struct dg_inputs in;
    struct ggml_cgraph *gf = ctx ? dg_build(ctx, r->model, r->max_nodes, &in) : NULL;
    const struct dg_clock t1 = dg_now();
    ggml_backend_sched_reset(r->sched);
    const bool allocated = gf && ggml_backend_sched_alloc_graph(r->sched, gf);
    const struct dg_clock t2 = dg_now();
    enum ggml_status st = GGML_STATUS_ALLOC_FAILED;
    double part[DG_PARTS + 1] = {0};
    if (allocated) {
        part[0] = dg_seconds(CLOCK_MONOTONIC);
        dg_set_inputs(r, &in, token, pos);
        part[1] = dg_seconds(CLOCK_MONOTONIC);
        st = ggml_backend_sched_graph_compute_async(r->sched, gf);
        part[2] = dg_seconds(CLOCK_MONOTONIC);
        ggml_backend_sched_synchronize(r->sched);
        part[3] = dg_seconds(CLOCK_MONOTONIC);
        if (st == GGML_STATUS_SUCCESS)
            ggml_backend_tensor_get(in.logits, r->logits, 0, ggml_nbytes(in.logits));
        part[4] = dg_seconds(CLOCK_MONOTONIC);
    }
    for (int p = 0; p < DG_PARTS; p++) times[DG_SLOTS + p] = part[p + 1] - part[p];
    const struct dg_clock t3 = dg_now();
    dg_elapsed(t0, t1, times, 0);
    dg_elapsed(t1, t2, times, 1);
    dg_elapsed(t2, t3, times, 2);
    r->n_nodes = gf ? ggml_graph_n_nodes(gf) : 0;
    if (ctx) ggml_free(ctx);
    if (st != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "decode-graph: the graph of token %d failed (status %d)\n", (int)pos,
                (int)st);
        return -1;
    }
    return dg_argmax(r->logits, r->model->opt.vocab);
}

/* The scheduler over backends[0..n) (the CPU last), with its memory reserved on a first graph
 * as llama.cpp does. */
static bool dg_open(struct dg_run *r, ggml_backend_t *backends, int n) {
    const struct dg_options *o = &r->model->opt;
    r->max_nodes = 1024;
    r->meta_size = ggml_tensor_overhead() * (size_t)r->max_nodes +
                   ggml_graph_overhead_custom(r->max_nodes, false);
    r->meta = malloc(r->meta_size);
    r->logits = malloc((size_t)(o->vocab > o->ctx ? o->vocab : o->ctx) * sizeof *r->logits);
    r->mask = malloc((size_t)o->ctx * (size_t)dg_mask_rows(o->batch) * sizeof *r->mask);
    r->ids = malloc(2 * (size_t)o->batch * sizeof *r->ids);
    r->rows = malloc((size_t)o->batch * sizeof *r->rows);
    r->sched = ggml_backend_sched_new(backends, NULL, n, (size_t)r->max_nodes, false, true);
    if (!r->meta || !r->logits || !r->mask || !r->ids || !r->rows || !r->sched) return false;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){r->meta_size, r->meta, true});
    struct dg_inputs in;
    const bool ok =
        ctx && ggml_backend_sched_reserve(r->sched, dg_build(ctx, r->model, r->max_nodes, &in));
    if (ctx) ggml_free(ctx);
    return ok;
}

static void dg_close(struct dg_run *r) {
    if (r->sched) ggml_backend_sched_free(r->sched);
    free(r->meta);
    free(r->logits);
    free(r->mask);
    free(r->ids);
    free(r->rows);
}

static int dg_compare(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double dg_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, dg_compare);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Decode the tokens; times[slot * tokens + i] holds token i's time of slot (build, alloc,
 * compute wall-clock, then the same in process and in thread CPU time, then the compute's
 * parts). */
static bool dg_decode(struct dg_run *r, double *times, uint64_t *checksum) {
    const struct dg_options *o = &r->model->opt;
    int32_t token = 1;
    *checksum = 0;
    for (int i = 0; i < DG_WARMUP + o->tokens; i++) {
        double t[DG_ALL_SLOTS];
        token = dg_step(r, token, o->batch > 1 ? 0 : i % o->ctx, t);
        if (token < 0) return false;
        *checksum = *checksum * 31 + (uint64_t)token;
        if (i < DG_WARMUP) continue;
        for (int p = 0; p < DG_ALL_SLOTS; p++) times[p * o->tokens + i - DG_WARMUP] = t[p];
    }
    return true;
}

/* One line of medians of three phases (times[0..3n)) and of their sums; scratch: n doubles.
 * Also the mean of the sums: a loaded machine's long waits show there, not in the median. */
static void dg_print_phases(const char *what, double *times, int n, double *scratch) {
    double mean = 0;
    for (int i = 0; i < n; i++) {
        scratch[i] = times[i] + times[n + i] + times[2 * n + i];
        mean += scratch[i] / n;
    }
    const double build = dg_median(times, n), alloc = dg_median(times + n, n);
    const double compute = dg_median(times + 2 * n, n), sum = dg_median(scratch, n);
    printf("  %s ms per graph (medians): build %.3f  alloc %.3f  compute %.3f  total %.3f", what,
           1e3 * build, 1e3 * alloc, 1e3 * compute, 1e3 * sum);
    printf("  (mean %.3f)\n", 1e3 * mean);
}

static void dg_report(const struct dg_run *r, double *times, uint64_t checksum) {
    const struct dg_options *o = &r->model->opt;
    const int n = o->tokens;
    printf("decode-graph: %d nodes, %d layers, embd %d, ctx %d, batch %d, %s, %d thread%s, "
           "%d graphs, %s, %d splits\n",
           r->n_nodes, o->layers, o->embd, o->ctx, o->batch, ggml_type_name(o->type), o->threads,
           o->threads == 1 ? "" : "s", n, o->backend ? o->backend : "CPU",
           ggml_backend_sched_get_n_splits(r->sched));
    double *scratch = times + DG_ALL_SLOTS * (size_t)n;
    dg_print_phases("wall", times, n, scratch);
    dg_print_phases("cpu ", times + DG_PHASES * (size_t)n, n, scratch);
    dg_print_phases("thrd", times + 2 * DG_PHASES * (size_t)n, n, scratch);
    const double *parts = times + DG_SLOTS * (size_t)n;
    double med[DG_PARTS];
    for (int p = 0; p < DG_PARTS; p++) {
        memcpy(scratch, parts + p * (size_t)n, (size_t)n * sizeof *scratch);
        med[p] = dg_median(scratch, n);
    }
    printf("  compute's parts, wall ms (medians): inputs %.3f  compute_async %.3f  synchronize %.3f  "
           "logits %.3f\n",
           1e3 * med[0], 1e3 * med[1], 1e3 * med[2], 1e3 * med[3]);
    printf("  tokens checksum %016llx\n", (unsigned long long)checksum);
}

static bool dg_set_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(backend));
    ggml_backend_set_n_threads_t set =
        (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_set_n_threads");
    if (set) set(backend, n_threads);
    return set != NULL;
}

/* backends[0]: the device named by --backend (else the CPU); backends[1]: the CPU when the
 * device is not one.  Returns how many were opened, 0 with a message on failure. */
static int dg_backends(const struct dg_options *o, ggml_backend_t backends[2]) {
    ggml_backend_dev_t dev = o->backend ? ggml_backend_dev_by_name(o->backend) : NULL;
    if (o->backend && !dev) {
        fprintf(stderr, "decode-graph: no device named '%s'\n", o->backend);
        return 0;
    }
    const bool on_cpu = !dev || ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
    backends[0] = dev ? ggml_backend_dev_init(dev, NULL)
                      : ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    backends[1] = on_cpu ? NULL : ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (!backends[0] || (!on_cpu && !backends[1])) return 0;
    return on_cpu ? 1 : 2;
}

int decode_graph_main(int argc, char **argv) {
    static struct dg_model model; /* large: the layer table */
    struct dg_run run = {0};
    if (!dg_parse(argc, argv, &model.opt)) {
        dg_usage();
        return 2;
    }
    ggml_backend_t backends[2] = {NULL, NULL};
    const int n_backends = dg_backends(&model.opt, backends);
    double *times = malloc((DG_ALL_SLOTS + 1) * (size_t)model.opt.tokens * sizeof *times);
    uint64_t checksum = 0;
    run.model = &model;
    bool ok = n_backends && times &&
              dg_set_threads(backends[n_backends - 1], model.opt.threads) &&
              dg_load_model(&model, backends[0], backends[1]) &&
              dg_open(&run, backends, n_backends) &&
              dg_decode(&run, times, &checksum);
    if (ok)
        dg_report(&run, times, checksum);
    else
        fprintf(stderr, "decode-graph: the benchmark failed\n");
    dg_close(&run);
    if (model.buffer) ggml_backend_buffer_free(model.buffer);
    if (model.host_buffer) ggml_backend_buffer_free(model.host_buffer);
    if (model.ctx) ggml_free(model.ctx);
    if (model.host_ctx) ggml_free(model.host_ctx);
    for (int i = 0; i < 2; i++)
        if (backends[i]) ggml_backend_free(backends[i]);
    free(times);
    return ok ? 0 : 1;
}
