/*
 * test-gguf-corpus.c - damaged GGUF files for test-gguf: a small valid
 * file is built byte by byte with one field changed at a time, plus
 * truncations at every byte and random byte flips of a real file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "gguf.h"
#include "testutil.h"

void test_damaged_files(const char *dir);

struct buf {
    uint8_t data[4096];
    size_t n;
};

static void put(struct buf *b, const void *p, size_t n) {
    memcpy(b->data + b->n, p, n);
    b->n += n;
}
static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(struct buf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }

/* The fields of the small file that a case may change. */
struct spec {
    char     magic[5];
    uint32_t version;
    uint64_t n_tensors, n_kv;
    uint64_t key_len;        /* length field of the first key (its bytes stay "general.name") */
    uint32_t kv_type;        /* type of the first pair */
    uint32_t arr_type;       /* element type of the array pair */
    uint64_t arr_n;          /* element count of the array pair */
    uint32_t alignment_type; /* type of general.alignment */
    uint32_t alignment;
    const char *second_key;  /* key of the array pair */
    const char *name_b;      /* name of the second tensor */
    uint32_t n_dims_b;
    int64_t  ne0_b;
    uint32_t type_b;
    uint64_t offset_b;
    size_t   data_bytes;     /* bytes of tensor data actually present */
};

static struct spec valid_spec(void) {
    return (struct spec){"GGUF", 3, 2, 3, 12, GGUF_TYPE_STRING, GGUF_TYPE_INT32, 3, GGUF_TYPE_UINT32, 32,
                         "tiny.arr", "t.b", 2, 32, GGML_TYPE_Q8_0, 32, 96 /* t.b's 34 bytes at 32, padded to 32 */};
}

/* Header; pairs general.name (string), general.alignment (u32), tiny.arr (3 x i32); tensors
 * t.a (f32 4x2, offset 0) and t.b (q8_0 32x1, offset 32); then data_bytes of data. */
static size_t build(const struct spec *s, struct buf *b) {
    b->n = 0;
    put(b, s->magic, 4);
    put_u32(b, s->version);
    put_u64(b, s->n_tensors);
    put_u64(b, s->n_kv);
    put_u64(b, s->key_len);
    put(b, "general.name", 12);
    put_u32(b, s->kv_type);
    put_str(b, "tiny");
    put_str(b, GGUF_KEY_GENERAL_ALIGNMENT);
    put_u32(b, s->alignment_type);
    put_u32(b, s->alignment);
    put_str(b, s->second_key);
    put_u32(b, GGUF_TYPE_ARRAY);
    put_u32(b, s->arr_type);
    put_u64(b, s->arr_n);
    for (int i = 0; i < 3; i++) put_u32(b, (uint32_t)(i + 1));
    put_str(b, "t.a");
    put_u32(b, 2);
    put_u64(b, 4);
    put_u64(b, 2);
    put_u32(b, GGML_TYPE_F32);
    put_u64(b, 0);
    put_str(b, s->name_b);
    put_u32(b, s->n_dims_b);
    put_u64(b, (uint64_t)s->ne0_b);
    for (uint32_t d = 1; d < s->n_dims_b && d < 8; d++) put_u64(b, 1);
    put_u32(b, s->type_b);
    put_u64(b, s->offset_b);
    const size_t meta_end = b->n;
    while (b->n % 32) b->data[b->n++] = 0;
    for (size_t i = 0; i < s->data_bytes; i++) b->data[b->n++] = (uint8_t)(i * 13);
    return meta_end;
}

static bool rejected(const char *dir, const void *data, size_t n, const char *what, bool quiet) {
    char path[512];
    snprintf(path, sizeof path, "%s/damaged.gguf", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) return false;
    ggmlc_clear_error();
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    const bool ok = g == NULL && ctx == NULL && ggmlc_last_status() == GGMLC_ERR_FORMAT;
    if (!quiet || !ok) tap_ok(ok, "%s is rejected: %s", what, ggmlc_last_error());
    gguf_free(g);
    ggml_free(ctx);
    return ok;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) { (void)level; (void)text; (void)user; }

static void field_cases(const char *dir) {
    struct buf b;
    struct spec s = valid_spec();
    build(&s, &b);
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    FILE *f = fopen(path, "wb");
    fwrite(b.data, 1, b.n, f);
    fclose(f);
    struct ggml_context *ctx = NULL;
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    tap_ok(g && gguf_get_n_tensors(g) == 2 && ctx && ggml_get_tensor(ctx, "t.b") &&
           ((int8_t *)ggml_get_tensor(ctx, "t.b")->data)[2] == (int8_t)(34 * 13),
           "the undamaged hand-built file loads: %s", g ? "ok" : ggmlc_last_error());
    gguf_free(g);
    ggml_free(ctx);

#define CASE(field, value, what) do { s = valid_spec(); s.field = value; build(&s, &b); rejected(dir, b.data, b.n, what, false); } while (0)
    CASE(magic[0], 'X', "a bad magic");
    CASE(version, 1, "version 1");
    CASE(version, 4, "version 4");
    CASE(version, 0x03000000u, "a big-endian version");
    CASE(n_kv, 1ull << 40, "a key-value count of 2^40");
    CASE(n_kv, UINT64_MAX, "a negative key-value count");
    CASE(n_tensors, 1ull << 40, "a tensor count of 2^40");
    CASE(n_tensors, 3, "one tensor info too many");
    CASE(n_kv, 4, "one pair too many");
    CASE(key_len, 1ull << 62, "a key length of 2^62");
    CASE(key_len, UINT64_MAX, "a key length of 2^64-1");
    CASE(kv_type, 13, "an unknown value type");
    CASE(kv_type, 0x80000000u, "a negative value type");
    CASE(arr_type, GGUF_TYPE_ARRAY, "an array of arrays");
    CASE(arr_type, 99, "an unknown array element type");
    CASE(arr_n, 1ull << 61, "an array count of 2^61 (overflows the byte size)");
    CASE(arr_n, 1000, "an array count past the end of the file");
    CASE(alignment, 48, "an alignment that is not a power of two");
    CASE(alignment, 0, "an alignment of zero");
    CASE(alignment_type, GGUF_TYPE_INT32, "an alignment of type i32");
    CASE(second_key, "general.alignment", "a duplicate key");
    CASE(name_b, "t.a", "a duplicate tensor name");
    CASE(name_b, "", "an empty tensor name");
    static char long_name[GGML_MAX_NAME + 1]; /* one byte more than a tensor name holds */
    memset(long_name, 'n', GGML_MAX_NAME);
    CASE(name_b, long_name, "a tensor name of GGML_MAX_NAME bytes (no room for the NUL)");
    CASE(n_dims_b, 5, "5 dimensions");
    CASE(n_dims_b, 0xffffffffu, "2^32-1 dimensions");
    CASE(ne0_b, 0, "a zero dimension");
    CASE(ne0_b, -32, "a negative dimension");
    CASE(ne0_b, 33, "a row that is not whole q8_0 blocks");
    CASE(ne0_b, INT64_MAX - 31, "a dimension of 2^63-32");
    s = valid_spec();
    s.type_b = GGML_TYPE_F32;
    s.ne0_b = 1ll << 62; /* 4 bytes each: 2^64 bytes, zero after wrapping around */
    build(&s, &b);
    rejected(dir, b.data, b.n, "an f32 row of 2^62 values (byte size wraps to 0)", false);
    CASE(type_b, 4, "the removed type id 4");
    CASE(type_b, 40, "type id 40");
    CASE(type_b, 0xffffffffu, "type id -1");
    CASE(offset_b, 33, "a misaligned tensor offset");
    CASE(offset_b, 0, "tensor data overlapping another tensor");
    CASE(offset_b, 64, "tensor data running past the end of the file");
    CASE(offset_b, UINT64_MAX - 31, "an offset near 2^64");
    CASE(data_bytes, 60, "a data section 6 bytes short");
    CASE(data_bytes, 95, "a data section without the last byte of padding (ggml reads the padded section)");
#undef CASE
    /* a tensor name with a NUL inside */
    s = valid_spec();
    s.name_b = "t\x01q";
    build(&s, &b);
    uint8_t *p = memmem(b.data, b.n, "t\x01q", 3);
    if (p) p[1] = 0;
    rejected(dir, b.data, b.n, "a tensor name with a NUL byte inside", false);
}

/* Cut the file at every byte before the end of its tensor data. */
static void truncations(const char *dir, const uint8_t *data, size_t data_end, const char *what) {
    size_t failures = 0;
    for (size_t cut = 0; cut < data_end; cut++) {
        char name[96];
        snprintf(name, sizeof name, "%s cut at byte %zu", what, cut);
        failures += !rejected(dir, data, cut, name, true);
    }
    tap_ok(failures == 0, "%s truncated at each of its %zu bytes: every one rejected", what, data_end);
}

/* Flip random bytes of the metadata: any outcome but a crash is fine, and a file that loads must be sane. */
static void byte_flips(const char *dir, const uint8_t *data, size_t n, size_t meta) {
    uint8_t *copy = malloc(n);
    int loaded = 0, refused = 0, insane = 0;
    char path[512];
    snprintf(path, sizeof path, "%s/flipped.gguf", dir);
    test_seed(99);
    for (int trial = 0; trial < 1500; trial++) {
        memcpy(copy, data, n);
        const int flips = 1 + trial % 3;
        for (int k = 0; k < flips; k++) copy[(size_t)test_uniform(0, (float)meta) % meta] ^= (uint8_t)(1 + test_uniform(0, 255));
        FILE *f = fopen(path, "wb");
        fwrite(copy, 1, n, f);
        fclose(f);
        struct ggml_context *ctx = NULL;
        struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
        if (g) {
            loaded++;
            for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) /* touch every byte of every tensor */
                insane += ggml_get_tensor(ctx, gguf_get_tensor_name(g, i)) == NULL;
        } else {
            refused++;
        }
        gguf_free(g);
        ggml_free(ctx);
    }
    free(copy);
    tap_ok(insane == 0 && loaded + refused == 1500, "1500 files with random byte flips: %d loaded, %d rejected, no crash", loaded, refused);
}

void test_damaged_files(const char *dir) {
    ggml_log_set(quiet_log, NULL);
    field_cases(dir);
    struct buf b;
    struct spec s = valid_spec();
    build(&s, &b);
    truncations(dir, b.data, b.n, "the hand-built file");
    char path[512];
    snprintf(path, sizeof path, "%s/round.gguf", dir);
    FILE *f = fopen(path, "rb");
    uint8_t *data = malloc(1 << 16);
    const size_t n = f ? fread(data, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){true, NULL});
    if (g && n > 0) {
        size_t data_end = 0;
        for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
            const size_t end = gguf_get_tensor_offset(g, i) + gguf_get_tensor_size(g, i);
            data_end = end > data_end ? end : data_end;
        }
        truncations(dir, data, gguf_get_data_offset(g) + data_end, "the round-trip file");
        byte_flips(dir, data, n, gguf_get_data_offset(g));
    } else {
        tap_ok(false, "round.gguf is there for the truncation test");
    }
    gguf_free(g);
    free(data);
    ggml_log_set(NULL, NULL);
}
