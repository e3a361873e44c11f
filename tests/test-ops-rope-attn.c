/* test-ops-rope-attn.c - rope in every mode (+ back) and flash attention (+ back)
 * against PyTorch golden data (tests/golden/gen_nn.py). */
#include <math.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "test-ops-nn.h"

/* Angles reach 1000 rad, where an f32 angle carries ~6e-5 rad of rounding. */
#define ROPE_ERR 1e-9
#define ATTN_ERR 1e-9
/* f16 K and V accumulate in f16, as ggml's CPU backend does (ops-attn-match.c): ~3e-7 here */
#define ATTN_F16_ERR 2e-6

/* Arguments of a rope case as gen_nn.py stores them. */
struct rope_case {
    int n_dims, mode, n_ctx_orig;
    float base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
    int sections[4];
};

static struct rope_case rope_case_of(const struct gold_set *gs, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "%s_args", name);
    struct rope_case c;
    c.n_dims = (int)nn_arg(gs, key, 0);
    c.mode = (int)nn_arg(gs, key, 1);
    c.n_ctx_orig = (int)nn_arg(gs, key, 2);
    c.base = nn_arg(gs, key, 3);
    c.freq_scale = nn_arg(gs, key, 4);
    c.ext_factor = nn_arg(gs, key, 5);
    c.attn_factor = nn_arg(gs, key, 6);
    c.beta_fast = nn_arg(gs, key, 7);
    c.beta_slow = nn_arg(gs, key, 8);
    for (int i = 0; i < 4; i++) c.sections[i] = (int)nn_arg(gs, key, 9 + i);
    return c;
}

/* The forward (or backward) rope node of case c on x. */
static struct ggml_tensor *rope_node(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *pos,
                                     struct ggml_tensor *ff, struct rope_case *c, bool back) {
    if (c->mode & GGML_ROPE_TYPE_MROPE) {
        return (back ? ggml_rope_multi_back : ggml_rope_multi)(ctx, x, pos, ff, c->n_dims, c->sections, c->mode, c->n_ctx_orig,
                                                                 c->base, c->freq_scale, c->ext_factor, c->attn_factor,
                                                                 c->beta_fast, c->beta_slow);
    }
    return (back ? ggml_rope_ext_back : ggml_rope_ext)(ctx, x, pos, ff, c->n_dims, c->mode, c->n_ctx_orig, c->base,
                                                         c->freq_scale, c->ext_factor, c->attn_factor, c->beta_fast,
                                                         c->beta_slow);
}

static void test_rope(void) {
    struct gold_set *gs = gold_load("nn_rope.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = nn_f32(ctx, gs, "x"), *ff = nn_f32(ctx, gs, "ff");
    struct ggml_tensor *pos1 = nn_f32(ctx, gs, "pos1"), *pos4 = nn_f32(ctx, gs, "pos4");
    static const char *const cases[] = {"neox_yarn", "mrope", "imrope", "vision"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rope_case c = rope_case_of(gs, cases[i]);
        const bool with_ff = strcmp(cases[i], "neox_yarn") == 0 || strcmp(cases[i], "vision") == 0;
        struct ggml_tensor *xin = i == 0 ? nn_input(ctx, gs, "x", GGML_TYPE_F32, true) : x;
        struct ggml_tensor *y = rope_node(ctx, xin, (c.mode & GGML_ROPE_TYPE_MROPE) ? pos4 : pos1, with_ff ? ff : NULL, &c, false);
        ops_compute(ctx, y);
        char what[96];
        snprintf(what, sizeof what, "rope mode %d (%s)%s", c.mode, cases[i], i == 0 ? ", transposed input" : "");
        nn_check(y, gs, cases[i], ROPE_ERR, what);
    }
    struct ggml_tensor *y = ggml_rope(ctx, x, pos1, 12, GGML_ROPE_TYPE_NORMAL);
    ops_compute(ctx, y);
    nn_check(y, gs, "normal", ROPE_ERR, "ggml_rope normal mode, 12 of 16 dims rotated");
    struct ggml_tensor *x32 = nn_input(ctx, gs, "x", GGML_TYPE_F32, false);
    y = ggml_rope_inplace(ctx, x32, pos1, 12, GGML_ROPE_TYPE_NORMAL);
    ops_compute(ctx, y);
    tap_ok(y && y->data == x32->data, "rope_inplace of an f32 tensor stays in place");
    nn_check(y, gs, "normal", ROPE_ERR, "rope_inplace f32 values (rows turned where they lie, 4 dims passing through)");
    struct ggml_tensor *x16 = nn_input(ctx, gs, "x", GGML_TYPE_F16, false);
    y = ggml_rope_inplace(ctx, x16, pos1, 12, GGML_ROPE_TYPE_NORMAL);
    ops_compute(ctx, y);
    tap_ok(y && y->data == x16->data && y->type == GGML_TYPE_F16, "rope_inplace of an f16 tensor stays in place");
    nn_check(y, gs, "normal", 1e-5, "rope_inplace f16 values");

    struct rope_case c = rope_case_of(gs, "neox_yarn");
    struct ggml_tensor *dx = rope_node(ctx, nn_f32(ctx, gs, "neox_yarn_dy"), pos1, ff, &c, true);
    ops_compute(ctx, dx);
    nn_check(dx, gs, "neox_yarn_dx", ROPE_ERR, "rope_ext_back (NeoX, YaRN, frequency factors) vs autograd");
    c = rope_case_of(gs, "imrope");
    dx = rope_node(ctx, nn_f32(ctx, gs, "imrope_dy"), pos4, NULL, &c, true);
    ops_compute(ctx, dx);
    nn_check(dx, gs, "imrope_dx", ROPE_ERR, "rope_multi_back (interleaved sections, YaRN) vs autograd");

    float dims[4];
    ggml_rope_yarn_corr_dims(16, 64, 10000.0f, 32.0f, 1.0f, dims);
    ggml_rope_yarn_corr_dims(96, 4096, 500000.0f, 32.0f, 1.0f, dims + 2);
    bool same = true;
    for (int i = 0; i < 4; i++) same = same && dims[i] == nn_arg(gs, "yarn_dims", i);
    tap_ok(same, "ggml_rope_yarn_corr_dims: [%g, %g] and [%g, %g]", dims[0], dims[1], dims[2], dims[3]);

    nn_rejects(ggml_rope(ctx, x, pos4, 12, 0), GGMLC_ERR_SHAPE, "ggml_rope", "rope with one position per 4 rows");
    nn_rejects(ggml_rope(ctx, x, pos1, 13, 0), GGMLC_ERR_INVALID_ARG, "ggml_rope", "rope with odd n_dims");
    nn_rejects(ggml_rope(ctx, x, pos1, 12, 5), GGMLC_ERR_INVALID_ARG, "ggml_rope", "rope of unknown mode 5");
    nn_rejects(ggml_rope(ctx, x, pos1, 12, GGML_ROPE_TYPE_MROPE), GGMLC_ERR_INVALID_ARG, "ggml_rope",
               "multi-section mode without sections");
    int bad_sections[4] = {0, 0, 0, 0};
    nn_rejects(ggml_rope_multi(ctx, x, pos4, NULL, 12, bad_sections, GGML_ROPE_TYPE_MROPE, 0, 1e4f, 1, 0, 1, 0, 0),
               GGMLC_ERR_INVALID_ARG, "ggml_rope_multi", "rope_multi with empty sections");
    nn_rejects(ggml_rope(ctx, x, ff, 12, 0), GGMLC_ERR_SHAPE, "ggml_rope", "rope with f32 positions");
    ggml_free(ctx);
    gold_free(gs);
}

static void test_flash_attn(void) {
    struct gold_set *gs = gold_load("nn_attn.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *q = nn_input(ctx, gs, "q", GGML_TYPE_F32, true);
    struct ggml_tensor *k = nn_f32(ctx, gs, "k"), *v = nn_f32(ctx, gs, "v"), *mask = nn_f32(ctx, gs, "mask");
    struct ggml_tensor *mask16 = nn_input(ctx, gs, "mask", GGML_TYPE_F16, false);

    struct ggml_tensor *o = ggml_flash_attn_ext(ctx, q, k, v, mask, nn_arg(gs, "plain_args", 0), 0.0f, 0.0f);
    tap_ok(o && o->ne[0] == v->ne[0] && o->ne[1] == q->ne[2] && o->ne[2] == q->ne[1] && o->type == GGML_TYPE_F32,
           "flash_attn_ext result is [Dv, n_head, n_batch, B] f32");
    ops_compute(ctx, o);
    nn_check(o, gs, "plain", ATTN_ERR, "flash_attn_ext, transposed q, 6 heads over 3 kv heads, f32 mask");

    o = ggml_flash_attn_ext(ctx, q, k, v, mask16, nn_arg(gs, "full_args", 0), nn_arg(gs, "full_args", 1),
                            nn_arg(gs, "full_args", 2));
    ggml_flash_attn_ext_add_sinks(o, nn_f32(ctx, gs, "sinks"));
    ggml_flash_attn_ext_set_prec(o, GGML_PREC_F32);
    tap_ok(ggml_flash_attn_ext_get_prec(o) == GGML_PREC_F32, "flash_attn_ext precision round trip");
    ops_compute(ctx, o);
    nn_check(o, gs, "full", ATTN_ERR, "flash_attn_ext with softcap, ALiBi, sinks and an f16 mask");

    struct ggml_tensor *k16 = nn_input(ctx, gs, "k", GGML_TYPE_F16, false), *v16 = nn_input(ctx, gs, "v", GGML_TYPE_F16, false);
    o = ggml_flash_attn_ext(ctx, q, k16, v16, mask16,
                            nn_arg(gs, "plain_args", 0), 0.0f, 0.0f);
    ops_compute(ctx, o);
    nn_check(o, gs, "f16", ATTN_F16_ERR, "flash_attn_ext with f16 K and V");

    k16 = nn_input(ctx, gs, "lk", GGML_TYPE_F16, false);
    v16 = nn_input(ctx, gs, "lv", GGML_TYPE_F16, false);
    o = ggml_flash_attn_ext(ctx, nn_f32(ctx, gs, "lq"), k16, v16, nn_input(ctx, gs, "lmask", GGML_TYPE_F16, false), 0.25f, 0.0f,
                            0.0f);
    ops_compute(ctx, o);
    nn_check(o, gs, "long", ATTN_F16_ERR, "flash_attn_ext, 13 queries under a causal mask, one query seeing no key (zeros)");

    /* one K/V batch shared by both query batches: each output batch equals attending alone */
    struct ggml_tensor *k0 = ggml_view_3d(ctx, k, k->ne[0], k->ne[1], k->ne[2], k->nb[1], k->nb[2], 0);
    struct ggml_tensor *v0 = ggml_view_3d(ctx, v, v->ne[0], v->ne[1], v->ne[2], v->nb[1], v->nb[2], 0);
    struct ggml_tensor *qc = nn_f32(ctx, gs, "q");
    struct ggml_tensor *q1 = ggml_view_3d(ctx, qc, qc->ne[0], qc->ne[1], qc->ne[2], qc->nb[1], qc->nb[2], qc->nb[3]);
    struct ggml_tensor *both = ggml_flash_attn_ext(ctx, qc, k0, v0, mask, 0.3f, 0.0f, 0.0f);
    struct ggml_tensor *alone = ggml_flash_attn_ext(ctx, q1, k0, v0, mask, 0.3f, 0.0f, 0.0f);
    if (ops_compute(ctx, both) && ops_compute(ctx, alone)) {
        const float *second = (const float *)both->data + ggml_nelements(alone);
        tap_ok(max_abs_diff(second, (const float *)alone->data, ggml_nelements(alone)) == 0.0,
               "flash_attn_ext broadcasts one K/V batch over two query batches");
    }

    struct ggml_tensor *short_mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, k->ne[1], 3);
    nn_rejects(ggml_flash_attn_ext(ctx, q, k, v, short_mask, 1, 0, 0), GGMLC_ERR_SHAPE, "ggml_flash_attn_ext",
               "a mask with fewer rows than queries");
    nn_rejects(ggml_flash_attn_ext(ctx, q, v, v, NULL, 1, 0, 0), GGMLC_ERR_SHAPE, "ggml_flash_attn_ext",
               "keys of another head size than the queries");
    struct ggml_tensor *k4 = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, k->ne[0], k->ne[1], 4, k->ne[3]);
    nn_rejects(ggml_flash_attn_ext(ctx, q, k4, k4, NULL, 1, 0, 0), GGMLC_ERR_SHAPE, "ggml_flash_attn_ext",
               "6 query heads over 4 kv heads");
    ggml_free(ctx);
    gold_free(gs);
}

/* A Q8_0 tensor of random values and its dequantized f32 twin (the same numbers). */
static void q8_pair(struct ggml_context *ctx, int64_t ne0, int64_t ne1, struct ggml_tensor **q8, struct ggml_tensor **f32) {
    const int64_t n = ne0 * ne1;
    float *x = malloc((size_t)n * sizeof(float));
    test_fill_uniform(x, (size_t)n, -2.0f, 2.0f);
    *q8 = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, ne0, ne1);
    *f32 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ne0, ne1);
    ggml_quantize_chunk(GGML_TYPE_Q8_0, x, (*q8)->data, 0, ne1, ne0, NULL);
    ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float((*q8)->data, (float *)(*f32)->data, n);
    free(x);
}

static void test_flash_attn_quantized_kv(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 9, 2);
    test_fill_uniform((float *)q->data, (size_t)ggml_nelements(q), -1.0f, 1.0f);
    struct ggml_tensor *kq, *kf, *vq, *vf;
    q8_pair(ctx, 64, 21, &kq, &kf);
    q8_pair(ctx, 32, 21, &vq, &vf);
    struct ggml_tensor *oq = ggml_flash_attn_ext(ctx, q, kq, vq, NULL, 0.125f, 0.0f, 0.0f);
    struct ggml_tensor *of = ggml_flash_attn_ext(ctx, q, kf, vf, NULL, 0.125f, 0.0f, 0.0f);
    if (ops_compute(ctx, oq) && ops_compute(ctx, of)) {
        tap_ok(max_abs_diff((const float *)oq->data, (const float *)of->data, (size_t)ggml_nelements(of)) < 1e-6,
               "flash_attn_ext with Q8_0 K/V equals attention over their dequantized values");
    }
    ggml_free(ctx);
}

/* Compare part `part` (0 = dq, 1 = dk, 2 = dv) of a packed flash_attn_back result. */
static void check_packed(struct ggml_tensor *res, struct gold_set *gs, int part, const char *name, const char *what) {
    const struct gold_tensor *g[3] = {gold_get(gs, "bq"), gold_get(gs, "bk"), gold_get(gs, "bvt")};
    size_t off = 0;
    for (int i = 0; i < part; i++) off += GGML_PAD(g[i]->n * sizeof(float), GGML_MEM_ALIGN) / sizeof(float);
    const struct gold_tensor *ref = gold_get(gs, name);
    ok_nmse((const float *)res->data + off, (const float *)ref->data, ref->n, ATTN_ERR, "%s", what);
}

static void test_flash_attn_back(void) {
    struct gold_set *gs = gold_load("nn_attn.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *q = nn_f32(ctx, gs, "bq"), *k = nn_f32(ctx, gs, "bk"), *vt = nn_f32(ctx, gs, "bvt");
    struct ggml_tensor *d = nn_f32(ctx, gs, "bd");
    for (int masked = 0; masked <= 1; masked++) {
        struct ggml_tensor *r = ggml_flash_attn_back(ctx, q, k, vt, d, masked);
        /* 3 threads for 2 heads: one task has no head, and all meet at the kernel's barrier */
        struct ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, r);
        tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 3) == GGML_STATUS_SUCCESS, "flash_attn_back (%s) computes on 3 threads",
               masked ? "causal" : "full");
        const char *tag = masked ? "causal" : "full";
        char name[32], what[96];
        static const char *const parts[3] = {"bdq_", "bdk_", "bdvt_"};
        for (int p = 0; p < 3; p++) {
            snprintf(name, sizeof name, "%s%s", parts[p], tag);
            snprintf(what, sizeof what, "flash_attn_back %s gradient of %s", tag, p == 0 ? "q" : p == 1 ? "k" : "v");
            check_packed(r, gs, p, name, what);
        }
    }
    nn_rejects(ggml_flash_attn_back(ctx, q, k, k, d, false), GGMLC_ERR_SHAPE, "ggml_flash_attn_back", "v not transposed");
    ggml_free(ctx);
    gold_free(gs);
}

/* More queries than one block and more keys than one tile of the CPU kernel (37 queries,
 * 75 keys): tiles skipped for a whole block, a partial last tile, and (softcap, ALiBi,
 * sinks) a running maximum raised from tile to tile; F16 K, V and mask as llama.cpp has;
 * and head sizes its vectors do not divide, in a last block padded with empty queries. */
static void test_flash_attn_tiles(void) {
    struct gold_set *gs = gold_load("attn_tiles.gold");
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *q = nn_f32(ctx, gs, "tq"), *mask = nn_input(ctx, gs, "tmask", GGML_TYPE_F16, false);
    struct ggml_tensor *k = nn_input(ctx, gs, "tk", GGML_TYPE_F16, false), *v = nn_input(ctx, gs, "tv", GGML_TYPE_F16, false);
    struct ggml_tensor *o = ggml_flash_attn_ext(ctx, q, k, v, mask, nn_arg(gs, "causal_args", 0), 0.0f, 0.0f);
    ops_compute(ctx, o);
    nn_check(o, gs, "causal", ATTN_F16_ERR, "flash_attn_ext, 37 queries over 75 cached keys, causal, f16 K/V");
    o = ggml_flash_attn_ext(ctx, q, k, v, mask, nn_arg(gs, "full_args", 0), nn_arg(gs, "full_args", 1),
                            nn_arg(gs, "full_args", 2));
    ggml_flash_attn_ext_add_sinks(o, nn_f32(ctx, gs, "tsinks"));
    ops_compute(ctx, o);
    nn_check(o, gs, "full", ATTN_ERR, "flash_attn_ext, 37 queries over 75 keys with softcap, ALiBi and sinks");
    q = nn_f32(ctx, gs, "oq"), mask = nn_input(ctx, gs, "omask", GGML_TYPE_F16, false);
    k = nn_f32(ctx, gs, "ok"), v = nn_f32(ctx, gs, "ov"); /* f32: not ggml's f16 path (ops-attn-match.c) */
    o = ggml_flash_attn_ext(ctx, q, k, v, mask, nn_arg(gs, "odd_args", 0), 0.0f, 0.0f);
    ops_compute(ctx, o);
    nn_check(o, gs, "odd", ATTN_ERR, "flash_attn_ext, 38 queries over 70 f32 keys of 20 values, values of 40");
    ggml_free(ctx);
    gold_free(gs);
}

int main(void) {
    test_rope();
    test_flash_attn();
    test_flash_attn_back();
    test_flash_attn_quantized_kv();
    test_flash_attn_tiles();
    return tap_done();
}
