/*
 * test-ggml-compat.c - operator uses that ggml accepts and ggmlc once refused,
 * found by building ggml's own test programs against ggmlc (docs/compatibility.md).
 * Each case runs on the CPU through
 * ggml_graph_compute_with_ctx and is checked against plain C computed here.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggmlc.h"
#include "gguf.h"
#include "testutil.h"

static struct ggml_context *new_ctx(void) { return ggml_init((struct ggml_init_params){16 << 20, NULL, false}); }

static bool compute(struct ggml_context *ctx, struct ggml_tensor *out) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS;
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* ggml_glu of an odd width floors the half: [x0 x1 | g0 g1 | unused]. */
static void test_glu_odd_width(void) {
    enum { W = 7, H = 3, HALF = W / 2 };
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, W, H);
    float av[W * H], out[HALF * H], ref[HALF * H], out_sw[HALF * H], ref_sw[HALF * H];
    test_fill_uniform(av, W * H, -3.0f, 3.0f);
    tensor_set_f32(a, av);
    struct ggml_tensor *y = ggml_swiglu(ctx, a), *ys = ggml_swiglu_swapped(ctx, a);
    bool ok = y && ys && y->ne[0] == HALF && y->ne[1] == H && compute(ctx, y) && compute(ctx, ys);
    tap_ok(ok, "swiglu of width %d gives width %d (the last column unused), as in ggml", W, HALF);
    if (ok) {
        tensor_get_f32(y, out);
        tensor_get_f32(ys, out_sw);
        for (int r = 0; r < H; r++)
            for (int i = 0; i < HALF; i++) {
                ref[r * HALF + i] = silu(av[r * W + i]) * av[r * W + HALF + i];
                ref_sw[r * HALF + i] = silu(av[r * W + HALF + i]) * av[r * W + i];
            }
        tap_ok(max_abs_diff(out, ref, HALF * H) < 1e-5, "swiglu values of the odd width match plain C");
        tap_ok(max_abs_diff(out_sw, ref_sw, HALF * H) < 1e-5, "swiglu_swapped values of the odd width match plain C");
    } else {
        tap_ok(false, "swiglu values of the odd width");
        tap_ok(false, "swiglu_swapped values of the odd width");
    }
    ggml_free(ctx);
}

/* ggml_get_rows_back with a gradient of more rows than indices: row i goes to index i. */
static void test_get_rows_back_extra_rows(void) {
    enum { E = 5, ROWS = 6, N_IDX = 3, N_GRAD = 4 };
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *dy = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, E, N_GRAD);
    struct ggml_tensor *idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, N_IDX);
    struct ggml_tensor *like = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, E, ROWS);
    const int32_t iv[N_IDX] = {4, 1, 4};
    memcpy(idx->data, iv, sizeof iv);
    float dv[E * N_GRAD], out[E * ROWS], ref[E * ROWS] = {0};
    test_fill_uniform(dv, E * N_GRAD, -2.0f, 2.0f);
    tensor_set_f32(dy, dv);
    struct ggml_tensor *r = ggml_get_rows_back(ctx, dy, idx, like);
    bool ok = r && compute(ctx, r);
    tap_ok(ok, "get_rows_back of a [%d, %d] gradient with %d indices is accepted, as in ggml", E, N_GRAD, N_IDX);
    for (int i = 0; i < N_IDX; i++)
        for (int e = 0; e < E; e++) ref[iv[i] * E + e] += dv[i * E + e];
    if (ok) tensor_get_f32(r, out);
    tap_ok(ok && max_abs_diff(out, ref, E * ROWS) < 1e-6, "the rows past the last index are unused; repeated indices add up");
    ggml_free(ctx);
}

/* ggml_set of I32 into I32 (ggml's set copies integer tables too). */
static void test_set_i32(void) {
    enum { W = 6, H = 4, BW = 3, BH = 2 };
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, W, H);
    struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, BW, BH);
    int32_t *av = a->data, *bv = b->data;
    for (int i = 0; i < W * H; i++) av[i] = 1000 + i;
    for (int i = 0; i < BW * BH; i++) bv[i] = -(i + 1) * 7;
    const size_t offset = (size_t)(1 * W + 2) * sizeof(int32_t); /* row 1, column 2 */
    struct ggml_tensor *r = ggml_set_2d(ctx, a, b, a->nb[1], offset);
    bool ok = r && r->type == GGML_TYPE_I32 && compute(ctx, r);
    tap_ok(ok, "set_2d of an I32 [%d, %d] into an I32 [%d, %d] is accepted", BW, BH, W, H);
    bool same = ok;
    for (int y = 0; ok && y < H; y++)
        for (int x = 0; x < W; x++) {
            const bool inside = y >= 1 && y < 1 + BH && x >= 2 && x < 2 + BW;
            const int32_t want = inside ? bv[(y - 1) * BW + (x - 2)] : 1000 + y * W + x;
            same = same && ((const int32_t *)r->data)[y * W + x] == want;
        }
    tap_ok(same, "the I32 values land at the offset, the rest is a's copy, a is unchanged");
    tap_ok(av[W + 2] == 1000 + W + 2, "a itself is not modified by the non-inplace set");
    ggml_free(ctx);
}

/* gguf_write_to_file_ptr / gguf_init_from_file_ptr: a GGUF written after a 5-byte prefix into a
 * stream, read back from the stream position where it starts. */
static void test_gguf_file_ptr(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    ggml_set_name(t, "weights");
    const float tv[6] = {1.5f, -2.0f, 3.25f, 0.0f, -7.5f, 1e-3f};
    memcpy(t->data, tv, sizeof tv);
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_u32(g, "compat.answer", 42);
    gguf_set_val_str(g, "compat.name", "file-ptr");
    gguf_add_tensor(g, t);
    FILE *f = tmpfile();
    const bool written = f && fwrite("xxxxx", 1, 5, f) == 5 && gguf_write_to_file_ptr(g, f, false);
    tap_ok(written, "gguf_write_to_file_ptr writes into an open stream after a prefix");
    struct ggml_context *data_ctx = NULL;
    struct gguf_context *r = NULL;
    if (written && fseek(f, 5, SEEK_SET) == 0)
        r = gguf_init_from_file_ptr(f, (struct gguf_init_params){false, &data_ctx});
    const int64_t k = r ? gguf_find_key(r, "compat.answer") : -1, s = r ? gguf_find_key(r, "compat.name") : -1;
    tap_ok(r && k >= 0 && gguf_get_val_u32(r, k) == 42 && s >= 0 && strcmp(gguf_get_val_str(r, s), "file-ptr") == 0,
           "gguf_init_from_file_ptr reads the keys back from the stream position");
    struct ggml_tensor *rt = data_ctx ? ggml_get_tensor(data_ctx, "weights") : NULL;
    tap_ok(rt && rt->ne[0] == 3 && rt->ne[1] == 2 && memcmp(rt->data, tv, sizeof tv) == 0,
           "and the tensor with its data into the ggml context");
    gguf_free(r);
    ggml_free(data_ctx);

    /* a stream positioned inside the prefix is not a GGUF file: NULL, an error, no context */
    data_ctx = (struct ggml_context *)&data_ctx; /* must be reset, never left dangling */
    r = NULL;
    if (written && fseek(f, 2, SEEK_SET) == 0) r = gguf_init_from_file_ptr(f, (struct gguf_init_params){false, &data_ctx});
    tap_ok(written && !r && !data_ctx && ggmlc_last_status() != GGMLC_OK, "a stream not at a GGUF header is rejected (%s)",
           ggmlc_last_error());
    tap_ok(!gguf_init_from_file_ptr(NULL, (struct gguf_init_params){true, NULL}) && !gguf_write_to_file_ptr(g, NULL, true),
           "a NULL stream is an error, not a crash");
    if (f) fclose(f);
    gguf_free(g);
    ggml_free(ctx);
}

/* A strict reader over a buffer, as ggml's test writes it: a read crossing the end fails. */
struct mem_reader {
    const uint8_t *data;
    size_t size;
    size_t max_read; /* the largest read seen */
};
static size_t mem_read(void *userdata, void *output, uint64_t offset, size_t len) {
    struct mem_reader *r = userdata;
    if (offset > r->size || len > r->size - offset) return 0;
    memcpy(output, r->data + offset, len);
    if (len > r->max_read) r->max_read = len;
    return len;
}

/* gguf_init_from_buffer and gguf_init_from_callback on the bytes of a written file. */
static void test_gguf_buffer_callback(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000); /* 4000 data bytes: several reads */
    ggml_set_name(t, "big");
    for (int i = 0; i < 1000; i++) ((float *)t->data)[i] = (float)i * 0.5f - 7.0f;
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "compat.kind", "buffer");
    gguf_add_tensor(g, t);
    FILE *f = tmpfile();
    uint8_t bytes[8192];
    size_t n = 0;
    if (f && gguf_write_to_file_ptr(g, f, false) && fseek(f, 0, SEEK_SET) == 0) n = fread(bytes, 1, sizeof bytes, f);
    if (f) fclose(f);
    struct ggml_context *dctx = NULL;
    struct gguf_context *r = gguf_init_from_buffer(bytes, n, (struct gguf_init_params){false, &dctx});
    struct ggml_tensor *rt = dctx ? ggml_get_tensor(dctx, "big") : NULL;
    struct ggml_tensor *blob = dctx ? ggml_get_first_tensor(dctx) : NULL;
    tap_ok(n > 4000 && r && rt && memcmp(rt->data, t->data, 4000) == 0 && blob &&
               strcmp(ggml_get_name(blob), "GGUF tensor data binary blob") == 0,
           "gguf_init_from_buffer reads keys and data (%zu bytes); the first tensor is ggml's data blob", n);
    gguf_free(r);
    ggml_free(dctx);

    struct mem_reader mr = {bytes, n, 0};
    dctx = NULL;
    r = gguf_init_from_callback(mem_read, &mr, 1024, 4ull << 30, (struct gguf_init_params){false, &dctx});
    rt = dctx ? ggml_get_tensor(dctx, "big") : NULL;
    const int64_t k = r ? gguf_find_key(r, "compat.kind") : -1;
    tap_ok(r && rt && memcmp(rt->data, t->data, 4000) == 0 && k >= 0 && strcmp(gguf_get_val_str(r, k), "buffer") == 0 &&
               mr.max_read <= 1024,
           "gguf_init_from_callback (strict reader, 1 KiB reads, 4 GiB bound) reads it without reading past the end");
    gguf_free(r);
    ggml_free(dctx);

    mr = (struct mem_reader){bytes, n - 10, 0}; /* the last tensor bytes are missing */
    dctx = (struct ggml_context *)&mr;
    r = gguf_init_from_callback(mem_read, &mr, 0, n, (struct gguf_init_params){false, &dctx});
    tap_ok(!r && !dctx && ggmlc_last_status() == GGMLC_ERR_FORMAT, "a truncated source is an error: %s", ggmlc_last_error());
    mr = (struct mem_reader){bytes, n - 10, 0};
    r = gguf_init_from_callback(mem_read, &mr, 0, n, (struct gguf_init_params){true, NULL});
    tap_ok(r && gguf_get_n_tensors(r) == 1, "without the data only the metadata is read, so the same source is accepted");
    gguf_free(r);
    tap_ok(!gguf_init_from_buffer(bytes, 20, (struct gguf_init_params){true, NULL}) &&
               !gguf_init_from_callback(NULL, NULL, 0, 0, (struct gguf_init_params){true, NULL}),
           "a 20-byte buffer and a NULL callback are errors, not crashes");
    gguf_free(g);
    ggml_free(ctx);
}

/* As in ggml, a file's metadata can be read without its data section (a file written with
 * only_meta); the data must be there, padding included, only when it is read. */
static void test_gguf_meta_only(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3);
    ggml_set_name(t, "w");
    struct gguf_context *g = gguf_init_empty();
    gguf_add_tensor(g, t);
    FILE *f = tmpfile();
    const bool written = f && gguf_write_to_file_ptr(g, f, true);
    struct ggml_context *dctx = NULL;
    struct gguf_context *r = NULL;
    if (written) {
        rewind(f);
        r = gguf_init_from_file_ptr(f, (struct gguf_init_params){true, &dctx});
    }
    tap_ok(r && gguf_get_n_tensors(r) == 1 && dctx && ggml_get_tensor(dctx, "w") && ggml_get_tensor(dctx, "w")->ne[1] == 3,
           "a metadata-only file reads with no_alloc (tensor shapes, no data)");
    gguf_free(r);
    ggml_free(dctx);
    dctx = NULL;
    r = NULL;
    if (written) {
        rewind(f);
        r = gguf_init_from_file_ptr(f, (struct gguf_init_params){false, &dctx});
    }
    tap_ok(written && !r && !dctx, "asking for its data fails: %s", ggmlc_last_error());
    if (f) fclose(f);
    gguf_free(g);
    ggml_free(ctx);
}

static int n_logged;
static void count_log(enum ggml_log_level level, const char *text, void *user_data) {
    (void)level;
    (void)text;
    n_logged += *(int *)user_data;
}

/* ggml_log_get returns what ggml_log_set installed, so a logger can be saved and restored. */
static void test_log_get(void) {
    ggml_log_callback saved_cb = NULL, cb = NULL;
    void *saved_ud = NULL, *ud = NULL;
    ggml_log_get(&saved_cb, &saved_ud);
    int weight = 3;
    ggml_log_set(count_log, &weight);
    ggml_log_get(&cb, &ud);
    tap_ok(cb == count_log && ud == &weight, "ggml_log_get returns the callback and user data ggml_log_set installed");
    struct ggml_context *ctx = new_ctx();
    n_logged = 0;
    (void)ggml_add(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3), ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2)); /* logs an error */
    tap_ok(n_logged >= 3, "an operator error is logged through it (%d)", n_logged);
    ggml_log_set(saved_cb, saved_ud);
    ggml_log_get(&cb, &ud);
    tap_ok(cb == saved_cb && ud == saved_ud && saved_cb != NULL, "the saved logger is put back (never a NULL callback)");
    ggml_log_get(NULL, NULL); /* NULL out-pointers are allowed */
    ggml_free(ctx);
}

/* ggml_rope_set_offset: only dims [offs, offs + n_dims) turn; the rest pass through.
 * Reference: pair k of the range turns by pos * base^(-2k/n_dims), pairs adjacent (normal)
 * or half the range apart (NeoX). */
static void rope_offset_reference(const float *x, float *y, int64_t ne0, int offs, int n_dims,
                                  bool neox, int32_t pos) {
    memcpy(y, x, sizeof(float) * (size_t)ne0);
    for (int k = 0; k < n_dims / 2; k++) {
        const double theta = pos * pow(10000.0, -2.0 * k / n_dims);
        const int a = offs + (neox ? k : 2 * k), b = a + (neox ? n_dims / 2 : 1);
        y[a] = (float)(x[a] * cos(theta) - x[b] * sin(theta));
        y[b] = (float)(x[a] * sin(theta) + x[b] * cos(theta));
    }
}

static void test_rope_offset_mode(bool neox) {
    enum { NE0 = 10, HEADS = 2, TOKENS = 3, N_DIMS = 4, OFFS = 4 };
    const int32_t pos[TOKENS] = {0, 1, 5};
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, NE0, HEADS, TOKENS);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, TOKENS);
    test_fill_uniform(x->data, NE0 * HEADS * TOKENS, -1.0f, 1.0f);
    memcpy(p->data, pos, sizeof pos);
    const int mode = neox ? GGML_ROPE_TYPE_NEOX : GGML_ROPE_TYPE_NORMAL;
    struct ggml_tensor *r = ggml_rope_ext(ctx, x, p, NULL, N_DIMS, mode, 0, 10000.0f, 1.0f, 0.0f,
                                          1.0f, 0.0f, 0.0f);
    struct ggml_tensor *y = ggml_rope_set_offset(r, OFFS);
    float ref[NE0 * HEADS * TOKENS];
    for (int row = 0; row < HEADS * TOKENS; row++)
        rope_offset_reference((float *)x->data + row * NE0, ref + row * NE0, NE0, OFFS, N_DIMS, neox,
                              pos[row / HEADS]);
    const bool ran = y == r && compute(ctx, y);
    tap_ok(ran && max_abs_diff(y->data, ref, NE0 * HEADS * TOKENS) < 1e-5,
           "rope_set_offset (%s): dims %d..%d turn, the others pass through", neox ? "neox" : "normal",
           OFFS, OFFS + N_DIMS - 1);
    ggml_free(ctx);
}

static void test_rope_offset(void) {
    test_rope_offset_mode(false);
    test_rope_offset_mode(true);
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 1, 2);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    struct ggml_tensor *r = ggml_rope_ext(ctx, x, p, NULL, 4, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    tap_ok(r != NULL && ggml_rope_set_offset(r, 3) == NULL && ggml_rope_set_offset(r, 6) == NULL &&
               ggml_rope_set_offset(x, 0) == NULL,
           "rope_set_offset refuses an odd offset, one past ne[0] and a node that is no rope");
    ggml_free(ctx);
}

/* A rope of n_dims 0 (llama.cpp's probe for where frequency factors may live) turns nothing:
 * its result is its input. */
static void test_rope_zero_dims(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor *f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    test_fill_uniform(x->data, 8 * 2 * 3, -1.0f, 1.0f);
    test_fill_uniform(f->data, 4, 0.5f, 2.0f);
    for (int i = 0; i < 3; i++) ((int32_t *)p->data)[i] = 7 * i + 1;
    struct ggml_tensor *r = ggml_rope_ext(ctx, x, p, f, 0, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    const bool ran = r != NULL && compute(ctx, r);
    tap_ok(ran && max_abs_diff(r->data, x->data, 8 * 2 * 3) == 0.0,
           "rope_ext with n_dims 0 is accepted and passes every dimension through");
    tap_ok(ggml_rope_ext(ctx, x, p, NULL, -2, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f) == NULL,
           "rope_ext refuses a negative n_dims");
    ggml_free(ctx);
}

/* ggml_rope_multi with a plain mode (NeoX here) is the plain rope: its sections are unused. */
static void test_rope_multi_plain_mode(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    test_fill_uniform(x->data, 8 * 2 * 3, -1.0f, 1.0f);
    for (int i = 0; i < 3; i++) ((int32_t *)p->data)[i] = 3 * i + 2;
    int sections[GGML_MROPE_SECTIONS] = {2, 1, 1, 0};
    struct ggml_tensor *m = ggml_rope_multi(ctx, x, p, NULL, 8, sections, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f,
                                            0.0f, 1.0f, 0.0f, 0.0f);
    struct ggml_tensor *e = ggml_rope_ext(ctx, x, p, NULL, 8, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 1.0f,
                                          0.0f, 0.0f);
    const bool ran = m && e && compute(ctx, m) && compute(ctx, e);
    tap_ok(ran && max_abs_diff(m->data, e->data, 8 * 2 * 3) == 0.0,
           "rope_multi with the NeoX mode equals rope_ext with it");
    ggml_free(ctx);
}

/* A set_rows result whose destination is a fresh tensor of the graph's context, computed
 * through ggml_gallocr: the destination is allocated with the graph (it is the node's src[2],
 * as in ggml) and the written rows read back from the result. */
static void test_set_rows_gallocr(void) {
    enum { COLS = 4, ROWS = 6, WRITTEN = 2 };
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *dst = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, COLS, ROWS);
    struct ggml_tensor *rows = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, COLS, WRITTEN);
    struct ggml_tensor *idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, WRITTEN);
    ggml_set_input(rows);
    ggml_set_input(idx);
    struct ggml_tensor *r = ggml_set_rows(ctx, dst, rows, idx);
    ggml_set_output(r);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, r);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    const float vals[COLS * WRITTEN] = {1, 2, 3, 4, -5, -6, -7, -8};
    const int32_t at[WRITTEN] = {4, 1};
    bool ok = r && ggml_gallocr_alloc_graph(galloc, gf);
    if (ok) {
        ggml_backend_tensor_set(rows, vals, 0, sizeof vals);
        ggml_backend_tensor_set(idx, at, 0, sizeof at);
        ok = ggml_backend_graph_compute(cpu, gf) == GGML_STATUS_SUCCESS;
    }
    float got[COLS * ROWS] = {0};
    if (ok) ggml_backend_tensor_get(r, got, 0, sizeof got);
    for (int w = 0; ok && w < WRITTEN; w++)
        ok = memcmp(got + at[w] * COLS, vals + w * COLS, COLS * sizeof(float)) == 0;
    tap_ok(ok, "set_rows into a fresh destination computes through ggml_gallocr (rows 4 and 1 written)");
    ggml_gallocr_free(galloc);
    ggml_backend_free(cpu);
    ggml_free(ctx);
}

/* flash_attn_ext accepts K/V of any block type, as ggml does; the CPU declines a type it
 * cannot dequantize (IQ2_XXS, a grid codebook type) in supports_op instead of the
 * constructor returning NULL. */
static void test_flash_attn_block_kv(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 2, 4);
    struct ggml_tensor *k = ggml_new_tensor_3d(ctx, GGML_TYPE_IQ2_XXS, 256, 96, 4);
    struct ggml_tensor *v = ggml_new_tensor_3d(ctx, GGML_TYPE_IQ2_XXS, 256, 96, 4);
    struct ggml_tensor *kq8 = ggml_new_tensor_3d(ctx, GGML_TYPE_Q8_0, 256, 96, 4);
    struct ggml_tensor *a = ggml_flash_attn_ext(ctx, q, k, v, NULL, 0.1f, 0.0f, 0.0f);
    struct ggml_tensor *b = ggml_flash_attn_ext(ctx, q, kq8, kq8, NULL, 0.1f, 0.0f, 0.0f);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    tap_ok(a != NULL && b != NULL && cpu != NULL && !ggml_backend_supports_op(cpu, a) &&
               ggml_backend_supports_op(cpu, b),
           "flash_attn_ext with IQ2_XXS K/V is built; the CPU declines it and takes Q8_0");
    if (cpu) ggml_backend_free(cpu);
    ggml_free(ctx);
}

int main(void) {
    test_seed(20261129);
    test_glu_odd_width();
    test_get_rows_back_extra_rows();
    test_set_i32();
    test_gguf_file_ptr();
    test_log_get();
    test_gguf_buffer_callback();
    test_gguf_meta_only();
    test_rope_offset();
    test_rope_zero_dims();
    test_set_rows_gallocr();
    test_rope_multi_plain_mode();
    test_flash_attn_block_kv();
    return tap_done();
}
