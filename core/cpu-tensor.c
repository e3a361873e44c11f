/*
 * cpu-tensor.c - the host-tensor helpers of ggml-cpu.h: scalar tensors,
 * element access by flat or 4-D index for F32/F16/BF16/I8/I16/I32 tensors
 * of any layout, row conversions, and the NUMA switches.
 */
#include "ggml-impl.h"
#include "ggml-cpu.h"

/* ------------------------------------------------------ element access */

static bool element_type_ok(enum ggml_type type) {
    return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16 || type == GGML_TYPE_I8 ||
           type == GGML_TYPE_I16 || type == GGML_TYPE_I32;
}

/* Host address of element (i0..i3), or NULL with an error for bad tensors and indices. */
static char *element_ptr(const char *func, const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    if (!t || !t->data) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %s tensor", func, t ? "unallocated" : "NULL");
        return NULL;
    }
    if (!element_type_ok(t->type)) {
        ggmlc_set_error(GGMLC_ERR_TYPE, "%s: tensor '%s' has type %s (F32, F16, BF16, I8, I16 or I32 expected)", func, t->name,
                        ggml_type_name(t->type));
        return NULL;
    }
    const struct ggml_backend_buffer *buf = t->view_src ? t->view_src->buffer : t->buffer;
    if (buf && !ggml_backend_buffer_is_host((ggml_backend_buffer_t)buf)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: tensor '%s' is not in host memory", func, t->name);
        return NULL;
    }
    const int64_t idx[4] = {i0, i1, i2, i3};
    for (int d = 0; d < 4; d++) {
        if (idx[d] < 0 || idx[d] >= t->ne[d]) {
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: index %lld of dimension %d is outside [0, %lld) of tensor '%s'", func,
                            (long long)idx[d], d, (long long)t->ne[d], t->name);
            return NULL;
        }
    }
    return (char *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* double holds every value of these types exactly. */
static double load_element(enum ggml_type type, const char *p) {
    switch (type) {
    case GGML_TYPE_F32: return *(const float *)p;
    case GGML_TYPE_F16: return ggmlc_fp16_to_fp32(*(const ggml_fp16_t *)p);
    case GGML_TYPE_BF16: return ggmlc_bf16_to_fp32(*(const ggml_bf16_t *)p);
    case GGML_TYPE_I8: return *(const int8_t *)p;
    case GGML_TYPE_I16: return *(const int16_t *)p;
    case GGML_TYPE_I32: return *(const int32_t *)p;
    default: return 0;
    }
}

/* Integer types truncate toward zero and saturate. */
static int64_t to_int(double v, int64_t lo, int64_t hi) {
    if (v != v) return 0;
    return v < (double)lo ? lo : v > (double)hi ? hi : (int64_t)v;
}

static void store_element(enum ggml_type type, char *p, double v) {
    switch (type) {
    case GGML_TYPE_F32: *(float *)p = (float)v; break;
    case GGML_TYPE_F16: *(ggml_fp16_t *)p = ggmlc_fp32_to_fp16((float)v); break;
    case GGML_TYPE_BF16: *(ggml_bf16_t *)p = ggmlc_fp32_to_bf16((float)v); break;
    case GGML_TYPE_I8: *(int8_t *)p = (int8_t)to_int(v, INT8_MIN, INT8_MAX); break;
    case GGML_TYPE_I16: *(int16_t *)p = (int16_t)to_int(v, INT16_MIN, INT16_MAX); break;
    case GGML_TYPE_I32: *(int32_t *)p = (int32_t)to_int(v, INT32_MIN, INT32_MAX); break;
    default: break;
    }
}

/* Flat index (ne[0] fastest) to coordinates; false when out of range. */
static bool unravel(const char *func, const struct ggml_tensor *t, int i, int64_t c[4]) {
    if (!t || i < 0 || i >= ggml_nelements(t)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: flat index %d is outside tensor '%s' (%lld elements)", func, i,
                        t ? t->name : "(null)", t ? (long long)ggml_nelements(t) : 0LL);
        return false;
    }
    ggml_unravel_index(t, i, &c[0], &c[1], &c[2], &c[3]);
    return true;
}

static double get_nd(const char *func, const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = element_ptr(func, t, i0, i1, i2, i3);
    return p ? load_element(t->type, p) : 0.0;
}

static void set_nd(const char *func, const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    char *p = element_ptr(func, t, i0, i1, i2, i3);
    if (p) store_element(t->type, p, v);
}

int32_t ggml_get_i32_nd(const struct ggml_tensor *t, int i0, int i1, int i2, int i3) {
    return (int32_t)to_int(get_nd(__func__, t, i0, i1, i2, i3), INT32_MIN, INT32_MAX);
}

void ggml_set_i32_nd(const struct ggml_tensor *t, int i0, int i1, int i2, int i3, int32_t value) { set_nd(__func__, t, i0, i1, i2, i3, value); }

float ggml_get_f32_nd(const struct ggml_tensor *t, int i0, int i1, int i2, int i3) { return (float)get_nd(__func__, t, i0, i1, i2, i3); }

void ggml_set_f32_nd(const struct ggml_tensor *t, int i0, int i1, int i2, int i3, float value) { set_nd(__func__, t, i0, i1, i2, i3, value); }

int32_t ggml_get_i32_1d(const struct ggml_tensor *t, int i) {
    int64_t c[4];
    return unravel(__func__, t, i, c) ? (int32_t)to_int(get_nd(__func__, t, c[0], c[1], c[2], c[3]), INT32_MIN, INT32_MAX) : 0;
}

void ggml_set_i32_1d(const struct ggml_tensor *t, int i, int32_t value) {
    int64_t c[4];
    if (unravel(__func__, t, i, c)) set_nd(__func__, t, c[0], c[1], c[2], c[3], value);
}

float ggml_get_f32_1d(const struct ggml_tensor *t, int i) {
    int64_t c[4];
    return unravel(__func__, t, i, c) ? (float)get_nd(__func__, t, c[0], c[1], c[2], c[3]) : 0.0f;
}

void ggml_set_f32_1d(const struct ggml_tensor *t, int i, float value) {
    int64_t c[4];
    if (unravel(__func__, t, i, c)) set_nd(__func__, t, c[0], c[1], c[2], c[3], value);
}

/* Every element of t set to v. */
static struct ggml_tensor *fill_all(const char *func, struct ggml_tensor *t, double v) {
    if (t && ggml_is_empty(t)) return t;
    if (!element_ptr(func, t, 0, 0, 0, 0)) return t;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
                char *row = (char *)t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++) store_element(t->type, row + i0 * t->nb[0], v);
            }
    return t;
}

struct ggml_tensor *ggml_set_i32(struct ggml_tensor *t, int32_t value) { return fill_all(__func__, t, value); }
struct ggml_tensor *ggml_set_f32(struct ggml_tensor *t, float value) { return fill_all(__func__, t, value); }

struct ggml_tensor *ggml_new_i32(struct ggml_context *ctx, int32_t value) {
    if (ctx && ctx->no_alloc) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "the context has no_alloc set");
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    return t ? ggml_set_i32(t, value) : NULL;
}

struct ggml_tensor *ggml_new_f32(struct ggml_context *ctx, float value) {
    if (ctx && ctx->no_alloc) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "the context has no_alloc set");
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    return t ? ggml_set_f32(t, value) : NULL;
}

/* ------------------------------------------------------ row conversions */

void ggml_cpu_fp32_to_fp32(const float *x, float *y, int64_t n) { memmove(y, x, (size_t)n * sizeof *y); }

void ggml_cpu_fp32_to_i32(const float *x, int32_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = (int32_t)x[i];
}

void ggml_cpu_fp32_to_fp16(const float *x, ggml_fp16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_fp32_to_fp16(x[i]);
}

void ggml_cpu_fp16_to_fp32(const ggml_fp16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_fp16_to_fp32(x[i]);
}

void ggml_cpu_fp32_to_bf16(const float *x, ggml_bf16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_fp32_to_bf16(x[i]);
}

void ggml_cpu_bf16_to_fp32(const ggml_bf16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ggmlc_bf16_to_fp32(x[i]);
}

/* ------------------------------------------------------------------ NUMA */

void ggml_numa_init(enum ggml_numa_strategy numa) { (void)numa; /* placement is left to the OS */ }
bool ggml_is_numa(void) { return false; }
