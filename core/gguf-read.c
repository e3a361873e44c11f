/*
 * gguf-read.c - gguf_init_from_file(_ptr), _buffer, _callback: parse and
 * validate a GGUF file.
 *
 * Files, streams and callbacks are read on demand (pread for files: a file
 * truncated by another process while it is read gives an error, where a
 * mapping of it would give SIGBUS), through a cursor that checks every read
 * against the size the source had when it was opened, so a truncated or
 * hostile file is reported, never read past.  Counts are checked against
 * the bytes left before anything is allocated for them, and all size
 * arithmetic is overflow-checked.  Only regular files are opened: a FIFO
 * would block and a device like /dev/zero never end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ggmlc-internal.h"
#include "gguf-impl.h"

/* A source read on demand: bytes are fetched into buf as the parser reaches them, in
 * order (a stream can be read this way), and the data section straight into its tensor. */
struct lazy_source {
    gguf_reader_callback_t read;
    void                  *userdata;
    size_t                 max_chunk; /* largest single read; SIZE_MAX when unlimited */
    size_t                 readahead; /* fetch at least this much at once (0: never past what is asked) */
    /* why a read came back short: a status and a message; NULL: the callback's generic one */
    enum ggmlc_status    (*why_short)(void *userdata, const char **why);
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

static bool fail_status(struct cursor *c, enum ggmlc_status status, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(3, 4);
static bool fail_status(struct cursor *c, enum ggmlc_status status, const char *fmt, ...) {
    char msg[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    ggmlc_set_error(status, "gguf: %s: %s (at byte %zu)", c->fname, msg, c->pos);
    return false;
}

#define fail(c, ...) fail_status((c), GGMLC_ERR_FORMAT, __VA_ARGS__)

/* Read n bytes at offset of a lazy source into dst, in chunks of at most max_chunk; false
 * with the error set when the source gives fewer. */
static bool read_chunks(struct cursor *c, uint8_t *dst, size_t offset, size_t n) {
    struct lazy_source *L = c->lazy;
    for (size_t done = 0; done < n;) {
        const size_t want = n - done < L->max_chunk ? n - done : L->max_chunk;
        const size_t got = L->read(L->userdata, dst + done, (uint64_t)(offset + done), want);
        done += got < want ? got : want;
        if (got == want) continue;
        const char *why = "truncated: reading from the callback failed";
        const enum ggmlc_status status = L->why_short ? L->why_short(L->userdata, &why) : GGMLC_ERR_FORMAT;
        return fail_status(c, status, "%s (while reading %s; byte %zu)", why, c->what, offset + done);
    }
    return true;
}

/* A load with a progress label (ggmlc__gguf_init_from_file_progress) whose tensor data reach
 * PROGRESS_MIN_BYTES reads them in pieces, drawing ggmlc_progress's bar on a terminal. */
enum { PROGRESS_MIN_BYTES = 16 << 20, PROGRESS_PIECE = 4 << 20 };
static _Thread_local const char *progress_label;

static bool read_with_progress(struct cursor *c, uint8_t *dst, size_t offset, size_t n,
                               size_t total) {
    struct ggmlc_progress progress;
    ggmlc_progress_begin(&progress, progress_label, (int64_t)total);
    bool ok = true;
    for (size_t done = 0; ok && done < n; done += PROGRESS_PIECE) {
        ok = read_chunks(c, dst + done, offset + done,
                         n - done < PROGRESS_PIECE ? n - done : PROGRESS_PIECE);
        ggmlc_progress_update(&progress, (int64_t)(total - n + done + PROGRESS_PIECE));
    }
    ggmlc_progress_end(&progress);
    return ok;
}

/* Make bytes [0, end) of a lazy source available at c->base (end <= c->size). */
static bool fetch_until(struct cursor *c, size_t end) {
    struct lazy_source *L = c->lazy;
    if (!L || end <= L->have) return true;
    /* a read ahead never passes the size the source had when opened */
    const size_t ahead = L->have + L->readahead < c->size ? L->have + L->readahead : c->size;
    const size_t target = end > ahead ? end : ahead;
    if (target > L->cap) {
        size_t cap = L->cap ? L->cap : 4096;
        while (cap < target) cap = cap > SIZE_MAX / 2 ? target : cap * 2;
        uint8_t *b = realloc(L->buf, cap);
        if (!b) return fail_status(c, GGMLC_ERR_NOMEM, "out of memory reading %s", c->what);
        L->buf = b;
        L->cap = cap;
        c->base = b;
    }
    if (!read_chunks(c, L->buf + L->have, L->have, target - L->have)) return false;
    L->have = target;
    return true;
}

/* Bytes [from, from + n) of the source into dst: from memory, or read straight into dst
 * (read in order, so after what the parser fetched). */
static bool copy_out(struct cursor *c, uint8_t *dst, size_t from, size_t n) {
    struct lazy_source *L = c->lazy;
    if (!L) {
        memcpy(dst, c->base + from, n);
        return true;
    }
    if (!fetch_until(c, from)) return false;
    const size_t fetched = L->have > from ? (L->have - from < n ? L->have - from : n) : 0;
    if (fetched) memcpy(dst, L->buf + from, fetched);
    return progress_label && n >= PROGRESS_MIN_BYTES
               ? read_with_progress(c, dst + fetched, from + fetched, n - fetched, n)
               : read_chunks(c, dst + fetched, from + fetched, n - fetched);
}

struct gguf_context *ggmlc__gguf_init_from_file_progress(const char *fname,
                                                        struct gguf_init_params params,
                                                        const char *label) {
    progress_label = label;
    struct gguf_context *ctx = gguf_init_from_file(fname, params);
    progress_label = NULL;
    return ctx;
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
    const size_t esize = ggmlc__gguf_type_size(elem_type);
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
    if (ok && !ggmlc__gguf_kv_append(ctx, key, type, elem_type, (size_t)n, data)) ok = fail(c, "%s: out of memory", what);
    if (!ok) {
        struct gguf_kv tmp = {key, type, elem_type, (size_t)n, data};
        ggmlc__gguf_kv_release(&tmp);
    }
    return ok;
}

static bool read_alignment(struct cursor *c, struct gguf_context *ctx) {
    const int64_t id = gguf_find_key(ctx, GGUF_KEY_GENERAL_ALIGNMENT);
    if (id < 0) return true;
    const struct gguf_kv *kv = &ctx->kv[id];
    if (!ggmlc__gguf_alignment_valid(kv->type, kv->data, kv->n, &ctx->alignment))
        return fail(c, "%s must be a u32 power of two of at most %d", GGUF_KEY_GENERAL_ALIGNMENT, GGUF_MAX_ALIGNMENT);
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
    if (!ggmlc__type_is_valid(type)) return fail(c, "tensor '%s': unknown type id %d", info.t.name, type);
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
    ggmlc__gguf_info_set_strides(&info.t);
    if (!ggmlc__gguf_info_append(ctx, &info)) return fail(c, "out of memory");
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static const char *key_at(const struct gguf_context *ctx, int64_t i) { return ctx->kv[i].key; }
static const char *tensor_name_at(const struct gguf_context *ctx, int64_t i) { return ctx->info[i].t.name; }

/* That the n names name_at(ctx, i) differ, found by sorting (n log n: a file of many small keys
 * must not take quadratic time); what ("key", "tensor name") names them in the error. */
static bool check_unique(struct cursor *c, const struct gguf_context *ctx, int64_t n,
                         const char *(*name_at)(const struct gguf_context *, int64_t), const char *what) {
    if (n < 2) return true;
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return fail_status(c, GGMLC_ERR_NOMEM, "out of memory checking for duplicate %ss", what);
    for (int64_t i = 0; i < n; i++) names[i] = name_at(ctx, i);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    bool ok = true;
    for (int64_t i = 1; ok && i < n; i++)
        if (strcmp(names[i], names[i - 1]) == 0) ok = fail(c, "duplicate %s '%.60s'", what, names[i]);
    free(names);
    return ok;
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
    bool ok = check_unique(c, ctx, ctx->n_info, tensor_name_at, "tensor name");
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
    if (!check_unique(c, ctx, ctx->n_kv, key_at, "key") || !read_alignment(c, ctx)) return false;
    for (int64_t i = 0; i < n_tensors; i++)
        if (!read_tensor_info(c, ctx, i)) return false;
    ctx->data_offset = GGML_PAD(c->pos, ctx->alignment);
    return true;
}

/* Create the caller's ggml context: an I8 tensor for the data section (*blob, unless
 * no_alloc), then one tensor per info, a view into the blob when there is one. */
static struct ggml_context *make_ggml_context(const struct gguf_context *ctx, size_t data_size, bool no_alloc,
                                              struct ggml_tensor **blob) {
    const size_t mem = (size_t)(ctx->n_info + 1) * ggml_tensor_overhead() + (no_alloc ? 0 : data_size + GGML_MEM_ALIGN);
    struct ggml_context *gctx = ggml_init((struct ggml_init_params){mem, NULL, true});
    *blob = NULL;
    if (!gctx) return NULL;
    if (!no_alloc && data_size > 0) {
        ggml_set_no_alloc(gctx, false);
        *blob = ggml_new_tensor_1d(gctx, GGML_TYPE_I8, (int64_t)data_size);
        ggml_set_no_alloc(gctx, true);
        if (!*blob) goto fail;
        ggml_set_name(*blob, "GGUF tensor data binary blob"); /* the name ggml gives it */
    }
    for (int64_t i = 0; i < ctx->n_info; i++) {
        const struct gguf_tensor_info *info = &ctx->info[i];
        struct ggml_tensor *t = ggml_new_tensor(gctx, info->t.type, GGML_MAX_DIMS, info->t.ne);
        if (!t) goto fail;
        ggml_set_name(t, info->t.name);
        if (*blob) t->data = (char *)(*blob)->data + info->offset;
    }
    return gctx;
fail:
    ggml_free(gctx);
    *blob = NULL;
    return NULL;
}

/* Parse the cursor's source into a new context (and the caller's ggml context). */
static struct gguf_context *parse_cursor(struct cursor *c, struct gguf_init_params params) {
    struct gguf_context *ctx = gguf_init_empty();
    size_t data_end = 0;
    const bool need_data = params.ctx && !params.no_alloc;
    bool ok = ctx && parse(c, ctx) && check_tensor_layout(c, ctx, need_data, &data_end);
    if (ok && params.ctx) {
        struct ggml_tensor *blob = NULL;
        *params.ctx = make_ggml_context(ctx, data_end, params.no_alloc, &blob);
        c->what = "the tensor data";
        ok = *params.ctx && (!blob || copy_out(c, blob->data, ctx->data_offset, data_end));
        if (!ok && *params.ctx) {
            ggml_free(*params.ctx);
            *params.ctx = NULL;
        }
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

/* Parse a lazy source of at most size bytes (named fname in errors). */
static struct gguf_context *init_from_source(const char *fname, struct lazy_source *src, size_t size,
                                             struct gguf_init_params params) {
    struct cursor c = {fname, NULL, size, 0, "header", src};
    struct gguf_context *ctx = parse_cursor(&c, params);
    free(src->buf);
    return ctx;
}

/* ------------------------------------------------------------- files */

/* A regular file read with pread, up to the size it had when opened. */
struct file_source {
    int fd;
    int err; /* errno of a failed read; 0: the file ended early */
};

static size_t file_read(void *userdata, void *out, uint64_t offset, size_t len) {
    struct file_source *f = userdata;
    size_t done = 0;
    while (done < len) {
        const ssize_t r = pread(f->fd, (uint8_t *)out + done, len - done, (off_t)(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            f->err = r < 0 ? errno : 0;
            break;
        }
        done += (size_t)r;
    }
    return done;
}

static enum ggmlc_status file_why_short(void *userdata, const char **why) {
    const struct file_source *f = userdata;
    *why = f->err ? strerror(f->err) : "file changed while reading: it is shorter than when it was opened";
    return GGMLC_ERR_IO;
}

/* What a file that is not regular is, for the error message. */
static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* Open a regular file for reading without blocking (a FIFO without a writer would) and
 * return its size; -1 with the error set for anything else. */
static int open_regular(const char *fname, size_t *size) {
    const int fd = open(fname, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        ggmlc_set_error(GGMLC_ERR_IO, "gguf: cannot open %s: %s", fname, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        ggmlc_set_error(GGMLC_ERR_IO, "gguf: cannot read %s: %s", fname, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        ggmlc_set_error(GGMLC_ERR_IO, "gguf: %s is %s, not a regular file: refused (a GGUF file is read from a file)",
                        fname, file_kind(st.st_mode));
    } else {
        *size = (uint64_t)st.st_size > SIZE_MAX ? SIZE_MAX : (size_t)st.st_size;
        return fd;
    }
    close(fd);
    return -1;
}

struct gguf_context *gguf_init_from_file(const char *fname, struct gguf_init_params params) {
    if (params.ctx) *params.ctx = NULL;
    if (!fname) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_init_from_file: NULL file name");
        return NULL;
    }
    size_t size = 0;
    struct file_source file = {open_regular(fname, &size), 0};
    if (file.fd < 0) return NULL;
    /* reads of 64 KiB: the metadata is parsed in small pieces, each not worth a system call */
    struct lazy_source src = {file_read, &file, SIZE_MAX, 1 << 16, file_why_short, NULL, 0, 0};
    struct gguf_context *ctx = init_from_source(fname, &src, size, params);
    close(file.fd);
    return ctx;
}

/* ----------------------------------------------------------- streams */

/* A stream read in order from where it stood. */
struct stream_source {
    FILE    *file;
    uint64_t pos; /* bytes read so far */
};

static size_t stream_read(void *userdata, void *out, uint64_t offset, size_t len) {
    struct stream_source *s = userdata;
    if (offset != s->pos) return 0; /* cannot happen: a lazy source reads in order */
    const size_t got = fread(out, 1, len, s->file);
    s->pos += got;
    return got;
}

static enum ggmlc_status stream_why_short(void *userdata, const char **why) {
    const struct stream_source *s = userdata;
    if (ferror(s->file)) {
        *why = "reading the stream failed";
        return GGMLC_ERR_IO;
    }
    *why = "truncated: the stream ended";
    return GGMLC_ERR_FORMAT;
}

/* Bytes left from the stream's position when it is a regular file; SIZE_MAX when unknown. */
static size_t stream_bytes_left(FILE *file) {
    struct stat st;
    const int fd = fileno(file);
    const long pos = ftell(file);
    if (fd < 0 || pos < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return SIZE_MAX;
    return st.st_size > pos ? (size_t)(st.st_size - pos) : 0;
}

struct gguf_context *gguf_init_from_file_ptr(FILE *file, struct gguf_init_params params) {
    if (params.ctx) *params.ctx = NULL;
    if (!file) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_init_from_file_ptr: NULL file");
        return NULL;
    }
    struct stream_source stream = {file, 0};
    struct lazy_source src = {stream_read, &stream, SIZE_MAX, 0, stream_why_short, NULL, 0, 0};
    return init_from_source("(FILE *)", &src, stream_bytes_left(file), params);
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
    struct lazy_source src = {read, userdata, max_chunk_read ? max_chunk_read : SIZE_MAX, 0, NULL, NULL, 0, 0};
    const size_t size = max_expected_size > SIZE_MAX ? SIZE_MAX : (size_t)max_expected_size;
    return init_from_source("(callback)", &src, size, params);
}
