/*
 * make-seeds.c - writes the seed files of fuzz/corpus/ that are binary:
 * small model files (two dense layers, with optimizer state; a functional model of two
 * inputs, a shared layer and two outputs with their own losses; copies with a
 * setting out of range), a GGUF file with metadata and tensors and GGUF files of
 * the hostile cases (huge alignment, many keys, a late duplicate, zeros, data cut
 * short, pairs a rewrite sets through their own keys), and IDX pairs and CSV files
 * for fuzz-dataset (one expanding beyond the fuzz target's dataset limit).  Run once
 * by hand from a build folder; its output is committed:
 *
 *   cc -I include fuzz/make-seeds.c -L .libs -lggmlc -lz -lm -o make-seeds && ./make-seeds fuzz/corpus
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "ggmlc-nn.h"
#include "gguf.h"

static void model_seed(const char *dir, bool with_optimizer, const char *name) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){3}, 1);
    ggmlc_model_add(m, ggmlc_dense(4, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(2, GGMLC_ACT_NONE));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.backend = "cpu";
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) fprintf(stderr, "compile: %s\n", ggmlc_last_error());
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-model/%s", dir, name);
    if (ggmlc_model_save(m, path, with_optimizer) != GGMLC_OK) fprintf(stderr, "save: %s\n", ggmlc_last_error());
    ggmlc_model_free(m);
}

/* Two inputs through one shared dense layer, concatenated, two heads (MSE and cross-entropy). */
static void multi_io_seed(const char *dir) {
    ggmlc_model *m = ggmlc_functional();
    ggmlc_node *a = ggmlc_input(m, (int64_t[]){3}, 1), *b = ggmlc_input(m, (int64_t[]){3}, 1);
    ggmlc_layer *shared = ggmlc_dense(4, GGMLC_ACT_TANH);
    ggmlc_node *joined = ggmlc_concatenate(m, ggmlc_apply(m, shared, a), ggmlc_apply(m, shared, b), 0);
    ggmlc_node *outs[2] = {ggmlc_apply(m, ggmlc_dense(1, GGMLC_ACT_NONE), joined), ggmlc_apply(m, ggmlc_dense(3, GGMLC_ACT_NONE), joined)};
    if (ggmlc_model_set_outputs(m, outs, 2) != GGMLC_OK) fprintf(stderr, "outputs: %s\n", ggmlc_last_error());
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.backend = "cpu";
    co.losses = (const enum ggmlc_loss[]){GGMLC_LOSS_MSE, GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY};
    co.loss_weights = (const float[]){2.0f, 0.5f};
    co.output_metrics = (const unsigned[]){GGMLC_METRIC_MAE, GGMLC_METRIC_ACCURACY};
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) fprintf(stderr, "compile: %s\n", ggmlc_last_error());
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-model/multi-io.gguf", dir);
    if (ggmlc_model_save(m, path, false) != GGMLC_OK) fprintf(stderr, "save: %s\n", ggmlc_last_error());
    ggmlc_model_free(m);
}

/* Name t, fill its bytes with `fill` and add it to g; returns t. */
static struct ggml_tensor *add_filled(struct gguf_context *g, struct ggml_tensor *t, const char *name, int fill) {
    ggml_set_name(t, name);
    memset(t->data, fill, ggml_nbytes(t));
    gguf_add_tensor(g, t);
    return t;
}

static void gguf_seed(const char *dir) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 16, NULL, false});
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "seed");
    gguf_set_val_u32(g, "seed.count", 7);
    gguf_set_val_f32(g, "seed.scale", 0.5f);
    gguf_set_arr_str(g, "seed.words", (const char *[]){"a", "bc"}, 2);
    gguf_set_arr_data(g, "seed.ints", GGUF_TYPE_INT32, (const int32_t[]){1, -2, 3}, 3);
    add_filled(g, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3), "a", 0x3f);
    add_filled(g, ggml_new_tensor_1d(ctx, GGML_TYPE_Q8_0, 32), "b", 0x11);
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-gguf/seed.gguf", dir);
    gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(ctx);
}

static void put_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void put_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void put_key(FILE *f, const char *key, enum gguf_type type) {
    put_u64(f, strlen(key));
    fwrite(key, 1, strlen(key), f);
    put_u32(f, type);
}

static FILE *open_seed(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-gguf/%s", dir, name);
    return fopen(path, "wb");
}

/* Header and one pair general.alignment = value (57 bytes). */
static void alignment_seed(const char *dir, const char *name, uint32_t value) {
    FILE *f = open_seed(dir, name);
    if (!f) return;
    fwrite(GGUF_MAGIC, 1, 4, f);
    put_u32(f, 3);
    put_u64(f, 0);
    put_u64(f, 1);
    put_key(f, GGUF_KEY_GENERAL_ALIGNMENT, GGUF_TYPE_UINT32);
    put_u32(f, value);
    fclose(f);
}

/* n one-byte pairs; with duplicate, the last key repeats the first. */
static void many_keys_seed(const char *dir, const char *name, int n, bool duplicate) {
    FILE *f = open_seed(dir, name);
    if (!f) return;
    fwrite(GGUF_MAGIC, 1, 4, f);
    put_u32(f, 3);
    put_u64(f, 0);
    put_u64(f, (uint64_t)n);
    char key[32];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k.%05d", duplicate && i == n - 1 ? 0 : i);
        put_key(f, key, GGUF_TYPE_UINT8);
        fputc(i & 0xff, f);
    }
    fclose(f);
}

/* Seeds for the hostile cases of test-gguf-hostile.c: alignments at and past the limit,
 * a file whose pairs a rewrite sets through their own keys, many keys and a late
 * duplicate, zeros (what /dev/zero gives), and seed.gguf cut inside its data. */
static void hostile_gguf_seeds(const char *dir) {
    alignment_seed(dir, "align-2p31.gguf", 1u << 31);
    alignment_seed(dir, "align-64k.gguf", 1u << 16);
    many_keys_seed(dir, "many-keys.gguf", 2000, false);
    many_keys_seed(dir, "dup-key-last.gguf", 2000, true);
    FILE *f = open_seed(dir, "zeros");
    if (f) {
        for (int i = 0; i < 4096; i++) fputc(0, f);
        fclose(f);
    }
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 16, NULL, false});
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_u32(g, GGUF_KEY_GENERAL_ALIGNMENT, 64);
    gguf_set_val_str(g, "general.name", "own keys");
    const struct ggml_tensor *a = add_filled(g, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2), "a", 0x3f);
    add_filled(g, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3), "b", 0x40);
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-gguf/own-keys.gguf", dir);
    gguf_write_to_file(g, path, false);
    snprintf(path, sizeof path, "%s/fuzz-gguf/cut-in-data.gguf", dir);
    f = fopen(path, "wb");
    const size_t meta = gguf_get_meta_size(g);
    void *bytes = malloc(meta);
    if (f && bytes) {
        gguf_get_meta_data(g, bytes);
        fwrite(bytes, 1, meta, f);
        fwrite(a->data, 1, 4, f); /* 4 of the 8 bytes of a, nothing of b */
    }
    if (f) fclose(f);
    free(bytes);
    gguf_free(g);
    ggml_free(ctx);
}

/* Selector byte 1 (IDX), the cut, then images (3 of 2x2) and labels (3). */
static void idx_seed(const char *dir) {
    static const unsigned char images[] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 50, 100, 150, 200, 250, 1, 2, 3, 4, 5, 6};
    static const unsigned char labels[] = {0, 0, 8, 1, 0, 0, 0, 3, 1, 0, 2};
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-dataset/idx", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    const size_t rest = sizeof images + sizeof labels;
    unsigned char cut = (unsigned char)((sizeof images * 255 + rest - 1) / rest);
    fputc(1, f);
    fputc(cut, f);
    fwrite(images, 1, sizeof images, f);
    fwrite(labels, 1, sizeof labels, f);
    fclose(f);
}

/* Copies of a seed model with one setting out of range, which ggmlc_model_load must refuse. */
static void bad_settings_seeds(const char *dir) {
    char src[512], path[512];
    snprintf(src, sizeof src, "%s/fuzz-model/dense-adamw.gguf", dir);
    static const char *const names[] = {"nan-beta1.gguf", "activation-42.gguf", "optimizer-7.gguf", "inf-weight-decay.gguf"};
    for (int e = 0; e < 4; e++) {
        struct ggml_context *data = NULL;
        struct gguf_context *in = gguf_init_from_file(src, (struct gguf_init_params){.no_alloc = false, .ctx = &data});
        if (!in) return;
        struct gguf_context *out = gguf_init_empty();
        gguf_set_kv(out, in);
        if (e == 0) gguf_set_arr_data(out, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, (float[]){NAN, 0.999f, 1e-8f}, 3);
        if (e == 1) gguf_set_val_i32(out, "ggmlc.layer.0.activation", 42);
        if (e == 2) gguf_set_val_i32(out, "ggmlc.compile.optimizer", 7);
        if (e == 3) gguf_set_val_f32(out, "ggmlc.compile.weight_decay", INFINITY);
        for (int64_t i = 0; i < gguf_get_n_tensors(in); i++) gguf_add_tensor(out, ggml_get_tensor(data, gguf_get_tensor_name(in, i)));
        snprintf(path, sizeof path, "%s/fuzz-model/%s", dir, names[e]);
        if (!gguf_write_to_file(out, path, false)) fprintf(stderr, "cannot write %s\n", path);
        gguf_free(out);
        gguf_free(in);
        ggml_free(data);
    }
}

/* A dataset seed: the selector byte (and cut) then the bytes. */
static void dataset_seed(const char *dir, const char *name, const unsigned char *head, size_t head_len, const void *data, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz-dataset/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(head, 1, head_len, f);
    fwrite(data, 1, len, f);
    fclose(f);
}

/* CSV seeds for the checks of every line's width and of subnormal values, and gzip'd IDX images
 * that expand beyond the fuzz target's 16 MiB dataset limit (6000 blank images of 28 x 28). */
static void limit_seeds(const char *dir) {
    static const char subnormal[] = "1e-40,-2e-45,0\n1e-50,3,1\n", short_line[] = "1,2,3,4,5,6,7,0\n1\n2,3\n";
    dataset_seed(dir, "csv-subnormal", (const unsigned char[]){0}, 1, subnormal, sizeof subnormal - 1);
    dataset_seed(dir, "csv-short-line", (const unsigned char[]){2}, 1, short_line, sizeof short_line - 1);
    enum { N = 6000, SIDE = 28 };
    static unsigned char idx[16 + N * SIDE * SIDE], gz[64 << 10];
    static const unsigned char labels[] = {0, 0, 8, 1, 0, 0, 0x17, 0x70, 0};
    memcpy(idx, (const unsigned char[]){0, 0, 8, 3, 0, 0, 0x17, 0x70, 0, 0, 0, SIDE, 0, 0, 0, SIDE}, 16);
    uLongf gz_len = sizeof gz;
    z_stream z = {0};
    if (deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY) != Z_OK) return; /* 31: a gzip header */
    z.next_in = idx, z.avail_in = sizeof idx, z.next_out = gz, z.avail_out = sizeof gz;
    const int st = deflate(&z, Z_FINISH);
    gz_len = z.total_out;
    deflateEnd(&z);
    if (st != Z_STREAM_END) return;
    /* selector 1 (IDX); the cut puts every byte but the 9 of the (truncated) labels into the images */
    const size_t rest = gz_len + sizeof labels;
    unsigned char *all = malloc(rest);
    memcpy(all, gz, gz_len);
    memcpy(all + gz_len, labels, sizeof labels);
    const unsigned char head[2] = {1, (unsigned char)((gz_len * 255 + rest - 1) / rest)};
    dataset_seed(dir, "idx-beyond-limit", head, 2, all, rest);
    free(all);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "fuzz/corpus";
    model_seed(dir, false, "dense.gguf");
    model_seed(dir, true, "dense-adamw.gguf");
    multi_io_seed(dir);
    gguf_seed(dir);
    hostile_gguf_seeds(dir);
    idx_seed(dir);
    bad_settings_seeds(dir);
    limit_seeds(dir);
    return 0;
}
