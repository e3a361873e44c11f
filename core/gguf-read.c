/*
 * gguf-read.c - gguf_init_from_file(_ptr): parse and validate a GGUF file.
 *
 * The file is memory-mapped (read into memory when it cannot be mapped)
 * and parsed through a cursor that checks every read against the file
 * size, so a truncated or hostile file is reported, never read past.
 * Counts are checked against the bytes left before anything is
 * allocated for them, and all size arithmetic is overflow-checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf-impl.h"

/* A source read on demand (gguf_init_from_callback): bytes are fetched into buf as the
 * parser reaches them, never past what it asks for. */
struct lazy_source {
    gguf_reader_callback_t read;
    void                  *userdata;
    size_t                 max_chunk; /* largest single read; SIZE_MAX when unlimited */
    uint8_t               *buf;
    size_t                 have, cap; /* bytes fetched / allocated */
};

struct cursor {
    const char         *fname;
    const uint8_t      *base;
    size_t              size, pos;
    const char         *what; /* the item being read, for error messages */
    struct lazy_source *lazy; /* NULL: base holds all size bytes */
};

static bool fail(struct cursor *c, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(2, 3);
static bool fail(struct cursor *c, const char *fmt, ...) {
    char msg[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    ggmlc_set_error(GGMLC_ERR_FORMAT, "gguf: %s: %s (at byte %zu)", c->fname, msg, c->pos);
    return false;
}

/* Make bytes [0, end) of a lazy source available at c->base (end <= c->size). */
static bool fetch_until(struct cursor *c, size_t end) {
    struct lazy_source *L = c->lazy;
    if (!L || end <= L->have) return true;
    if (end > L->cap) {
        size_t cap = L->cap ? L->cap : 4096;
        while (cap < end) cap = cap > SIZE_MAX / 2 ? end : cap * 2;
        uint8_t *b = realloc(L->buf, cap);
        if (!b) return fail(c, "out of memory reading %s", c->what);
        L->buf = b;
        L->cap = cap;
        c->base = b;
    }
    while (L->have < end) {
        const size_t want = end - L->have < L->max_chunk ? end - L->have : L->max_chunk;
        const size_t got = L->read(L->userdata, L->buf + L->have, (uint64_t)L->have, want);
        if (got != want) return fail(c, "truncated: reading %s from the callback failed", c->what);
        L->have += got;
    }
    return true;
}

static bool read_bytes(struct cursor *c, void *dst, size_t n) {
    if (n > c->size - c->pos)
        return fail(c, "truncated: %s needs %zu bytes, %zu left", c->what, n, c->size - c->pos);
    if (!fetch_until(c, c->pos + n)) return false;
    memcpy(dst, c->base + c->pos, n);
    c->pos += n;
    return true;
}

#define READ(c, var) read_bytes((c), &(var), sizeof(var))

/* A string: u64 length then bytes; returned NUL-terminated in a new allocation. */
static bool read_string_len(struct cursor *c, char **out, size_t *out_len) {
    uint64_t len = 0;
    if (!READ(c, len)) return false;
    if (len > c->size - c->pos)
        return fail(c, "%s: string length %llu exceeds the %zu bytes left", c->what, (unsigned long long)len,
                    c->size - c->pos);
    if (!fetch_until(c, c->pos + (size_t)len)) return false;
    char *s = malloc((size_t)len + 1);
    if (!s) return fail(c, "%s: out of memory for a string of %llu bytes", c->what, (unsigned long long)len);
    memcpy(s, c->base + c->pos, (size_t)len);
    s[len] = '\0';
    c->pos += (size_t)len;
    *out = s;
    if (out_len) *out_len = (size_t)len;
    return true;
}

static bool read_string(struct cursor *c, char **out) { return read_string_len(c, out, NULL); }

/* n values of elem_type into a new allocation (strings: an array of char *). */
static bool read_values(struct cursor *c, enum gguf_type elem_type, uint64_t n, void **out) {
    const size_t left = c->size - c->pos;
    if (elem_type == GGUF_TYPE_STRING) {
        if (n > left / 8) return fail(c, "%s: %llu strings cannot fit in %zu bytes", c->what, (unsigned long long)n, left);
        char **strs = calloc((size_t)n + 1, sizeof *strs);
        if (!strs) return fail(c, "%s: out of memory", c->what);
        *out = strs;
        for (uint64_t i = 0; i < n; i++)
            if (!read_string(c, &strs[i])) return false;
        return true;
    }
    const size_t esize = gguf_type_size(elem_type);
    if (n > left / esize)
        return fail(c, "%s: %llu elements of %s exceed the %zu bytes left", c->what, (unsigned long long)n,
                    gguf_type_name(elem_type), left);
    *out = malloc((size_t)n * esize + 1);
    if (!*out) return fail(c, "%s: out of memory", c->what);
    return read_bytes(c, *out, (size_t)n * esize);
}

static bool valid_type(int32_t t) { return t >= 0 && t < GGUF_TYPE_COUNT; }

static bool read_kv(struct cursor *c, struct gguf_context *ctx, int64_t index) {
    char what[96];
    snprintf(what, sizeof what, "key of pair %lld", (long long)index);
    c->what = what;
    char *key = NULL;
    void *data = NULL;
    int32_t type = GGUF_TYPE_UINT8, elem_type = GGUF_TYPE_UINT8;
    uint64_t n = 1;
    if (!read_string(c, &key)) return false;
    snprintf(what, sizeof what, "value of '%.60s'", key);
    bool ok = READ(c, type);
    if (ok && !valid_type(type)) ok = fail(c, "%s: unknown value type %d", what, type);
    elem_type = type;
    if (ok && type == GGUF_TYPE_ARRAY) {
        ok = READ(c, elem_type) && READ(c, n);
        if (ok && (!valid_type(elem_type) || elem_type == GGUF_TYPE_ARRAY))
            ok = fail(c, "%s: invalid array element type %d", what, elem_type);
    }
    if (ok) ok = read_values(c, elem_type, n, &data);
    if (ok && gguf_find_key(ctx, key) >= 0) ok = fail(c, "duplicate key '%.60s'", key);
    if (ok && !gguf_kv_append(ctx, key, type, elem_type, (size_t)n, data)) ok = fail(c, "%s: out of memory", what);
    if (!ok) {
        struct gguf_kv tmp = {key, type, elem_type, (size_t)n, data};
        gguf_kv_release(&tmp);
    }
    return ok;
}

static bool read_alignment(struct cursor *c, struct gguf_context *ctx) {
    const int64_t id = gguf_find_key(ctx, GGUF_KEY_GENERAL_ALIGNMENT);
    if (id < 0) return true;
    const struct gguf_kv *kv = &ctx->kv[id];
    uint32_t a = 0;
    if (kv->type == GGUF_TYPE_UINT32) memcpy(&a, kv->data, 4);
    if (a == 0 || (a & (a - 1)) != 0) return fail(c, "%s must be a u32 power of two", GGUF_KEY_GENERAL_ALIGNMENT);
    ctx->alignment = a;
    return true;
}

static bool read_tensor_info(struct cursor *c, struct gguf_context *ctx, int64_t index) {
    char what[96];
    snprintf(what, sizeof what, "name of tensor %lld", (long long)index);
    c->what = what;
    struct gguf_tensor_info info = {0};
    char *name = NULL;
    uint32_t n_dims = 0;
    int32_t type = 0;
    size_t name_len;
    if (!read_string_len(c, &name, &name_len)) return false;
    const bool name_ok = name_len > 0 && name_len < GGML_MAX_NAME && name_len == strlen(name); /* no NUL inside */
    if (name_ok) memcpy(info.t.name, name, name_len + 1);
    snprintf(what, sizeof what, "info of tensor '%.63s'", name);
    free(name);
    if (!name_ok)
        return fail(c, "tensor %lld: name of %zu bytes%s (allowed: 1 to %d bytes, no NUL)", (long long)index, name_len,
                    name_len > 0 && name_len < GGML_MAX_NAME ? " with a NUL inside" : "", GGML_MAX_NAME - 1);
    if (!READ(c, n_dims)) return false;
    if (n_dims > GGML_MAX_DIMS) return fail(c, "tensor '%s': %u dimensions (at most %d)", info.t.name, n_dims, GGML_MAX_DIMS);
    int64_t nelements = 1;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        info.t.ne[i] = 1;
        if ((uint32_t)i >= n_dims) continue;
        if (!READ(c, info.t.ne[i])) return false;
        if (info.t.ne[i] <= 0) return fail(c, "tensor '%s': dimension %d is %lld", info.t.name, i, (long long)info.t.ne[i]);
        if (info.t.ne[i] > INT64_MAX / nelements) return fail(c, "tensor '%s': element count overflows", info.t.name);
        nelements *= info.t.ne[i];
    }
    if (!READ(c, type) || !READ(c, info.offset)) return false;
    if (!ggmlc_type_is_valid(type)) return fail(c, "tensor '%s': unknown type id %d", info.t.name, type);
    info.t.type = type;
    if (info.t.ne[0] % ggml_blck_size(type) != 0)
        return fail(c, "tensor '%s': %lld values per row are not whole %s blocks", info.t.name, (long long)info.t.ne[0],
                    ggml_type_name(type));
    if (info.offset % ctx->alignment != 0)
        return fail(c, "tensor '%s': offset %llu is not a multiple of the alignment %zu", info.t.name,
                    (unsigned long long)info.offset, ctx->alignment);
    /* the byte size (blocks per row * block size * rows) must not overflow; whether the data is
     * in the file is checked only when it is read (as in ggml, metadata alone may be read) */
    const uint64_t blocks = (uint64_t)(info.t.ne[0] / ggml_blck_size(type)), rows = (uint64_t)(nelements / info.t.ne[0]);
    const size_t bsize = ggml_type_size(type);
    if (blocks > SIZE_MAX / bsize || rows > SIZE_MAX / (blocks * bsize))
        return fail(c, "tensor '%s': %lld elements of %s need more than SIZE_MAX bytes", info.t.name,
                    (long long)nelements, ggml_type_name(type));
    gguf_info_set_strides(&info.t);
    if (!gguf_info_append(ctx, &info)) return fail(c, "out of memory");
    return true;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const struct gguf_tensor_info *const *)a)->t.name, (*(const struct gguf_tensor_info *const *)b)->t.name);
}

static int cmp_offset(const void *a, const void *b) {
    const uint64_t x = (*(const struct gguf_tensor_info *const *)a)->offset;
    const uint64_t y = (*(const struct gguf_tensor_info *const *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Names unique; data inside the file and not overlapping. Sets *data_end (bytes of data needed). */
/* Tensors must not share bytes and their data must be addressable; with need_data, the data
 * section up to the padded end of the last tensor must also be in the file (ggml reads it whole). */
static bool check_tensor_layout(struct cursor *c, struct gguf_context *ctx, bool need_data, size_t *data_end) {
    *data_end = 0;
    if (ctx->n_info == 0) return true;
    const struct gguf_tensor_info **sorted = malloc((size_t)ctx->n_info * sizeof *sorted);
    if (!sorted) return fail(c, "out of memory");
    for (int64_t i = 0; i < ctx->n_info; i++) sorted[i] = &ctx->info[i];
    bool ok = true;
    qsort(sorted, (size_t)ctx->n_info, sizeof *sorted, cmp_name);
    for (int64_t i = 1; ok && i < ctx->n_info; i++)
        if (strcmp(sorted[i]->t.name, sorted[i - 1]->t.name) == 0) ok = fail(c, "duplicate tensor name '%s'", sorted[i]->t.name);
    qsort(sorted, (size_t)ctx->n_info, sizeof *sorted, cmp_offset);
    const size_t limit = need_data ? c->size : SIZE_MAX;
    const size_t avail = limit > ctx->data_offset ? limit - ctx->data_offset : 0;
    for (int64_t i = 0; ok && i < ctx->n_info; i++) {
        const struct gguf_tensor_info *t = sorted[i];
        const size_t nbytes = ggml_nbytes(&t->t);
        if (t->offset > avail || nbytes > avail - t->offset)
            ok = fail(c, "tensor '%s': data [%llu, +%zu) lies outside the %zu bytes of the data section", t->t.name,
                      (unsigned long long)t->offset, nbytes, avail);
        else if (i > 0 && t->offset < sorted[i - 1]->offset + ggml_nbytes(&sorted[i - 1]->t))
            ok = fail(c, "tensor '%s' overlaps tensor '%s'", t->t.name, sorted[i - 1]->t.name);
        else if (t->offset + nbytes > *data_end)
            *data_end = t->offset + nbytes;
    }
    free(sorted);
    if (ok && need_data && *data_end > 0 && GGML_PAD(*data_end, ctx->alignment) > avail)
        ok = fail(c, "the data section ends %zu bytes before its padded end", GGML_PAD(*data_end, ctx->alignment) - avail);
    return ok;
}

static bool parse(struct cursor *c, struct gguf_context *ctx) {
    char magic[4] = {0};
    uint32_t version = 0;
    int64_t n_tensors = 0, n_kv = 0;
    c->what = "header";
    if (!READ(c, magic)) return false;
    if (memcmp(magic, GGUF_MAGIC, 4) != 0) return fail(c, "not a GGUF file (bad magic)");
    if (!READ(c, version)) return false;
    if (version == 1) return fail(c, "GGUF version 1 is not supported");
    if (version == 0 || version > GGUF_VERSION)
        return fail(c, "unsupported GGUF version %u%s", version, (version & 0xffff) == 0 ? " (big-endian file?)" : "");
    ctx->version = version;
    if (!READ(c, n_tensors) || !READ(c, n_kv)) return false;
    /* every pair takes at least 12 bytes, every tensor info at least 24 */
    const size_t left = c->size - c->pos;
    if (n_kv < 0 || (uint64_t)n_kv > left / 12)
        return fail(c, "key-value count %lld cannot fit in the %zu bytes left (truncated or damaged file)", (long long)n_kv, left);
    if (n_tensors < 0 || (uint64_t)n_tensors > left / 24)
        return fail(c, "tensor count %lld cannot fit in the %zu bytes left (truncated or damaged file)", (long long)n_tensors,
                    left);
    for (int64_t i = 0; i < n_kv; i++)
        if (!read_kv(c, ctx, i)) return false;
    if (!read_alignment(c, ctx)) return false;
    for (int64_t i = 0; i < n_tensors; i++)
        if (!read_tensor_info(c, ctx, i)) return false;
    ctx->data_offset = GGML_PAD(c->pos, ctx->alignment);
    return true;
}

/* Create the caller's ggml context: an I8 tensor with the data section, then one view per tensor. */
static struct ggml_context *make_ggml_context(const struct gguf_context *ctx, const uint8_t *data, size_t data_size,
                                              bool no_alloc) {
    const size_t mem = (size_t)(ctx->n_info + 1) * ggml_tensor_overhead() + (no_alloc ? 0 : data_size + GGML_MEM_ALIGN);
    struct ggml_context *gctx = ggml_init((struct ggml_init_params){mem, NULL, true});
    if (!gctx) return NULL;
    struct ggml_tensor *blob = NULL;
    if (!no_alloc && data_size > 0) {
        ggml_set_no_alloc(gctx, false);
        blob = ggml_new_tensor_1d(gctx, GGML_TYPE_I8, (int64_t)data_size);
        ggml_set_no_alloc(gctx, true);
        if (!blob) goto fail;
        ggml_set_name(blob, "GGUF tensor data binary blob"); /* the name ggml gives it */
        if (data_size) memcpy(blob->data, data, data_size);
    }
    for (int64_t i = 0; i < ctx->n_info; i++) {
        const struct gguf_tensor_info *info = &ctx->info[i];
        struct ggml_tensor *t = ggml_new_tensor(gctx, info->t.type, GGML_MAX_DIMS, info->t.ne);
        if (!t) goto fail;
        ggml_set_name(t, info->t.name);
        if (blob) t->data = (char *)blob->data + info->offset;
    }
    return gctx;
fail:
    ggml_free(gctx);
    return NULL;
}

/* Map the whole file read-only; when it cannot be mapped (a pipe, ...), read it. */
static const uint8_t *load_file(const char *fname, size_t *size, bool *mapped) {
    const int fd = open(fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ggmlc_set_error(GGMLC_ERR_IO, "gguf: cannot open %s: %s", fname, strerror(errno));
        return NULL;
    }
    struct stat st;
    uint8_t *p = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        *size = (size_t)st.st_size;
        p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) p = NULL;
        else madvise(p, *size, MADV_SEQUENTIAL);
    }
    *mapped = p != NULL;
    if (!p) {
        size_t cap = 1 << 16, n = 0;
        p = malloc(cap);
        ssize_t r;
        while (p && (r = read(fd, p + n, cap - n)) > 0) {
            n += (size_t)r;
            if (n == cap) {
                uint8_t *q = realloc(p, cap *= 2);
                if (!q) { free(p); p = NULL; }
                else p = q;
            }
        }
        *size = n;
        if (!p) ggmlc_set_error(GGMLC_ERR_NOMEM, "gguf: out of memory reading %s", fname);
    }
    close(fd);
    return p;
}

/* Parse size bytes at base (named fname in errors) into a new context; base stays the caller's. */
static struct gguf_context *parse_cursor(struct cursor *c, struct gguf_init_params params) {
    struct gguf_context *ctx = gguf_init_empty();
    size_t data_end = 0;
    const bool need_data = params.ctx && !params.no_alloc;
    bool ok = ctx && parse(c, ctx) && check_tensor_layout(c, ctx, need_data, &data_end);
    if (ok && need_data) { /* the data section is read only when it is copied */
        c->what = "the tensor data";
        ok = fetch_until(c, ctx->data_offset + data_end);
    }
    if (ok && params.ctx) {
        *params.ctx = make_ggml_context(ctx, c->base + ctx->data_offset, data_end, params.no_alloc);
        if (!*params.ctx) ok = false;
    }
    if (!ok) {
        gguf_free(ctx);
        return NULL;
    }
    return ctx;
}

static struct gguf_context *init_from_bytes(const char *fname, const uint8_t *base, size_t size,
                                            struct gguf_init_params params) {
    struct cursor c = {fname, base, size, 0, "header", NULL};
    return parse_cursor(&c, params);
}

struct gguf_context *gguf_init_from_file(const char *fname, struct gguf_init_params params) {
    if (!fname) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_init_from_file: NULL file name");
        return NULL;
    }
    size_t size = 0;
    bool mapped = false;
    const uint8_t *base = load_file(fname, &size, &mapped);
    if (!base) return NULL;
    struct gguf_context *ctx = init_from_bytes(fname, base, size, params);
    if (mapped) munmap((void *)base, size);
    else free((void *)base);
    return ctx;
}

/* Read everything from the stream's position to its end into a new buffer. */
static uint8_t *read_stream(FILE *file, size_t *size) {
    size_t cap = 1 << 16, n = 0;
    uint8_t *p = malloc(cap);
    while (p) {
        n += fread(p + n, 1, cap - n, file);
        if (n < cap) break; /* end of file or a read error, told apart below */
        uint8_t *q = cap <= SIZE_MAX / 2 ? realloc(p, cap *= 2) : NULL;
        if (!q) {
            free(p);
            p = NULL;
        } else {
            p = q;
        }
    }
    if (!p) ggmlc_set_error(GGMLC_ERR_NOMEM, "gguf_init_from_file_ptr: out of memory reading the stream");
    else if (ferror(file)) {
        ggmlc_set_error(GGMLC_ERR_IO, "gguf_init_from_file_ptr: reading the stream failed");
        free(p);
        p = NULL;
    }
    *size = n;
    return p;
}

struct gguf_context *gguf_init_from_file_ptr(FILE *file, struct gguf_init_params params) {
    if (params.ctx) *params.ctx = NULL;
    if (!file) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_init_from_file_ptr: NULL file");
        return NULL;
    }
    size_t size = 0;
    uint8_t *base = read_stream(file, &size);
    if (!base) return NULL;
    struct gguf_context *ctx = init_from_bytes("(FILE *)", base, size, params);
    free(base);
    return ctx;
}

struct gguf_context *gguf_init_from_buffer(const void *data, size_t size, struct gguf_init_params params) {
    if (params.ctx) *params.ctx = NULL;
    if (!data && size > 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_init_from_buffer: NULL data of %zu bytes", size);
        return NULL;
    }
    return init_from_bytes("(buffer)", data, size, params);
}

struct gguf_context *gguf_init_from_callback(gguf_reader_callback_t read, void *userdata, size_t max_chunk_read,
                                             uint64_t max_expected_size, struct gguf_init_params params) {
    if (params.ctx) *params.ctx = NULL;
    if (!read) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_init_from_callback: NULL read callback");
        return NULL;
    }
    struct lazy_source src = {read, userdata, max_chunk_read ? max_chunk_read : SIZE_MAX, NULL, 0, 0};
    const size_t size = max_expected_size > SIZE_MAX ? SIZE_MAX : (size_t)max_expected_size;
    struct cursor c = {"(callback)", NULL, size, 0, "header", &src};
    struct gguf_context *ctx = parse_cursor(&c, params);
    free(src.buf);
    return ctx;
}
