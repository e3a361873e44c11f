/*
 * gguf-write.c - serialising a gguf_context: the metadata into memory
 * (gguf_get_meta_size / gguf_get_meta_data) and whole files.
 *
 * Files are written through file-replace.h (a temporary file beside the
 * destination, fsync'ed and renamed over it), so a crash or a full disk
 * never leaves a half-written model behind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "file-replace.h"
#include "gguf-impl.h"

/* A writer that either stores bytes (buf != NULL) or only counts them. */
struct sink {
    uint8_t *buf;
    size_t   pos;
};

static void put(struct sink *s, const void *p, size_t n) {
    if (s->buf && n) memcpy(s->buf + s->pos, p, n);
    s->pos += n;
}

static void put_u32(struct sink *s, uint32_t v) { put(s, &v, 4); }
static void put_u64(struct sink *s, uint64_t v) { put(s, &v, 8); }

static void put_str(struct sink *s, const char *str) {
    const uint64_t len = strlen(str);
    put_u64(s, len);
    put(s, str, (size_t)len);
}

static void put_kv(struct sink *s, const struct gguf_kv *kv) {
    put_str(s, kv->key);
    put_u32(s, (uint32_t)kv->type);
    if (kv->type == GGUF_TYPE_ARRAY) {
        put_u32(s, (uint32_t)kv->elem_type);
        put_u64(s, kv->n);
    }
    if (kv->elem_type == GGUF_TYPE_STRING) {
        for (size_t i = 0; i < kv->n; i++) put_str(s, ((char *const *)kv->data)[i]);
    } else {
        put(s, kv->data, kv->n * ggmlc__gguf_type_size(kv->elem_type));
    }
}

/* The header, pairs and tensor infos: the metadata without its padding. */
static void put_meta_unpadded(const struct gguf_context *ctx, struct sink *s) {
    put(s, GGUF_MAGIC, 4);
    put_u32(s, GGUF_VERSION);
    put_u64(s, (uint64_t)ctx->n_info);
    put_u64(s, (uint64_t)ctx->n_kv);
    for (int64_t i = 0; i < ctx->n_kv; i++) put_kv(s, &ctx->kv[i]);
    for (int64_t i = 0; i < ctx->n_info; i++) {
        const struct ggml_tensor *t = &ctx->info[i].t;
        const int n_dims = ggml_n_dims(t);
        put_str(s, t->name);
        put_u32(s, (uint32_t)n_dims);
        for (int d = 0; d < n_dims; d++) put_u64(s, (uint64_t)t->ne[d]);
        put_u32(s, (uint32_t)t->type);
        put_u64(s, ctx->info[i].offset);
    }
}

/* Zeros from the end of unpadded metadata of `size` bytes to the data section. */
static size_t meta_padding(const struct gguf_context *ctx, size_t size) { return GGML_PAD(size, ctx->alignment) - size; }

static void put_meta(const struct gguf_context *ctx, struct sink *s) {
    put_meta_unpadded(ctx, s);
    static const uint8_t zeros[256];
    const size_t pad = meta_padding(ctx, s->pos);
    for (size_t done = 0; done < pad; done += sizeof zeros < pad - done ? sizeof zeros : pad - done)
        put(s, zeros, sizeof zeros < pad - done ? sizeof zeros : pad - done);
}

size_t gguf_get_meta_size(const struct gguf_context *ctx) {
    struct sink s = {NULL, 0};
    put_meta(ctx, &s);
    return s.pos;
}

void gguf_get_meta_data(const struct gguf_context *ctx, void *data) {
    struct sink s = {data, 0};
    put_meta(ctx, &s);
}

/* ------------------------------------------------------------- files */

static bool write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

static bool write_zeros(FILE *f, size_t n) {
    static const uint8_t zeros[4096];
    for (size_t chunk; n > 0; n -= chunk) {
        chunk = n < sizeof zeros ? n : sizeof zeros;
        if (!write_all(f, zeros, chunk)) return false;
    }
    return true;
}

/* One tensor's data: host memory, a backend buffer, or zeros when it has none. */
static bool write_tensor_data(FILE *f, const struct gguf_tensor_info *info) {
    const size_t nbytes = ggml_nbytes(&info->t);
    if (!info->t.data) return write_zeros(f, nbytes);
    if (!info->t.buffer) return write_all(f, info->t.data, nbytes);
    uint8_t *tmp = malloc(nbytes ? nbytes : 1);
    if (!tmp) return false;
    ggml_backend_tensor_get(&info->t, tmp, 0, nbytes);
    const bool ok = write_all(f, tmp, nbytes);
    free(tmp);
    return ok;
}

static int cmp_offset(const void *a, const void *b) {
    const uint64_t x = (*(const struct gguf_tensor_info *const *)a)->offset;
    const uint64_t y = (*(const struct gguf_tensor_info *const *)b)->offset;
    return x < y ? -1 : x > y;
}

/* The data section: tensors in offset order, zero gaps between them, padded at the end. */
static bool write_data_section(FILE *f, const struct gguf_context *ctx) {
    if (ctx->n_info == 0) return true;
    const struct gguf_tensor_info **order = malloc((size_t)ctx->n_info * sizeof *order);
    if (!order) return false;
    for (int64_t i = 0; i < ctx->n_info; i++) order[i] = &ctx->info[i];
    qsort(order, (size_t)ctx->n_info, sizeof *order, cmp_offset);
    uint64_t pos = 0;
    bool ok = true;
    for (int64_t i = 0; ok && i < ctx->n_info; i++) {
        ok = order[i]->offset >= pos && write_zeros(f, (size_t)(order[i]->offset - pos)) && write_tensor_data(f, order[i]);
        pos = order[i]->offset + ggml_nbytes(&order[i]->t);
    }
    free(order);
    return ok && write_zeros(f, GGML_PAD(pos, ctx->alignment) - pos);
}

/* The metadata is built in memory, its padding streamed: the padding is up to an
 * alignment of zeros, which need not be allocated. */
static bool write_contents(FILE *f, const struct gguf_context *ctx, bool only_meta) {
    struct sink s = {NULL, 0};
    put_meta_unpadded(ctx, &s);
    const size_t meta_size = s.pos;
    s = (struct sink){malloc(meta_size), 0};
    if (!s.buf) return false;
    put_meta_unpadded(ctx, &s);
    const bool ok = write_all(f, s.buf, meta_size);
    free(s.buf);
    return ok && write_zeros(f, meta_padding(ctx, meta_size)) && (only_meta || write_data_section(f, ctx));
}

bool gguf_write_to_file(const struct gguf_context *ctx, const char *fname, bool only_meta) {
    if (!ctx || !fname) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_write_to_file: NULL context or file name");
        return false;
    }
    struct ggmlc_file_replace out;
    if (ggmlc__file_replace_open(&out, fname, "gguf_write_to_file") != GGMLC_OK) return false;
    return ggmlc__file_replace_commit(&out, write_contents(out.f, ctx, only_meta)) == GGMLC_OK;
}

bool gguf_write_to_file_ptr(const struct gguf_context *ctx, FILE *file, bool only_meta) {
    if (!ctx || !file) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_write_to_file_ptr: NULL context or file");
        return false;
    }
    if (!write_contents(file, ctx, only_meta) || fflush(file) != 0) {
        ggmlc_set_error(GGMLC_ERR_IO, "gguf_write_to_file_ptr: writing the stream failed: %s", strerror(errno));
        return false;
    }
    return true;
}
