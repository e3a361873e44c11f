/*
 * fuzz-gguf.c - libFuzzer target: gguf_init_from_file on arbitrary bytes,
 * with and without loading tensor data, then every accessor on what it
 * accepted (a file that parses must be safe to read all the way), and what
 * a rewriting program does with it: copy its pairs (also onto the copy
 * itself, and each string and u32 through the copy's own key and value
 * strings), serialise that, and read it back (it must be accepted).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_everything(const struct gguf_context *g, struct ggml_context *ctx) {
    for (int64_t k = 0; k < gguf_get_n_kv(g); k++) {
        (void)strlen(gguf_get_key(g, k));
        const enum gguf_type type = gguf_get_kv_type(g, k);
        if (type == GGUF_TYPE_STRING) {
            (void)strlen(gguf_get_val_str(g, k));
        } else if (type == GGUF_TYPE_ARRAY) {
            const size_t n = gguf_get_arr_n(g, k);
            if (gguf_get_arr_type(g, k) == GGUF_TYPE_STRING) {
                for (size_t i = 0; i < n; i++) (void)strlen(gguf_get_arr_str(g, k, i));
            } else if (n) {
                (void)gguf_get_arr_data(g, k);
            }
        } else {
            (void)gguf_get_val_data(g, k);
        }
    }
    for (int64_t t = 0; t < gguf_get_n_tensors(g); t++) {
        const char *name = gguf_get_tensor_name(g, t);
        (void)gguf_get_tensor_offset(g, t);
        (void)gguf_get_tensor_size(g, t);
        if (ctx) {
            struct ggml_tensor *tensor = ggml_get_tensor(ctx, name);
            if (tensor && tensor->data && ggml_nbytes(tensor) > 0) {
                volatile const uint8_t *bytes = tensor->data;
                (void)bytes[0];
                (void)bytes[ggml_nbytes(tensor) - 1];
            }
        }
    }
}

/* Set key id of ctx again through its own key string (and own value for strings). */
static void set_through_own_strings(struct gguf_context *ctx, int64_t id) {
    const char *key = gguf_get_key(ctx, id);
    switch (gguf_get_kv_type(ctx, id)) {
    case GGUF_TYPE_STRING: gguf_set_val_str(ctx, key, gguf_get_val_str(ctx, id)); break;
    case GGUF_TYPE_UINT32: gguf_set_val_u32(ctx, key, gguf_get_val_u32(ctx, id)); break;
    default: break;
    }
}

static void rewrite(const struct gguf_context *g) {
    struct gguf_context *copy = gguf_init_empty();
    gguf_set_kv(copy, g);
    gguf_set_kv(copy, copy);
    for (int64_t k = 0; k < gguf_get_n_kv(g); k++) set_through_own_strings(copy, gguf_find_key(copy, gguf_get_key(g, k)));
    const size_t size = gguf_get_meta_size(copy);
    void *meta = malloc(size);
    if (meta) {
        gguf_get_meta_data(copy, meta);
        struct gguf_context *back = gguf_init_from_buffer(meta, size, (struct gguf_init_params){true, NULL});
        if (!back || gguf_get_n_kv(back) != gguf_get_n_kv(g) || gguf_get_alignment(back) != gguf_get_alignment(g))
            abort(); /* the library wrote what it refuses to read */
        gguf_free(back);
    }
    free(meta);
    gguf_free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *path;
    if (!path) {
        fuzz_quiet_log();
        path = strdup(fuzz_path("input.gguf"));
    }
    if (fuzz_write_file(path, data, size) != 0) return 0;
    for (int no_alloc = 0; no_alloc < 2; no_alloc++) {
        struct ggml_context *ctx = NULL;
        struct gguf_context *g = gguf_init_from_file(path, (struct gguf_init_params){no_alloc, &ctx});
        if (g) read_everything(g, no_alloc ? NULL : ctx);
        if (g && no_alloc) rewrite(g);
        gguf_free(g);
        ggml_free(ctx);
    }
    return 0;
}
