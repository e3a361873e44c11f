/*
 * test-gpt.c - the GPT of ggmlc-gpt (tools/gpt-*.c), TAP: its logits, loss and gradients against
 * PyTorch (tests/golden/gen_gpt.py), generation through the key/value cache against full
 * recomputation, the checkpoint round trip and damaged checkpoints, and the sampler against
 * hand-computed probabilities.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "gguf.h"
#include "gpt-model.h"
#include "gpt-run.h"
#include "gpt-sample.h"
#include "testutil.h"

static const struct gpt_hparams GOLD_HP = {.n_ctx = 16, .n_embd = 32, .n_head = 4, .n_layer = 2};
#define GOLD_T 12

static char tmpdir[256];

static const char *tmp_path(const char *name) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
    return p;
}

/* The golden weights into m, by their checkpoint names. */
static bool set_gold_weights(struct gpt_model *m, const struct gold_set *gold) {
    for (struct ggml_tensor *t = ggml_get_first_tensor(m->ctx); t; t = ggml_get_next_tensor(m->ctx, t)) {
        if (t == m->train_pos || t == m->train_mask) continue;
        const struct gold_tensor *g = gold_get(gold, ggml_get_name(t));
        if (!g || g->n != (size_t)ggml_nelements(t)) return false;
        ggml_backend_tensor_set(t, g->data, 0, ggml_nbytes(t));
    }
    return true;
}

/* Logits [256, n] of tokens by the training graph (full recomputation, batch 1). */
static bool full_logits(struct gpt_model *m, ggml_backend_t cpu, const int32_t *tokens, int n, float *out) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4096 * ggml_tensor_overhead() +
                                                                       ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *tok = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n, 1);
    ggml_set_input(tok);
    struct ggml_tensor *logits = gpt_forward_train(ctx, m, tok, false);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, logits);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    bool ok = ggml_gallocr_alloc_graph(ga, gf);
    if (ok) {
        ggml_backend_tensor_set(tok, tokens, 0, (size_t)n * sizeof *tokens);
        ok = ggml_backend_graph_compute(cpu, gf) == GGML_STATUS_SUCCESS;
        if (ok) ggml_backend_tensor_get(logits, out, 0, ggml_nbytes(logits));
    }
    ggml_gallocr_free(ga);
    ggml_free(ctx);
    return ok;
}

static void test_golden_logits(struct gpt_model *m, ggml_backend_t cpu, const struct gold_set *gold) {
    const struct gold_tensor *tok = gold_get(gold, "tokens"), *ref = gold_get(gold, "logits");
    float *got = malloc(sizeof(float) * GPT_VOCAB * GOLD_T);
    const bool ok = tok && ref && got && full_logits(m, cpu, tok->data, GOLD_T, got);
    tap_ok(ok, "the training graph computes logits (%s)", ok ? "ok" : ggmlc_last_error());
    if (ok) ok_nmse(got, ref->data, ref->n, 1e-9, "logits of 12 bytes equal PyTorch's (2 layers, 4 heads, width 32)");
    free(got);
}

/* Mean cross entropy of the next bytes and its gradients, by ggml's backward pass. */
static void test_golden_gradients(struct gpt_model *m, ggml_backend_t cpu, const struct gold_set *gold) {
    const struct gold_tensor *tok = gold_get(gold, "tokens"), *ref_loss = gold_get(gold, "loss");
    if (!tok || !ref_loss) return;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16384 * ggml_tensor_overhead() +
                                                                       ggml_graph_overhead_custom(8192, true), NULL, true});
    struct ggml_tensor *in = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, GOLD_T, 1);
    struct ggml_tensor *labels = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, GPT_VOCAB, GOLD_T);
    ggml_set_input(in), ggml_set_input(labels);
    struct ggml_tensor *logits = ggml_reshape_2d(ctx, gpt_forward_train(ctx, m, in, true), GPT_VOCAB, GOLD_T);
    struct ggml_tensor *loss = ggml_cross_entropy_loss(ctx, logits, labels);
    ggml_set_loss(loss);
    struct ggml_cgraph *gb = ggml_new_graph_custom(ctx, 8192, true);
    ggml_build_forward_expand(gb, loss);
    ggml_build_backward_expand(ctx, gb, NULL);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    bool ok = ggml_gallocr_alloc_graph(ga, gb);
    float hot[GPT_VOCAB * GOLD_T] = {0}, got_loss = NAN;
    const int32_t *t = tok->data;
    for (int i = 0; i < GOLD_T; i++) hot[i * GPT_VOCAB + t[i + 1]] = 1;
    if (ok) {
        ggml_backend_tensor_set(in, t, 0, GOLD_T * sizeof *t);
        ggml_backend_tensor_set(labels, hot, 0, sizeof hot);
        ggml_graph_reset(gb);
        ok = ggml_backend_graph_compute(cpu, gb) == GGML_STATUS_SUCCESS;
        ggml_backend_tensor_get(loss, &got_loss, 0, sizeof got_loss);
    }
    const float want = ((const float *)ref_loss->data)[0];
    tap_ok(ok && fabsf(got_loss - want) < 1e-4f * fabsf(want), "loss %.6f equals PyTorch's %.6f", got_loss, want);
    const char *names[] = {"token_embd.weight", "blk.0.attn_qkv.weight", "blk.1.ffn_down.weight", "output.weight"};
    for (int i = 0; ok && i < 4; i++) {
        char key[96];
        snprintf(key, sizeof key, "grad.%s", names[i]);
        const struct gold_tensor *ref = gold_get(gold, key);
        struct ggml_tensor *g = ggml_graph_get_grad(gb, ggml_get_tensor(m->ctx, names[i]));
        if (!ref || !g) {
            tap_ok(false, "gradient of %s exists", names[i]);
            continue;
        }
        float *got = malloc(ggml_nbytes(g));
        ggml_backend_tensor_get(g, got, 0, ggml_nbytes(g));
        ok_nmse(got, ref->data, ref->n, 1e-8, "d loss / d %s equals PyTorch autograd", names[i]);
        free(got);
    }
    ggml_gallocr_free(ga);
    ggml_free(ctx);
}

/* Logits of the GOLD_T tokens t through r's cache: the first 5 as one batch, then one step per byte. */
static bool cached_logits(struct gpt_runner *r, const int32_t *t, float *cached) {
    const int n_prompt = 5;
    bool ok = gpt_runner_eval(r, t, n_prompt, true, cached);
    for (int i = n_prompt; ok && i < GOLD_T; i++) ok = gpt_runner_eval(r, t + i, 1, false, cached + i * GPT_VOCAB);
    return ok;
}

/* The prompt as one batch, then one step per byte: each position's logits as recomputed whole. */
static void test_cache_matches_full(struct gpt_model *m, ggml_backend_t cpu, const struct gold_set *gold) {
    const struct gold_tensor *tok = gold_get(gold, "tokens");
    float full[GPT_VOCAB * GOLD_T], cached[GPT_VOCAB * GOLD_T];
    struct gpt_runner r;
    ggml_backend_t backends[1] = {cpu};
    bool ok = tok && full_logits(m, cpu, tok->data, GOLD_T, full) && gpt_runner_init(&r, m, backends, 1);
    if (!ok) {
        tap_ok(false, "generation runner (%s)", ggmlc_last_error());
        return;
    }
    const int32_t *t = tok->data;
    tap_ok(r.cache.k[0]->type == GGML_TYPE_F32 && r.cache.v[0]->type == GGML_TYPE_F32,
           "an F32 model's key/value cache is F32");
    ok = cached_logits(&r, t, cached);
    tap_ok(ok && r.cache.n_past == GOLD_T, "a 5-byte prompt then 7 single steps fill 12 cache positions");
    const double d = max_abs_diff(cached, full, GPT_VOCAB * GOLD_T);
    tap_ok(ok && d < 1e-4, "logits through the key/value cache equal full recomputation at every position "
           "(max |diff| %.2g)", d);
    /* greedy continuation: with the cache and by recomputing the whole sequence each time */
    int32_t seq_cache[16], seq_full[16];
    float last[GPT_VOCAB], all[GPT_VOCAB * 16];
    memcpy(seq_cache, t, 4 * sizeof *t), memcpy(seq_full, t, 4 * sizeof *t);
    struct gpt_sampler greedy = {.temperature = 0, .top_p = 1, .repeat_penalty = 1};
    gpt_runner_reset(&r);
    ok = gpt_runner_eval(&r, seq_cache, 4, false, last);
    for (int n = 4; ok && n < 16; n++) {
        seq_cache[n] = gpt_sample(&greedy, last, seq_cache, n);
        if (n + 1 < 16) ok = gpt_runner_eval(&r, seq_cache + n, 1, false, last);
    }
    for (int n = 4; ok && n < 16; n++) {
        ok = full_logits(m, cpu, seq_full, n, all);
        seq_full[n] = gpt_sample(&greedy, all + (n - 1) * GPT_VOCAB, seq_full, n);
    }
    tap_ok(ok && memcmp(seq_cache, seq_full, sizeof seq_cache) == 0,
           "12 greedy bytes through the cache equal those of full recomputation");
    tap_ok(!gpt_runner_eval(&r, seq_cache, 2, false, last) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "a step past the context is refused: %s", ggmlc_last_error());
    gpt_runner_free(&r);
}

/* A context of 80 positions: the step graph attends over the filled span (32, 64, 80) and is
 * rebuilt as it grows, also after a batch that crosses a span's end; every position's logits
 * equal full recomputation. */
static void test_cache_spans(ggml_backend_t cpu) {
    enum { N_CTX = 80 };
    const struct gpt_hparams hp = {.n_ctx = N_CTX, .n_embd = 16, .n_head = 2, .n_layer = 2};
    struct gpt_model m;
    struct gpt_runner r;
    ggml_backend_t backends[1] = {cpu};
    if (!gpt_model_create(&m, &hp, cpu, true, 7)) {
        tap_ok(false, "an 80-position model (%s)", ggmlc_last_error());
        return;
    }
    int32_t tokens[N_CTX];
    for (int i = 0; i < N_CTX; i++) tokens[i] = (i * 37 + 11) % GPT_VOCAB;
    float *cached = malloc(sizeof(float) * GPT_VOCAB * N_CTX), *full = malloc(sizeof(float) * GPT_VOCAB * N_CTX);
    bool ok = cached && full && full_logits(&m, cpu, tokens, N_CTX, full) && gpt_runner_init(&r, &m, backends, 1);
    if (ok) {
        /* 3 as a batch, single steps to 30, a batch of 6 (30..35, across 32), steps to the end */
        ok = gpt_runner_eval(&r, tokens, 3, true, cached);
        for (int i = 3; ok && i < N_CTX; i++) {
            const int n = i == 30 ? 6 : 1;
            ok = gpt_runner_eval(&r, tokens + i, n, true, cached + (size_t)i * GPT_VOCAB);
            i += n - 1;
        }
        gpt_runner_free(&r);
    }
    const double d = ok ? max_abs_diff(cached, full, GPT_VOCAB * N_CTX) : 1.0;
    tap_ok(ok && d < 1e-4, "80 positions through the cache, across three attention spans and a batch, equal full "
           "recomputation (max |diff| %.2g)", d);
    free(cached), free(full);
    gpt_model_free(&m);
}

/* The training graph's forward pass copies per layer only v (transposed for its product) and
 * the merged heads; q and k are read as views, and the causal mask is the softmax's. */
static void test_graph_copies(struct gpt_model *m) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4096 * ggml_tensor_overhead() +
                                                                       ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *tok = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, m->hp.n_ctx, 2);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, gpt_forward_train(ctx, m, tok, false));
    int copies = 0, masks = 0;
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        copies += ggml_graph_node(gf, i)->op == GGML_OP_CONT;
        masks += ggml_graph_node(gf, i)->op == GGML_OP_DIAG_MASK_INF;
    }
    tap_ok(copies == 2 * m->hp.n_layer && masks == 0,
           "the training graph copies 2 tensors per layer (%d CONT nodes for %d layers) and masks "
           "inside the softmax (%d DIAG_MASK_INF nodes)", copies, m->hp.n_layer, masks);
    ggml_free(ctx);
}

static bool same_weights(struct gpt_model *a, struct gpt_model *b) {
    bool same = memcmp(&a->hp, &b->hp, sizeof a->hp) == 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(a->ctx); same && t; t = ggml_get_next_tensor(a->ctx, t)) {
        struct ggml_tensor *u = ggml_get_tensor(b->ctx, ggml_get_name(t));
        if (!u || ggml_nbytes(u) != ggml_nbytes(t)) return false;
        void *x = malloc(ggml_nbytes(t)), *y = malloc(ggml_nbytes(t));
        ggml_backend_tensor_get(t, x, 0, ggml_nbytes(t));
        ggml_backend_tensor_get(u, y, 0, ggml_nbytes(u));
        same = memcmp(x, y, ggml_nbytes(t)) == 0;
        free(x), free(y);
    }
    return same;
}

static void truncate_copy(const char *from, const char *to, long keep) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    for (long i = 0; in && out && i < keep; i++) {
        const int c = fgetc(in);
        if (c == EOF) break;
        fputc(c, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
}

static void expect_refused(ggml_backend_t cpu, const char *path, const char *what) {
    struct gpt_model m;
    ggmlc_clear_error();
    const bool loaded = gpt_model_load(&m, path, cpu);
    tap_ok(!loaded && ggmlc_last_status() != GGMLC_OK && ggmlc_last_error()[0],
           "%s is refused: %s", what, ggmlc_last_error());
    if (loaded) gpt_model_free(&m);
}

static void test_checkpoint(struct gpt_model *m, ggml_backend_t cpu) {
    char path[512];
    snprintf(path, sizeof path, "%s", tmp_path("gpt.gguf"));
    tap_ok(gpt_model_save(m, path, 7, 1.5), "the model is saved %s", ggmlc_last_error());
    struct gpt_model back;
    const bool loaded = gpt_model_load(&back, path, cpu);
    tap_ok(loaded && same_weights(m, &back), "the checkpoint loads back with the same shape and weights");
    if (loaded) gpt_model_free(&back);
    expect_refused(cpu, tmp_path("absent.gguf"), "a missing checkpoint");
    truncate_copy(path, tmp_path("cut.gguf"), 3000);
    expect_refused(cpu, tmp_path("cut.gguf"), "a truncated checkpoint");
    FILE *f = fopen(tmp_path("text.gguf"), "w");
    if (f) fputs("not a checkpoint at all\n", f), fclose(f);
    expect_refused(cpu, tmp_path("text.gguf"), "a text file");
    struct gguf_context *g = gguf_init_empty(); /* a GGUF of another model */
    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_write_to_file(g, tmp_path("other.gguf"), false);
    gguf_free(g);
    expect_refused(cpu, tmp_path("other.gguf"), "a GGUF file of another architecture");
    /* right keys, one weight of the wrong shape: a model of width 32 saved, its header claims 64 */
    struct ggml_context *ctx = NULL;
    struct gguf_context *full = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    struct gguf_context *lie = gguf_init_empty();
    if (full) {
        gguf_set_kv(lie, full);
        gguf_set_val_u32(lie, "ggmlc-gpt.embedding_length", 64);
        for (int64_t i = 0; i < gguf_get_n_tensors(full); i++)
            gguf_add_tensor(lie, ggml_get_tensor(ctx, gguf_get_tensor_name(full, i)));
        if (!gguf_write_to_file(lie, tmp_path("shape.gguf"), false)) tap_diag("write: %s", ggmlc_last_error());
    }
    gguf_free(lie), gguf_free(full), ggml_free(ctx);
    expect_refused(cpu, tmp_path("shape.gguf"), "a checkpoint whose weights do not fit its header");
}

/* ------------------------------------------------------------------ sampler */

static void two_way_logits(float *l, float a, float b) {
    for (int i = 0; i < GPT_VOCAB; i++) l[i] = -1e9f;
    l['a'] = a, l['b'] = b;
}

static double share_of_a(struct gpt_sampler s, const float *logits, int draws) {
    int n_a = 0;
    for (int i = 0; i < draws; i++) n_a += gpt_sample(&s, logits, NULL, 0) == 'a';
    return (double)n_a / draws;
}

static void test_sampler(void) {
    float l[GPT_VOCAB];
    two_way_logits(l, logf(3), 0); /* p(a) = 3/4 at temperature 1 */
    const struct gpt_sampler base = {.temperature = 1, .top_k = 0, .top_p = 1, .repeat_penalty = 1, .rng = 5};
    double p = share_of_a(base, l, 20000);
    tap_ok(fabs(p - 0.75) < 0.015, "temperature 1: 'a' drawn with probability 3/4 (%.4f)", p);
    struct gpt_sampler s = base;
    s.temperature = 0.5f; /* p(a) = 9 / (9 + 1) */
    p = share_of_a(s, l, 20000);
    tap_ok(fabs(p - 0.9) < 0.01, "temperature 0.5: probability 9/10 (%.4f)", p);
    s = base, s.top_p = 0.7f;
    tap_ok(share_of_a(s, l, 2000) == 1.0, "top-p 0.7 keeps only the byte holding 3/4 of the mass");
    s = base, s.top_k = 1;
    tap_ok(share_of_a(s, l, 2000) == 1.0, "top-k 1 keeps only the likeliest byte");
    s = base, s.temperature = 0;
    tap_ok(share_of_a(s, l, 100) == 1.0, "temperature 0 is greedy");
    /* repetition penalty 2: a's logit 2 becomes 1 < b's 1.5 when a was just seen */
    two_way_logits(l, 2.0f, 1.5f);
    const int32_t hist[] = {'x', 'a'};
    s = base, s.temperature = 0, s.repeat_penalty = 2, s.repeat_last_n = 1;
    tap_ok(gpt_sample(&s, l, hist, 2) == 'b', "a repetition penalty of 2 puts a repeated byte below another");
    s.repeat_last_n = 0;
    tap_ok(gpt_sample(&s, l, hist, 2) == 'a', "with repeat_last_n 0 no byte is penalized");
    /* seeds */
    for (int i = 0; i < GPT_VOCAB; i++) l[i] = (float)((i * 37) % 11) * 0.3f;
    int32_t x[64], y[64], z[64];
    struct gpt_sampler s1 = base, s2 = base, s3 = base;
    s1.rng = s2.rng = 42, s3.rng = 43;
    for (int i = 0; i < 64; i++) x[i] = gpt_sample(&s1, l, x, i), y[i] = gpt_sample(&s2, l, y, i), z[i] = gpt_sample(&s3, l, z, i);
    tap_ok(memcmp(x, y, sizeof x) == 0, "the same seed draws the same 64 bytes");
    tap_ok(memcmp(x, z, sizeof x) != 0, "another seed draws others");
    s = base, s.top_p = 0;
    tap_ok(gpt_sampler_check(&s) != NULL, "top-p 0 is an invalid setting: %s", gpt_sampler_check(&s));
}

/* m's projections replaced by their round trip through type (quantized, then back to F32). */
static bool round_trip_projections(struct gpt_model *m, enum ggml_type type) {
    struct ggml_tensor *w[5 * GPT_MAX_LAYERS + 1];
    int n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const struct gpt_layer *l = &m->layers[il];
        w[n++] = l->wqkv, w[n++] = l->wo, w[n++] = l->w_up, w[n++] = l->w_down;
    }
    w[n++] = m->out;
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        const int64_t ne = ggml_nelements(w[i]);
        float *v = malloc((size_t)ne * sizeof *v);
        void *q = malloc(ggml_row_size(type, ne));
        ok = v && q;
        if (ok) {
            ggml_backend_tensor_get(w[i], v, 0, ggml_nbytes(w[i]));
            ok = ggml_quantize_chunk(type, v, q, 0, w[i]->ne[1], w[i]->ne[0], NULL) > 0;
            ggml_get_type_traits(type)->to_float(q, v, ne);
            ggml_backend_tensor_set(w[i], v, 0, ggml_nbytes(w[i]));
        }
        free(v);
        free(q);
    }
    return ok;
}

/* The checkpoint loaded with 16-bit and quantized projections: the weights take the type's bytes
 * and the logits equal those of the F32 model whose projections went through the type and back
 * (what is left: the quantized products round their activations to Q8_0, nmse ~3e-4 here, where
 * the F32 model itself is 0.06 away for Q4_0); types the width or the format
 * cannot take are refused with a reason. */
/* Q4_0 projections go to the CPU's repacked buffer type (CPU_REPACK: ggml repacks Q4_0 only,
 * on this class of CPU), the others stay in the default buffer; read back, a repacked weight
 * gives the bytes of its plain quantization (ref: the F32 model). */
static void check_product_buffer(const struct gpt_model *q, const struct gpt_model *ref, enum ggml_type type) {
    const char *name = ggml_type_name(type);
    ggml_backend_buffer_t pb = q->product_buffer;
    if (type != GGML_TYPE_Q4_0) {
        tap_ok(pb == NULL, "%s: the projections stay in the default buffer", name);
        return;
    }
    const char *buft = pb ? ggml_backend_buft_name(ggml_backend_buffer_get_type(pb)) : "none";
    tap_ok(pb && strcmp(buft, "CPU_REPACK") == 0 && q->layers[0].wqkv->buffer == pb && q->out->buffer == pb &&
               q->tok_embd->buffer != pb,
           "%s: the projections go to the CPU's product buffer type (%s), the embedding does not", name, buft);
    const struct ggml_tensor *w = ref->layers[0].wqkv;
    const size_t n = (size_t)ggml_nelements(w), bytes = ggml_row_size(type, w->ne[0]) * (size_t)w->ne[1];
    float *f = malloc(n * sizeof *f);
    char *want = malloc(bytes), *got = malloc(bytes);
    bool same = f && want && got;
    if (same) {
        ggml_backend_tensor_get(w, f, 0, n * sizeof *f);
        ggml_quantize_chunk(type, f, want, 0, w->ne[1], w->ne[0], NULL);
        ggml_backend_tensor_get(q->layers[0].wqkv, got, 0, bytes);
        same = memcmp(want, got, bytes) == 0;
    }
    tap_ok(same, "%s: a repacked weight reads back as its plain quantization", name);
    free(f), free(want), free(got);
}

/* A converted model generates through an F16 cache: its cached logits equal its full
 * recomputation's (full, all in F32) within max_nmse (quantized weights: the rounding of their
 * Q8_0 activations magnifies the cache's; through an F32 cache they were equal). */
static void check_f16_cache(struct gpt_model *q, ggml_backend_t cpu, const int32_t *tokens, const float *full,
                            const char *name, double max_nmse) {
    float cached[GOLD_T * GPT_VOCAB];
    struct gpt_runner r;
    ggml_backend_t backends[1] = {cpu};
    if (!tap_ok(gpt_runner_init(&r, q, backends, 1), "%s: generation runner (%s)", name, ggmlc_last_error())) return;
    tap_ok(r.cache.k[0]->type == GGML_TYPE_F16 && r.cache.v[0]->type == GGML_TYPE_F16, "%s: the key/value cache is F16",
           name);
    if (tap_ok(cached_logits(&r, tokens, cached), "%s: logits through the cache (%s)", name, ggmlc_last_error()))
        ok_nmse(cached, full, GOLD_T * GPT_VOCAB, max_nmse, "%s: logits through the F16 cache equal full recomputation", name);
    gpt_runner_free(&r);
}

static void test_weight_types(struct gpt_model *m, ggml_backend_t cpu, const struct gold_set *gold) {
    const char *path = tmp_path("types.gguf");
    const struct gold_tensor *tok = gold_get(gold, "tokens");
    float ref[GOLD_T * GPT_VOCAB], got[GOLD_T * GPT_VOCAB];
    ggmlc_clear_error();
    if (!tap_ok(tok && gpt_model_save(m, path, 1, 1.0), "the checkpoint is saved (%s)", ggmlc_last_error())) return;
    /* cache_nmse: generation through the F16 cache, whose attention accumulates the values in F16
     * as ggml's CPU backend does (5e-7 for F16 weights).  F16 and BF16 weights multiply their
     * activations rounded to their type, as ggml's CPU backend does, which the reference (F32
     * activations) does not: 3e-5 for BF16 */
    const struct { enum ggml_type type; double max_nmse, cache_nmse; } cases[] = {
        {GGML_TYPE_F16, 1e-6, 1e-5}, {GGML_TYPE_BF16, 1e-4, 1e-4}, {GGML_TYPE_Q8_0, 1e-3, 1e-3}, {GGML_TYPE_Q4_0, 1e-3, 1e-3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct gpt_model q, r;
        const char *name = ggml_type_name(cases[i].type);
        ggmlc_clear_error();
        if (!tap_ok(gpt_model_load_as(&q, path, cpu, cases[i].type), "the model loads with %s projections%s%s", name,
                    ggmlc_last_error()[0] ? ": " : "", ggmlc_last_error()))
            continue;
        tap_ok(q.layers[0].wqkv->type == cases[i].type && q.out->type == cases[i].type &&
                   q.tok_embd->type == GGML_TYPE_F32 && gpt_model_bytes(&q) < gpt_model_bytes(m),
               "%s: the projections take the type (%zu bytes of weights, F32 %zu)", name, gpt_model_bytes(&q),
               gpt_model_bytes(m));
        const bool ref_ok = gpt_model_load(&r, path, cpu);
        if (ref_ok) check_product_buffer(&q, &r, cases[i].type);
        if (tap_ok(ref_ok && round_trip_projections(&r, cases[i].type) && full_logits(&r, cpu, tok->data, GOLD_T, ref) &&
                       full_logits(&q, cpu, tok->data, GOLD_T, got),
                   "%s: logits computed", name)) {
            ok_nmse(got, ref, GOLD_T * GPT_VOCAB, cases[i].max_nmse,
                    "%s: logits equal the F32 model's with the weights' round trip through the type", name);
            check_f16_cache(&q, cpu, tok->data, got, name, cases[i].cache_nmse);
        }
        if (ref_ok) gpt_model_free(&r);
        gpt_model_free(&q);
    }
    const enum ggml_type refused[] = {GGML_TYPE_Q4_K, GGML_TYPE_IQ2_XXS, GGML_TYPE_I32};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        struct gpt_model q;
        ggmlc_clear_error();
        const bool loaded = gpt_model_load_as(&q, path, cpu, refused[i]);
        tap_ok(!loaded && ggmlc_last_error()[0], "%s projections are refused: %s", ggml_type_name(refused[i]),
               ggmlc_last_error());
        if (loaded) gpt_model_free(&q);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "%s/test-gpt.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir) || ggmlc_init() != GGMLC_OK) return tap_skip_all("no temporary folder or no ggmlc");
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    struct gold_set *gold = gold_load("gpt.gold");
    struct gpt_model m;
    if (!cpu || !gold || !gpt_model_create(&m, &GOLD_HP, cpu, false, 0) || !set_gold_weights(&m, gold)) {
        tap_ok(false, "the golden model is set up (%s)", ggmlc_last_error());
        return tap_done();
    }
    test_golden_logits(&m, cpu, gold);
    test_golden_gradients(&m, cpu, gold);
    test_graph_copies(&m);
    test_cache_matches_full(&m, cpu, gold);
    test_cache_spans(cpu);
    test_checkpoint(&m, cpu);
    test_weight_types(&m, cpu, gold);
    test_sampler();
    gpt_model_free(&m);
    gold_free(gold);
    ggml_backend_free(cpu);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) tap_diag("could not remove %s", tmpdir);
    return tap_done();
}
