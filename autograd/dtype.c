/*
 * dtype.c - float16 and bfloat16 storage of the eager tensors: the dtype of results
 * (PyTorch's promotion), rounding pending values to their storage type, host conversions,
 * ga_to_dtype and the checks that a device can hold a dtype.
 *
 * Every value in the segment is read as F32 (t->node), so the ops need no change: a handle of
 * a 16-bit dtype adds two copies after the node that made it, F32 -> storage type (t->raw,
 * the rounding, which is what the flush stores) -> F32 (what later ops read).
 */
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

static _Thread_local enum ga_dtype default_dtype = GA_FLOAT32;

static bool dtype_valid(enum ga_dtype dtype) {
    return dtype == GA_FLOAT32 || dtype == GA_FLOAT16 || dtype == GA_BFLOAT16;
}

static bool check_dtype(enum ga_dtype dtype, const char *fn) {
    if (dtype_valid(dtype)) return true;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %d is not a dtype (GA_FLOAT32, GA_FLOAT16, "
                    "GA_BFLOAT16)", fn, (int)dtype);
    return false;
}

enum ggml_type ggmlc__ga_ggml_type(enum ga_dtype dtype) {
    switch (dtype) {
    case GA_FLOAT16: return GGML_TYPE_F16;
    case GA_BFLOAT16: return GGML_TYPE_BF16;
    default: return GGML_TYPE_F32;
    }
}

const char *ga_dtype_name(enum ga_dtype dtype) {
    switch (dtype) {
    case GA_FLOAT32: return "float32";
    case GA_FLOAT16: return "float16";
    case GA_BFLOAT16: return "bfloat16";
    default: return "invalid";
    }
}

size_t ga_dtype_size(enum ga_dtype dtype) {
    return dtype_valid(dtype) ? ggml_type_size(ggmlc__ga_ggml_type(dtype)) : 0;
}

enum ga_dtype ga_dtype_of(const ga_tensor *t) {
    return ggmlc__ga_check(t, "ga_dtype_of") ? t->dtype : GA_FLOAT32;
}

enum ga_dtype ga_set_default_dtype(enum ga_dtype dtype) {
    enum ga_dtype was = default_dtype;
    if (check_dtype(dtype, "ga_set_default_dtype")) default_dtype = dtype;
    return was;
}

enum ga_dtype ga_get_default_dtype(void) { return default_dtype; }

enum ga_dtype ggmlc__ga_creation_dtype(void) { return default_dtype; }

/* ------------------------------------------------------------ devices */

/* Whether the backend computes the two conversions a 16-bit handle adds (checked once per
 * device and dtype; the scheduler would otherwise move every one of them to the CPU). */
static bool backend_converts(ga_device *dev, enum ggml_type type) {
    struct ggml_init_params ip = {4 * ggml_tensor_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) return false;
    struct ggml_tensor *f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    struct ggml_tensor *to = ggml_cast(ctx, f, type);
    struct ggml_tensor *back = ggml_cast(ctx, to, GGML_TYPE_F32);
    bool ok = ggml_backend_dev_supports_op(dev->dev, to) &&
              ggml_backend_dev_supports_op(dev->dev, back);
    ggml_free(ctx);
    return ok;
}

bool ggmlc__ga_dtype_ok(ga_device *dev, enum ga_dtype dtype, const char *fn) {
    if (!check_dtype(dtype, fn)) return false;
    if (dtype == GA_FLOAT32) return true;
    unsigned char *st = &dev->dtype_state[dtype];
    if (*st == 0) *st = backend_converts(dev, ggmlc__ga_ggml_type(dtype)) ? 1 : 2;
    if (*st == 1) return true;
    ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "%s: device %s has no %s storage", fn,
                    ga_device_name(dev), ga_dtype_name(dtype));
    return false;
}

/* ---------------------------------------------------------- promotion */

bool ggmlc__ga_set_dtype(ga_tensor *t, enum ga_dtype dtype) {
    t->dtype = dtype;
    t->raw = NULL;
    if (dtype == GA_FLOAT32) return true;
    struct ggml_context *ctx = ggmlc__ga_ctx(t);
    t->raw = ggml_cast(ctx, t->node, ggmlc__ga_ggml_type(dtype));
    struct ggml_tensor *back = t->raw ? ggml_cast(ctx, t->raw, GGML_TYPE_F32) : NULL;
    if (!back) {
        ggmlc_set_error(GGMLC_ERR_INTERNAL, "ga: cannot round a value to %s",
                        ga_dtype_name(dtype));
        return false;
    }
    t->node = back;
    return true;
}

/* float16 with bfloat16 has no common 16-bit type: float32, as PyTorch. */
static enum ga_dtype promote_pair(enum ga_dtype a, enum ga_dtype b) {
    return a == b ? a : GA_FLOAT32;
}

enum ga_dtype ggmlc__ga_promote(ga_tensor *const *inputs, int n_inputs) {
    /* dimensioned tensors decide; 0-dimensional ones only when there are no others */
    int found[2] = {0, 0};
    enum ga_dtype r[2] = {GA_FLOAT32, GA_FLOAT32};
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i]) continue;
        int k = inputs[i]->ndim > 0;
        r[k] = found[k] ? promote_pair(r[k], inputs[i]->dtype) : inputs[i]->dtype;
        found[k] = 1;
    }
    return found[1] ? r[1] : r[0];
}

/* ---------------------------------------------------------- host data */

void ggmlc__ga_from_f32(enum ga_dtype dtype, const float *x, void *dst, size_t n) {
    switch (dtype) {
    case GA_FLOAT16: ggml_fp32_to_fp16_row(x, dst, (int64_t)n); break;
    case GA_BFLOAT16: ggml_fp32_to_bf16_row_ref(x, dst, (int64_t)n); break;
    default: memcpy(dst, x, n * sizeof *x);
    }
}

void ggmlc__ga_to_f32(enum ga_dtype dtype, const void *src, float *y, size_t n) {
    switch (dtype) {
    case GA_FLOAT16: ggml_fp16_to_fp32_row(src, y, (int64_t)n); break;
    case GA_BFLOAT16: ggml_bf16_to_fp32_row(src, y, (int64_t)n); break;
    default: memcpy(y, src, n * sizeof *y);
    }
}

/* ---------------------------------------------------------- conversion */

/* The gradient comes back as F32 nodes; accumulation rounds it to the input's dtype. */
static void to_dtype_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                         struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    (void)fn;
    (void)out;
    grads[0] = g;
}

ga_tensor *ga_to_dtype(const ga_tensor *ct, enum ga_dtype dtype) {
    ga_tensor *t = (ga_tensor *)ct;
    if (!ggmlc__ga_check(t, "ga_to_dtype") || !ggmlc__ga_dtype_ok(t->dev, dtype, "ga_to_dtype"))
        return NULL;
    if (t->dtype == dtype) {
        ggmlc__ga_scope_track(ga_retain(t)); /* the caller's reference, as any op's result */
        return t;
    }
    if (!ggmlc__ga_reserve(t->dev, 6)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(t);
    if (!n) return NULL;
    ga_tensor *r = ggmlc__ga_from_node(t->dev, n, t->ndim);
    if (r && !ggmlc__ga_set_dtype(r, dtype)) {
        ga_release(r);
        return NULL;
    }
    return ggmlc__ga_record_as(r, "ga_to_dtype", to_dtype_vjp, &t, 1);
}
