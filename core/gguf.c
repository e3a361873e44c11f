/*
 * gguf.c - GGUF contexts: creation, key-value getters and setters, tensor
 * infos.  Reading is in gguf-read.c, writing in gguf-write.c.
 */
#include <stdlib.h>

#include "gguf-impl.h"

static const struct {
    const char *name;
    size_t size;
} type_info[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8] = {"u8", 1},   [GGUF_TYPE_INT8] = {"i8", 1},     [GGUF_TYPE_UINT16] = {"u16", 2},
    [GGUF_TYPE_INT16] = {"i16", 2},  [GGUF_TYPE_UINT32] = {"u32", 4},  [GGUF_TYPE_INT32] = {"i32", 4},
    [GGUF_TYPE_FLOAT32] = {"f32", 4}, [GGUF_TYPE_BOOL] = {"bool", 1},  [GGUF_TYPE_STRING] = {"str", 0},
    [GGUF_TYPE_ARRAY] = {"arr", 0},  [GGUF_TYPE_UINT64] = {"u64", 8},  [GGUF_TYPE_INT64] = {"i64", 8},
    [GGUF_TYPE_FLOAT64] = {"f64", 8},
};

const char *gguf_type_name(enum gguf_type type) {
    return (unsigned)type < GGUF_TYPE_COUNT ? type_info[type].name : NULL;
}

size_t ggmlc__gguf_type_size(enum gguf_type type) {
    return (unsigned)type < GGUF_TYPE_COUNT ? type_info[type].size : 0;
}

struct gguf_context *gguf_init_empty(void) {
    struct gguf_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "gguf_init_empty: out of memory");
        return NULL;
    }
    ctx->version = GGUF_VERSION;
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    return ctx;
}

void ggmlc__gguf_kv_release(struct gguf_kv *kv) {
    if (kv->elem_type == GGUF_TYPE_STRING && kv->data) {
        char **strs = kv->data;
        for (size_t i = 0; i < kv->n; i++) free(strs[i]);
    }
    free(kv->data);
    free(kv->key);
}

void gguf_free(struct gguf_context *ctx) {
    if (!ctx) return;
    for (int64_t i = 0; i < ctx->n_kv; i++) ggmlc__gguf_kv_release(&ctx->kv[i]);
    free(ctx->kv);
    free(ctx->info);
    free(ctx);
}

uint32_t gguf_get_version(const struct gguf_context *ctx) { return ctx->version; }
size_t gguf_get_alignment(const struct gguf_context *ctx) { return ctx->alignment; }
size_t gguf_get_data_offset(const struct gguf_context *ctx) { return ctx->data_offset; }
int64_t gguf_get_n_kv(const struct gguf_context *ctx) { return ctx->n_kv; }
int64_t gguf_get_n_tensors(const struct gguf_context *ctx) { return ctx->n_info; }

int64_t gguf_find_key(const struct gguf_context *ctx, const char *key) {
    for (int64_t i = 0; key && i < ctx->n_kv; i++)
        if (strcmp(ctx->kv[i].key, key) == 0) return i;
    return -1;
}

/* ----------------------------------------------------------- getters */

/* The pair key_id when it exists and holds `type` (GGUF_TYPE_COUNT: any scalar); else an error. */
static const struct gguf_kv *kv_checked(const struct gguf_context *ctx, int64_t key_id, enum gguf_type type,
                                        const char *func) {
    if (!ctx || key_id < 0 || key_id >= ctx->n_kv) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: key id %lld out of range", func, (long long)key_id);
        return NULL;
    }
    const struct gguf_kv *kv = &ctx->kv[key_id];
    const bool ok = type == GGUF_TYPE_COUNT ? kv->type != GGUF_TYPE_ARRAY && kv->type != GGUF_TYPE_STRING
                                            : kv->type == type;
    if (!ok) {
        ggmlc_set_error(GGMLC_ERR_TYPE, "%s: key '%s' holds a %s, not a %s", func, kv->key, gguf_type_name(kv->type),
                        type == GGUF_TYPE_COUNT ? "fixed-size scalar" : gguf_type_name(type));
        return NULL;
    }
    return kv;
}

const char *gguf_get_key(const struct gguf_context *ctx, int64_t key_id) {
    if (!ctx || key_id < 0 || key_id >= ctx->n_kv) return NULL;
    return ctx->kv[key_id].key;
}

enum gguf_type gguf_get_kv_type(const struct gguf_context *ctx, int64_t key_id) {
    if (!ctx || key_id < 0 || key_id >= ctx->n_kv) return GGUF_TYPE_COUNT;
    return ctx->kv[key_id].type;
}

enum gguf_type gguf_get_arr_type(const struct gguf_context *ctx, int64_t key_id) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_ARRAY, __func__);
    return kv ? kv->elem_type : GGUF_TYPE_COUNT;
}

#define GETTER(suffix, ctype, TYPE) \
    ctype gguf_get_val_##suffix(const struct gguf_context *ctx, int64_t key_id) { \
        const struct gguf_kv *kv = kv_checked(ctx, key_id, TYPE, __func__); \
        ctype v = 0; \
        if (kv) memcpy(&v, kv->data, sizeof v); \
        return v; \
    }
GETTER(u8, uint8_t, GGUF_TYPE_UINT8)
GETTER(i8, int8_t, GGUF_TYPE_INT8)
GETTER(u16, uint16_t, GGUF_TYPE_UINT16)
GETTER(i16, int16_t, GGUF_TYPE_INT16)
GETTER(u32, uint32_t, GGUF_TYPE_UINT32)
GETTER(i32, int32_t, GGUF_TYPE_INT32)
GETTER(f32, float, GGUF_TYPE_FLOAT32)
GETTER(u64, uint64_t, GGUF_TYPE_UINT64)
GETTER(i64, int64_t, GGUF_TYPE_INT64)
GETTER(f64, double, GGUF_TYPE_FLOAT64)

bool gguf_get_val_bool(const struct gguf_context *ctx, int64_t key_id) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_BOOL, __func__);
    return kv && *(const uint8_t *)kv->data != 0;
}

const char *gguf_get_val_str(const struct gguf_context *ctx, int64_t key_id) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_STRING, __func__);
    return kv ? ((char *const *)kv->data)[0] : NULL;
}

const void *gguf_get_val_data(const struct gguf_context *ctx, int64_t key_id) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_COUNT, __func__);
    return kv ? kv->data : NULL;
}

size_t gguf_get_arr_n(const struct gguf_context *ctx, int64_t key_id) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_ARRAY, __func__);
    return kv ? kv->n : 0;
}

const void *gguf_get_arr_data(const struct gguf_context *ctx, int64_t key_id) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_ARRAY, __func__);
    if (kv && kv->elem_type == GGUF_TYPE_STRING) {
        ggmlc_set_error(GGMLC_ERR_TYPE, "gguf_get_arr_data: '%s' is a string array (use gguf_get_arr_str)", kv->key);
        return NULL;
    }
    return kv ? kv->data : NULL;
}

const char *gguf_get_arr_str(const struct gguf_context *ctx, int64_t key_id, size_t i) {
    const struct gguf_kv *kv = kv_checked(ctx, key_id, GGUF_TYPE_ARRAY, __func__);
    if (!kv) return NULL;
    if (kv->elem_type != GGUF_TYPE_STRING || i >= kv->n) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_get_arr_str: '%s' has no string element %zu", kv->key, i);
        return NULL;
    }
    return ((char *const *)kv->data)[i];
}

/* ----------------------------------------------------------- tensors */

static const struct gguf_tensor_info *info_checked(const struct gguf_context *ctx, int64_t id, const char *func) {
    if (!ctx || id < 0 || id >= ctx->n_info) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: tensor id %lld out of range", func, (long long)id);
        return NULL;
    }
    return &ctx->info[id];
}

int64_t gguf_find_tensor(const struct gguf_context *ctx, const char *name) {
    for (int64_t i = 0; name && i < ctx->n_info; i++)
        if (strcmp(ctx->info[i].t.name, name) == 0) return i;
    return -1;
}

size_t gguf_get_tensor_offset(const struct gguf_context *ctx, int64_t id) {
    const struct gguf_tensor_info *info = info_checked(ctx, id, __func__);
    return info ? info->offset : 0;
}

const char *gguf_get_tensor_name(const struct gguf_context *ctx, int64_t id) {
    const struct gguf_tensor_info *info = info_checked(ctx, id, __func__);
    return info ? info->t.name : NULL;
}

const int64_t *gguf_get_tensor_ne(const struct gguf_context *ctx, int64_t id) {
    const struct gguf_tensor_info *info = info_checked(ctx, id, __func__);
    return info ? info->t.ne : NULL;
}

enum ggml_type gguf_get_tensor_type(const struct gguf_context *ctx, int64_t id) {
    const struct gguf_tensor_info *info = info_checked(ctx, id, __func__);
    return info ? info->t.type : GGML_TYPE_COUNT;
}

size_t gguf_get_tensor_size(const struct gguf_context *ctx, int64_t id) {
    const struct gguf_tensor_info *info = info_checked(ctx, id, __func__);
    return info ? ggml_nbytes(&info->t) : 0;
}

void ggmlc__gguf_info_set_strides(struct ggml_tensor *t) {
    t->nb[0] = ggml_type_size(t->type);
    t->nb[1] = ggml_row_size(t->type, t->ne[0]);
    for (int i = 2; i < GGML_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
}

bool ggmlc__gguf_info_append(struct gguf_context *ctx, const struct gguf_tensor_info *info) {
    if (ctx->n_info == ctx->cap_info) {
        const int64_t cap = ctx->cap_info ? 2 * ctx->cap_info : 16;
        void *p = realloc(ctx->info, (size_t)cap * sizeof *ctx->info);
        if (!p) return false;
        ctx->info = p;
        ctx->cap_info = cap;
    }
    ctx->info[ctx->n_info++] = *info;
    return true;
}

/* Lay the tensors out one after the other from tensor `from` on, each at an aligned offset. */
static void relayout(struct gguf_context *ctx, int64_t from) {
    for (int64_t i = from; i < ctx->n_info; i++) {
        const struct gguf_tensor_info *prev = i > 0 ? &ctx->info[i - 1] : NULL;
        ctx->info[i].offset = prev ? prev->offset + GGML_PAD(ggml_nbytes(&prev->t), ctx->alignment) : 0;
    }
}

void gguf_add_tensor(struct gguf_context *ctx, const struct ggml_tensor *tensor) {
    if (!ctx || !tensor) return;
    if (gguf_find_tensor(ctx, tensor->name) >= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_add_tensor: a tensor named '%s' exists already", tensor->name);
        return;
    }
    struct gguf_tensor_info info = {.t = *tensor};
    if (!ggmlc__gguf_info_append(ctx, &info)) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "gguf_add_tensor: out of memory");
        return;
    }
    relayout(ctx, ctx->n_info - 1);
}

void gguf_set_tensor_type(struct gguf_context *ctx, const char *name, enum ggml_type type) {
    const int64_t id = gguf_find_tensor(ctx, name);
    if (id < 0 || !ggmlc__type_is_valid(type) ||
        ctx->info[id].t.ne[0] % ggml_blck_size(type) != 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_set_tensor_type: cannot make tensor '%s' %s", name ? name : "(null)",
                        ggml_type_name(type));
        return;
    }
    ctx->info[id].t.type = type;
    ggmlc__gguf_info_set_strides(&ctx->info[id].t);
    relayout(ctx, id + 1);
}

void gguf_set_tensor_data(struct gguf_context *ctx, const char *name, const void *data) {
    const int64_t id = gguf_find_tensor(ctx, name);
    if (id < 0) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "gguf_set_tensor_data: no tensor named '%s'", name ? name : "(null)");
        return;
    }
    ctx->info[id].t.data = (void *)data;
    ctx->info[id].t.buffer = NULL;
}

/* ----------------------------------------------------------- setters */

bool ggmlc__gguf_kv_append(struct gguf_context *ctx, char *key, enum gguf_type type, enum gguf_type elem_type, size_t n,
                    void *data) {
    if (ctx->n_kv == ctx->cap_kv) {
        const int64_t cap = ctx->cap_kv ? 2 * ctx->cap_kv : 16;
        void *p = realloc(ctx->kv, (size_t)cap * sizeof *ctx->kv);
        if (!p) return false;
        ctx->kv = p;
        ctx->cap_kv = cap;
    }
    ctx->kv[ctx->n_kv++] = (struct gguf_kv){key, type, elem_type, n, data};
    return true;
}

int64_t gguf_remove_key(struct gguf_context *ctx, const char *key) {
    const int64_t id = gguf_find_key(ctx, key);
    if (id < 0) return -1;
    /* decided before the release: key may be the very string released (gguf_get_key) */
    const bool is_alignment = strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT) == 0;
    ggmlc__gguf_kv_release(&ctx->kv[id]);
    memmove(&ctx->kv[id], &ctx->kv[id + 1], (size_t)(ctx->n_kv - id - 1) * sizeof *ctx->kv);
    ctx->n_kv--;
    if (is_alignment) {
        ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
        relayout(ctx, 0);
    }
    return id;
}

/* Copy strings (elem_type STRING) or n raw elements; NULL when out of memory. */
static void *copy_values(enum gguf_type elem_type, const void *data, size_t n) {
    if (elem_type != GGUF_TYPE_STRING) {
        void *copy = malloc(n * ggmlc__gguf_type_size(elem_type) + 1);
        if (copy && n) memcpy(copy, data, n * ggmlc__gguf_type_size(elem_type));
        return copy;
    }
    char **strs = calloc(n + 1, sizeof *strs);
    for (size_t i = 0; strs && i < n; i++) {
        strs[i] = strdup(((const char *const *)data)[i] ? ((const char *const *)data)[i] : "");
        if (!strs[i]) {
            for (size_t j = 0; j < i; j++) free(strs[j]);
            free(strs);
            return NULL;
        }
    }
    return strs;
}

bool ggmlc__gguf_alignment_valid(enum gguf_type type, const void *data, size_t n,
                                 size_t *alignment) {
    uint32_t a = 0;
    if (type == GGUF_TYPE_UINT32 && n == 1) memcpy(&a, data, 4);
    if (a == 0 || (a & (a - 1)) != 0 || a > GGUF_MAX_ALIGNMENT) return false;
    *alignment = a;
    return true;
}

/* Replace or add key with a copy of the value; the pair goes to the end like in ggml.
 * key and data may belong to ctx itself (gguf_get_key, gguf_get_val_str): both are
 * copied before the old pair is released, and only the copies are used after that.
 * is_new: the caller knows that ctx has no such key (no search for it). */
static void set_value_as(struct gguf_context *ctx, const char *key, enum gguf_type type, enum gguf_type elem_type,
                         const void *data, size_t n, bool is_new) {
    if (!ctx || !key || (n && !data)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_set: NULL context, key or data");
        return;
    }
    if (ggmlc__gguf_type_size(elem_type) == 0 && elem_type != GGUF_TYPE_STRING) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_set: key '%s': invalid element type %d", key, (int)elem_type);
        return;
    }
    const bool is_alignment = strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT) == 0;
    size_t alignment = ctx->alignment;
    if (is_alignment && !ggmlc__gguf_alignment_valid(type, data, n, &alignment)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_set: %s must be a u32 power of two of at most %d",
                        GGUF_KEY_GENERAL_ALIGNMENT, GGUF_MAX_ALIGNMENT);
        return;
    }
    void *copy = copy_values(elem_type, data, n);
    char *key_copy = strdup(key);
    if (!copy || !key_copy) {
        free(key_copy);
        if (copy) {
            struct gguf_kv tmp = {NULL, type, elem_type, n, copy};
            ggmlc__gguf_kv_release(&tmp);
        }
        ggmlc_set_error(GGMLC_ERR_NOMEM, "gguf_set: out of memory for key '%s'", key);
        return;
    }
    key = NULL; /* from here on only the copies: the old pair (maybe holding key) goes away */
    if (!is_new) gguf_remove_key(ctx, key_copy);
    if (!ggmlc__gguf_kv_append(ctx, key_copy, type, elem_type, n, copy)) {
        struct gguf_kv tmp = {key_copy, type, elem_type, n, copy};
        ggmlc_set_error(GGMLC_ERR_NOMEM, "gguf_set: out of memory for key '%s'", key_copy);
        ggmlc__gguf_kv_release(&tmp);
        return;
    }
    if (is_alignment) {
        ctx->alignment = alignment;
        relayout(ctx, 0);
    }
}

static void set_value(struct gguf_context *ctx, const char *key, enum gguf_type type, enum gguf_type elem_type,
                      const void *data, size_t n) {
    set_value_as(ctx, key, type, elem_type, data, n, false);
}

#define SETTER(suffix, ctype, TYPE) \
    void gguf_set_val_##suffix(struct gguf_context *ctx, const char *key, ctype val) { \
        set_value(ctx, key, TYPE, TYPE, &val, 1); \
    }
SETTER(u8, uint8_t, GGUF_TYPE_UINT8)
SETTER(i8, int8_t, GGUF_TYPE_INT8)
SETTER(u16, uint16_t, GGUF_TYPE_UINT16)
SETTER(i16, int16_t, GGUF_TYPE_INT16)
SETTER(u32, uint32_t, GGUF_TYPE_UINT32)
SETTER(i32, int32_t, GGUF_TYPE_INT32)
SETTER(f32, float, GGUF_TYPE_FLOAT32)
SETTER(u64, uint64_t, GGUF_TYPE_UINT64)
SETTER(i64, int64_t, GGUF_TYPE_INT64)
SETTER(f64, double, GGUF_TYPE_FLOAT64)

void gguf_set_val_bool(struct gguf_context *ctx, const char *key, bool val) {
    const uint8_t byte = val ? 1 : 0;
    set_value(ctx, key, GGUF_TYPE_BOOL, GGUF_TYPE_BOOL, &byte, 1);
}

void gguf_set_val_str(struct gguf_context *ctx, const char *key, const char *val) {
    set_value(ctx, key, GGUF_TYPE_STRING, GGUF_TYPE_STRING, &val, 1);
}

void gguf_set_arr_data(struct gguf_context *ctx, const char *key, enum gguf_type type, const void *data, size_t n) {
    if (type == GGUF_TYPE_STRING || type == GGUF_TYPE_ARRAY) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "gguf_set_arr_data: key '%s': element type %s is not fixed-size",
                        key ? key : "(null)", gguf_type_name(type) ? gguf_type_name(type) : "invalid");
        return;
    }
    set_value(ctx, key, GGUF_TYPE_ARRAY, type, data, n);
}

void gguf_set_arr_str(struct gguf_context *ctx, const char *key, const char **data, size_t n) {
    set_value(ctx, key, GGUF_TYPE_ARRAY, GGUF_TYPE_STRING, data, n);
}

void gguf_set_kv(struct gguf_context *ctx, const struct gguf_context *src) {
    /* copying a context onto itself sets every pair to its own value: nothing changes (and the
     * loop below would walk pairs that move under it) */
    if (ctx == src || !ctx || !src) return;
    /* into an empty context the keys of src (all different) need not be searched: copying
     * many pairs stays linear */
    const bool into_empty = ctx->n_kv == 0;
    for (int64_t i = 0; i < src->n_kv; i++) {
        const struct gguf_kv *kv = &src->kv[i];
        set_value_as(ctx, kv->key, kv->type, kv->elem_type, kv->data, kv->n, into_empty);
    }
}
