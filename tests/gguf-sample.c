/*
 * gguf-sample - write the GGUF file that the interoperability and tool
 * tests (test-gguf-interop.sh, test-gguf-tool.sh) check from outside:
 *
 *   gguf-sample FILE
 *   gguf-sample --hostile FILE      keys, values and a tensor name holding terminal
 *                                   escapes, other controls and invalid UTF-8
 *   gguf-sample --tensors N FILE    N tensors of 8 f32 (t.0000000000, ...), written
 *                                   byte by byte: a file to time `ggmlc-gguf info` on
 *
 * Pairs: one of every scalar type, a string, arrays of i32, f32, bool and
 * strings.  Tensors: f32, f16, q4_0, q8_0, q4_K, q6_K and i32, with
 * deterministic values (x_i = sin(0.37 i) * 2, quantized).  The scripts
 * hold the same expectations; keep them in step with this file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "gguf.h"

struct sample_tensor {
    const char *name;
    enum ggml_type type;
    int64_t ne0, ne1;
};

static const struct sample_tensor tensors[] = {
    {"token_embd.weight", GGML_TYPE_F32, 64, 10},
    {"output_norm.weight", GGML_TYPE_F32, 64, 1},
    {"blk.0.attn_q.weight", GGML_TYPE_F16, 64, 64},
    {"blk.0.attn_k.weight", GGML_TYPE_Q4_0, 64, 32},
    {"blk.0.attn_v.weight", GGML_TYPE_Q8_0, 64, 32},
    {"blk.0.ffn_up.weight", GGML_TYPE_Q4_K, 256, 48},
    {"blk.0.ffn_down.weight", GGML_TYPE_Q6_K, 256, 16},
    {"positions", GGML_TYPE_I32, 7, 1},
};

/* Strings a terminal would act on: an escape sequence (red text, clear screen), a bell, a
 * C1 control (U+009B, CSI), a right-to-left override, and bytes that are not UTF-8. */
static int write_hostile(const char *path) {
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "evil.\x1b[31mred\x1b[0m", "value \x1b]0;title\x07 \x1b[2J");
    gguf_set_val_u32(g, "evil.c1.\xc2\x9b" "31m", 1);
    gguf_set_val_u32(g, "evil.bidi.\xe2\x80\xae" "gpj", 2);
    gguf_set_val_u32(g, "evil.bytes.\xff\xfe\xc3", 3);
    gguf_set_arr_str(g, "evil.arr", (const char *[]){"ok", "\x1b[1mbold"}, 2);
    gguf_set_val_str(g, "fine.utf8", "ünïcode");
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 16, NULL, false});
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_name(t, "t.\x1b[5mblink");
    memset(t->data, 0, ggml_nbytes(t));
    gguf_add_tensor(g, t);
    const bool ok = gguf_write_to_file(g, path, false);
    if (!ok) fprintf(stderr, "gguf-sample: %s\n", ggmlc_last_error());
    ggml_free(ctx);
    gguf_free(g);
    return ok ? 0 : 1;
}

static void put_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void put_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }

/* n tensors of 8 f32 (32 bytes: one alignment unit each), their data all zeros. */
static int write_many_tensors(const char *path, long n) {
    FILE *f = fopen(path, "wb");
    if (!f || n < 0) return 1;
    fwrite(GGUF_MAGIC, 1, 4, f);
    put_u32(f, 3);
    put_u64(f, (uint64_t)n);
    put_u64(f, 0);
    long pos = 24;
    char name[32];
    for (long i = 0; i < n; i++) {
        const int len = snprintf(name, sizeof name, "t.%010ld", i);
        put_u64(f, (uint64_t)len);
        fwrite(name, 1, (size_t)len, f);
        put_u32(f, 1);
        put_u64(f, 8);
        put_u32(f, GGML_TYPE_F32);
        put_u64(f, (uint64_t)i * 32);
        pos += 8 + len + 4 + 8 + 4 + 8;
    }
    static const char zeros[32];
    fwrite(zeros, 1, (size_t)((32 - pos % 32) % 32), f);
    for (long i = 0; i < n; i++) fwrite(zeros, 1, 32, f);
    return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--hostile") == 0) return write_hostile(argv[2]);
    if (argc == 4 && strcmp(argv[1], "--tensors") == 0) return write_many_tensors(argv[3], atol(argv[2]));
    if (argc != 2) {
        fprintf(stderr, "usage: gguf-sample FILE | --hostile FILE | --tensors N FILE\n");
        return 2;
    }
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "ggmlc-test");
    gguf_set_val_str(g, "general.name", "interop sample");
    gguf_set_val_u8(g, "test.u8", 250);
    gguf_set_val_i8(g, "test.i8", -7);
    gguf_set_val_u16(g, "test.u16", 65000);
    gguf_set_val_i16(g, "test.i16", -1234);
    gguf_set_val_u32(g, "test.u32", 3000000000u);
    gguf_set_val_i32(g, "test.i32", -123456789);
    gguf_set_val_f32(g, "test.f32", 0.15625f);
    gguf_set_val_bool(g, "test.bool", true);
    gguf_set_val_u64(g, "test.u64", 12345678901234ull);
    gguf_set_val_i64(g, "test.i64", -9876543210ll);
    gguf_set_val_f64(g, "test.f64", 2.718281828459045);
    const int32_t ints[4] = {3, -1, 4, -1};
    const float floats[3] = {0.5f, -2.25f, 1024.0f};
    const uint8_t bools[3] = {1, 0, 1};
    const char *words[3] = {"alpha", "beta", "ünïcode"};
    gguf_set_arr_data(g, "test.arr_i32", GGUF_TYPE_INT32, ints, 4);
    gguf_set_arr_data(g, "test.arr_f32", GGUF_TYPE_FLOAT32, floats, 3);
    gguf_set_arr_data(g, "test.arr_bool", GGUF_TYPE_BOOL, bools, 3);
    gguf_set_arr_str(g, "test.arr_str", words, 3);

    const size_t n_tensors = sizeof tensors / sizeof tensors[0];
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    float *values = malloc(256 * 64 * sizeof *values);
    for (size_t i = 0; i < n_tensors; i++) {
        const struct sample_tensor *s = &tensors[i];
        struct ggml_tensor *t = s->ne1 > 1 ? ggml_new_tensor_2d(ctx, s->type, s->ne0, s->ne1)
                                           : ggml_new_tensor_1d(ctx, s->type, s->ne0);
        ggml_set_name(t, s->name);
        const int64_t n = s->ne0 * s->ne1;
        for (int64_t j = 0; j < n; j++) values[j] = 2.0f * sinf(0.37f * (float)(j + 11 * i));
        if (s->type == GGML_TYPE_I32)
            for (int64_t j = 0; j < n; j++) ((int32_t *)t->data)[j] = (int32_t)(j * j - 5);
        else
            ggml_quantize_chunk(s->type, values, t->data, 0, s->ne1, s->ne0, NULL);
        gguf_add_tensor(g, t);
    }
    const bool ok = gguf_write_to_file(g, argv[1], false);
    if (!ok) fprintf(stderr, "gguf-sample: %s\n", ggmlc_last_error());
    free(values);
    ggml_free(ctx);
    gguf_free(g);
    return ok ? 0 : 1;
}
