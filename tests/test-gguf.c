/*
 * test-gguf.c - GGUF reading and writing: a round trip of every value type
 * and of tensors of several types, the context API (replace, remove, copy,
 * retype), and a corpus of damaged files built here (truncations at every
 * byte, oversized counts and lengths, bad types, misaligned, overlapping
 * and out-of-file tensor data, duplicates, random byte flips), each of
 * which must be rejected with an error and never crash.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggmlc.h"
#include "gguf.h"
#include "testutil.h"

static char tmpdir[256];

static const char *tmp_path(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static uint8_t *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n + 1);
    if (fread(p, 1, *n, f) != *n) { free(p); p = NULL; }
    fclose(f);
    return p;
}

/* ------------------------------------------------------- round trip */

static const char *const strings[] = {"alpha", "", "γράμματα", "a much longer string with spaces"};

static void set_all_values(struct gguf_context *g) {
    gguf_set_val_u8(g, "v.u8", 200);
    gguf_set_val_i8(g, "v.i8", -100);
    gguf_set_val_u16(g, "v.u16", 60000);
    gguf_set_val_i16(g, "v.i16", -30000);
    gguf_set_val_u32(g, "v.u32", 4000000000u);
    gguf_set_val_i32(g, "v.i32", -2000000000);
    gguf_set_val_f32(g, "v.f32", 3.25f);
    gguf_set_val_bool(g, "v.bool", true);
    gguf_set_val_str(g, "v.str", "hello gguf");
    gguf_set_val_u64(g, "v.u64", 18000000000000000000ull);
    gguf_set_val_i64(g, "v.i64", -9000000000000000000ll);
    gguf_set_val_f64(g, "v.f64", -1.0 / 3.0);
    const int32_t i32s[5] = {1, -2, 3, -4, 2147483647};
    const float f32s[3] = {0.5f, -INFINITY, 1e-30f};
    const uint8_t bools[4] = {1, 0, 0, 1};
    const uint64_t u64s[2] = {0, UINT64_MAX};
    const double f64s[2] = {M_PI, -0.0};
    const int16_t i16s[3] = {-1, 0, 32767};
    gguf_set_arr_data(g, "a.i32", GGUF_TYPE_INT32, i32s, 5);
    gguf_set_arr_data(g, "a.f32", GGUF_TYPE_FLOAT32, f32s, 3);
    gguf_set_arr_data(g, "a.bool", GGUF_TYPE_BOOL, bools, 4);
    gguf_set_arr_data(g, "a.u64", GGUF_TYPE_UINT64, u64s, 2);
    gguf_set_arr_data(g, "a.f64", GGUF_TYPE_FLOAT64, f64s, 2);
    gguf_set_arr_data(g, "a.i16", GGUF_TYPE_INT16, i16s, 3);
    gguf_set_arr_data(g, "a.empty", GGUF_TYPE_UINT8, NULL, 0);
    gguf_set_arr_str(g, "a.str", (const char **)strings, 4);
}

static void check_all_values(const struct gguf_context *g, const char *when) {
#define KEY(k) gguf_find_key(g, k)
    tap_ok(gguf_get_val_u8(g, KEY("v.u8")) == 200 && gguf_get_val_i8(g, KEY("v.i8")) == -100 &&
           gguf_get_val_u16(g, KEY("v.u16")) == 60000 && gguf_get_val_i16(g, KEY("v.i16")) == -30000,
           "%s: u8, i8, u16, i16 values", when);
    tap_ok(gguf_get_val_u32(g, KEY("v.u32")) == 4000000000u && gguf_get_val_i32(g, KEY("v.i32")) == -2000000000 &&
           gguf_get_val_f32(g, KEY("v.f32")) == 3.25f && gguf_get_val_bool(g, KEY("v.bool")),
           "%s: u32, i32, f32, bool values", when);
    tap_ok(gguf_get_val_u64(g, KEY("v.u64")) == 18000000000000000000ull &&
           gguf_get_val_i64(g, KEY("v.i64")) == -9000000000000000000ll && gguf_get_val_f64(g, KEY("v.f64")) == -1.0 / 3.0,
           "%s: u64, i64, f64 values", when);
    const char *s = gguf_get_val_str(g, KEY("v.str"));
    tap_ok(s && strcmp(s, "hello gguf") == 0 && gguf_get_kv_type(g, KEY("v.str")) == GGUF_TYPE_STRING, "%s: string value", when);
    const int64_t ai = KEY("a.i32");
    const int32_t *i32s = gguf_get_arr_data(g, ai);
    tap_ok(gguf_get_kv_type(g, ai) == GGUF_TYPE_ARRAY && gguf_get_arr_type(g, ai) == GGUF_TYPE_INT32 &&
           gguf_get_arr_n(g, ai) == 5 && i32s && i32s[1] == -2 && i32s[4] == 2147483647, "%s: i32 array", when);
    const float *f32s = gguf_get_arr_data(g, KEY("a.f32"));
    const uint8_t *bools = gguf_get_arr_data(g, KEY("a.bool"));
    const uint64_t *u64s = gguf_get_arr_data(g, KEY("a.u64"));
    const double *f64s = gguf_get_arr_data(g, KEY("a.f64"));
    const int16_t *i16s = gguf_get_arr_data(g, KEY("a.i16"));
    tap_ok(f32s && f32s[0] == 0.5f && isinf(f32s[1]) && f32s[2] == 1e-30f && bools && bools[0] == 1 && bools[2] == 0 &&
           u64s && u64s[1] == UINT64_MAX && f64s && f64s[0] == M_PI && signbit(f64s[1]) && i16s && i16s[2] == 32767,
           "%s: f32, bool, u64, f64, i16 arrays", when);
    tap_ok(gguf_get_arr_n(g, KEY("a.empty")) == 0 && gguf_get_arr_type(g, KEY("a.empty")) == GGUF_TYPE_UINT8,
           "%s: empty array", when);
    const int64_t as = KEY("a.str");
    bool strs_ok = gguf_get_arr_type(g, as) == GGUF_TYPE_STRING && gguf_get_arr_n(g, as) == 4;
    for (size_t i = 0; strs_ok && i < 4; i++) strs_ok = strcmp(gguf_get_arr_str(g, as, i), strings[i]) == 0;
    tap_ok(strs_ok, "%s: string array (with an empty and a UTF-8 string)", when);
#undef KEY
}

struct tensor_case {
    const char *name;
    enum ggml_type type;
    int n_dims;
    int64_t ne[4];
};

static const struct tensor_case tensor_cases[] = {
    {"tok_embd.weight", GGML_TYPE_F32, 2, {7, 3, 1, 1}},
    {"norm.weight", GGML_TYPE_F16, 1, {5, 1, 1, 1}},
    {"blk.0.attn_q.weight", GGML_TYPE_Q4_0, 2, {64, 3, 1, 1}},
    {"blk.0.ffn_up.weight", GGML_TYPE_Q4_K, 2, {256, 2, 1, 1}},
    {"blk.0.ffn_down.weight", GGML_TYPE_Q6_K, 2, {256, 1, 1, 1}},
    {"positions", GGML_TYPE_I32, 3, {4, 2, 3, 1}},
    {"blk.0.attn_k.weight", GGML_TYPE_Q8_0, 4, {32, 2, 1, 2}},
};
#define N_TENSORS (int)(sizeof tensor_cases / sizeof tensor_cases[0])

static struct ggml_context *make_tensors(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    for (int i = 0; i < N_TENSORS; i++) {
        const struct tensor_case *tc = &tensor_cases[i];
        struct ggml_tensor *t = ggml_new_tensor(ctx, tc->type, tc->n_dims, tc->ne);
        ggml_set_name(t, tc->name);
        uint8_t *p = t->data;
        for (size_t b = 0; b < ggml_nbytes(t); b++) p[b] = (uint8_t)(b * 31 + i * 7 + 1);
        if (tc->type == GGML_TYPE_F32) for (int64_t e = 0; e < ggml_nelements(t); e++) ((float *)p)[e] = 0.5f * e - 1;
    }
    return ctx;
}

static void test_round_trip(void) {
    struct gguf_context *g = gguf_init_empty();
    set_all_values(g);
    check_all_values(g, "in memory");
    struct ggml_context *src = make_tensors();
    for (struct ggml_tensor *t = ggml_get_first_tensor(src); t; t = ggml_get_next_tensor(src, t)) gguf_add_tensor(g, t);
    tap_ok(gguf_get_n_tensors(g) == N_TENSORS && gguf_get_n_kv(g) == 20, "%d tensors and 20 pairs added", N_TENSORS);
    const char *path = tmp_path("round.gguf");
    tap_ok(gguf_write_to_file(g, path, false), "gguf_write_to_file %s", path);
    const size_t meta = gguf_get_meta_size(g);

    struct ggml_context *ctx = NULL;
    struct gguf_context *r = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    tap_ok(r && ctx, "the written file reads back: %s", r ? "ok" : ggmlc_last_error());
    if (!r || !ctx) return;
    tap_ok(gguf_get_version(r) == 3 && gguf_get_alignment(r) == 32 && gguf_get_data_offset(r) == meta && meta % 32 == 0,
           "version 3, alignment 32, data offset = meta size %zu", meta);
    check_all_values(r, "read back");
    bool order_ok = true;
    for (int64_t i = 0; i < gguf_get_n_kv(r); i++) order_ok &= strcmp(gguf_get_key(r, i), gguf_get_key(g, i)) == 0;
    tap_ok(order_ok && gguf_get_n_kv(r) == gguf_get_n_kv(g), "keys keep their order");
    for (int i = 0; i < N_TENSORS; i++) {
        const struct tensor_case *tc = &tensor_cases[i];
        const int64_t id = gguf_find_tensor(r, tc->name);
        struct ggml_tensor *t = ggml_get_tensor(ctx, tc->name);
        struct ggml_tensor *s = ggml_get_tensor(src, tc->name);
        tap_ok(id == i && t && gguf_get_tensor_type(r, id) == tc->type && gguf_get_tensor_size(r, id) == ggml_nbytes(s) &&
               gguf_get_tensor_offset(r, id) % 32 == 0 && ggml_are_same_shape(t, s) && t->type == tc->type &&
               memcmp(t->data, s->data, ggml_nbytes(s)) == 0,
               "tensor %s (%s, %d-D): info and data survive", tc->name, ggml_type_name(tc->type), tc->n_dims);
    }
    tap_ok(gguf_find_tensor(r, "missing") == -1 && gguf_find_key(r, "missing") == -1, "absent names give -1");
    ggmlc_clear_error();
    tap_ok(gguf_get_val_u32(r, gguf_find_key(r, "v.u8")) == 0 && ggmlc_last_status() == GGMLC_ERR_TYPE,
           "a getter of the wrong type returns 0 with an error: %s", ggmlc_last_error());
    tap_ok(gguf_get_arr_data(r, gguf_find_key(r, "a.str")) == NULL && gguf_get_val_str(r, 1000) == NULL,
           "string arrays have no raw data; out-of-range ids give NULL");
    gguf_free(r);
    ggml_free(ctx);

    /* metadata only: tensors without data */
    ctx = NULL;
    r = gguf_init_from_file(path, (struct gguf_init_params){true, &ctx});
    struct ggml_tensor *t = ctx ? ggml_get_tensor(ctx, "blk.0.ffn_up.weight") : NULL;
    tap_ok(r && t && t->data == NULL && t->ne[0] == 256 && t->ne[1] == 2, "no_alloc gives tensors without data");
    gguf_free(r);
    ggml_free(ctx);

    /* only_meta writes exactly the metadata */
    tap_ok(gguf_write_to_file(g, tmp_path("meta.gguf"), true), "only_meta write");
    size_t n = 0;
    uint8_t *bytes = read_bytes(tmp_path("meta.gguf"), &n);
    uint8_t *mem = malloc(meta);
    gguf_get_meta_data(g, mem);
    tap_ok(bytes && n == meta && memcmp(bytes, mem, meta) == 0, "only_meta file = gguf_get_meta_data (%zu bytes)", n);
    free(bytes);
    free(mem);
    gguf_free(g);
    ggml_free(src);
}

static void test_context_api(void) {
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_u32(g, "a", 1);
    gguf_set_val_str(g, "b", "x");
    gguf_set_val_f32(g, "a", 2.0f);
    tap_ok(gguf_get_n_kv(g) == 2 && gguf_find_key(g, "a") == 1 && gguf_get_kv_type(g, 1) == GGUF_TYPE_FLOAT32,
           "setting an existing key replaces it and moves it to the end");
    tap_ok(gguf_remove_key(g, "b") == 0 && gguf_remove_key(g, "b") == -1 && gguf_get_n_kv(g) == 1, "gguf_remove_key");
    struct gguf_context *h = gguf_init_empty();
    set_all_values(h);
    gguf_set_kv(g, h);
    check_all_values(g, "after gguf_set_kv");
    gguf_free(h);
    tap_ok(strcmp(gguf_type_name(GGUF_TYPE_STRING), "str") == 0 && strcmp(gguf_type_name(GGUF_TYPE_ARRAY), "arr") == 0 &&
           gguf_type_name(GGUF_TYPE_COUNT) == NULL, "gguf_type_name");

    /* alignment and re-typing move the following tensors */
    gguf_set_val_u32(g, GGUF_KEY_GENERAL_ALIGNMENT, 64);
    struct ggml_context *src = make_tensors();
    for (struct ggml_tensor *t = ggml_get_first_tensor(src); t; t = ggml_get_next_tensor(src, t)) gguf_add_tensor(g, t);
    bool aligned = gguf_get_alignment(g) == 64;
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) aligned &= gguf_get_tensor_offset(g, i) % 64 == 0;
    tap_ok(aligned, "general.alignment = 64 aligns every tensor offset to 64");
    gguf_add_tensor(g, ggml_get_first_tensor(src));
    tap_ok(gguf_get_n_tensors(g) == N_TENSORS && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "a duplicate tensor name is refused: %s", ggmlc_last_error());
    const size_t before = gguf_get_tensor_offset(g, 3);
    gguf_set_tensor_type(g, "blk.0.attn_q.weight", GGML_TYPE_F32); /* 64x3 q4_0 (108 B) -> f32 (768 B) */
    tap_ok(gguf_get_tensor_type(g, 2) == GGML_TYPE_F32 && gguf_get_tensor_size(g, 2) == 768 &&
           gguf_get_tensor_offset(g, 3) == gguf_get_tensor_offset(g, 2) + 768 && gguf_get_tensor_offset(g, 3) > before,
           "gguf_set_tensor_type recomputes the following offsets");
    float *f = calloc(64 * 3, sizeof *f);
    for (int i = 0; i < 64 * 3; i++) f[i] = (float)i;
    gguf_set_tensor_data(g, "blk.0.attn_q.weight", f);
    tap_ok(gguf_write_to_file(g, tmp_path("aligned.gguf"), false), "write with alignment 64");
    struct ggml_context *ctx = NULL;
    struct gguf_context *r = gguf_init_from_file(tmp_path("aligned.gguf"), (struct gguf_init_params){false, &ctx});
    struct ggml_tensor *t = ctx ? ggml_get_tensor(ctx, "blk.0.attn_q.weight") : NULL;
    tap_ok(r && gguf_get_alignment(r) == 64 && gguf_get_data_offset(r) % 64 == 0 && t && t->type == GGML_TYPE_F32 &&
           memcmp(t->data, f, 768) == 0, "re-typed tensor data read back at alignment 64");
    gguf_free(r);
    ggml_free(ctx);
    free(f);
    gguf_free(g);
    ggml_free(src);
    struct gguf_context *empty = gguf_init_empty();
    tap_ok(!gguf_write_to_file(empty, "/nonexistent-dir/x.gguf", false) && ggmlc_last_status() == GGMLC_ERR_IO,
           "writing into a missing folder fails: %s", ggmlc_last_error());
    gguf_free(empty);
    tap_ok(gguf_init_from_file(tmp_path("absent.gguf"), (struct gguf_init_params){false, NULL}) == NULL &&
           ggmlc_last_status() == GGMLC_ERR_IO, "a missing file gives an I/O error");
}

/* test-gguf-corpus.c */
void test_damaged_files(const char *dir);
/* test-gguf-hostile.c */
void test_hostile_files(const char *dir);

int main(void) {
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/ggmlc-test-gguf-XXXXXX", base);
    if (!mkdtemp(tmpdir)) return tap_skip_all("cannot create a temporary folder");
    ggml_log_set(NULL, NULL);
    test_round_trip();
    test_context_api();
    test_damaged_files(tmpdir);
    test_hostile_files(tmpdir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) tap_diag("could not remove %s", tmpdir);
    return tap_done();
}
