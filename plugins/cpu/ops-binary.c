/*
 * ops-binary.c - add, sub, mul, div and add1 with the second operand
 * repeated over the first in all four dimensions.
 *
 * All-F32 operands with contiguous rows go straight through loops that gcc
 * vectorizes; any other mix of F32/F16/BF16 (and strided rows) is
 * converted through float chunks.
 */
#include "ops-ew.h"

typedef void (*binary_row_fn)(int64_t n, float *z, const float *x, const float *y);

/* No restrict: in-place nodes have z == x.  gcc checks the overlap at run time. */
EW_CLONES static void row_add(int64_t n, float *z, const float *x, const float *y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] + y[i]; }
EW_CLONES static void row_sub(int64_t n, float *z, const float *x, const float *y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] - y[i]; }
EW_CLONES static void row_mul(int64_t n, float *z, const float *x, const float *y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] * y[i]; }
EW_CLONES static void row_div(int64_t n, float *z, const float *x, const float *y) { for (int64_t i = 0; i < n; i++) z[i] = x[i] / y[i]; }

/* x OP y[0] for every element (a broadcast scalar, e.g. ne10 == 1). */
static void row_scalar(binary_row_fn fn, int64_t n, float *z, const float *x, float y) {
    float ys[EW_CHUNK];
    for (int64_t i = 0; i < EW_CHUNK; i++) ys[i] = y;
    for (int64_t off = 0; off < n; off += EW_CHUNK) fn(n - off < EW_CHUNK ? n - off : EW_CHUNK, z + off, x + off, ys);
}

/* One row, all F32 and contiguous; y has ne10 values repeated along the row. */
static void binary_row_f32(binary_row_fn fn, int64_t ne0, int64_t ne10, float *z, const float *x, const float *y) {
    if (ne10 == ne0) {
        fn(ne0, z, x, y);
    } else if (ne10 == 1) {
        row_scalar(fn, ne0, z, x, y[0]);
    } else {
        for (int64_t r = 0; r < ne0; r += ne10) fn(ne10, z + r, x + r, y);
    }
}

/* Columns [c0, c1) of one row of any float types and strides, through float chunks. */
static void binary_row_mixed(binary_row_fn fn, const struct ggml_tensor *dst, char *z, const struct ggml_tensor *a, const char *x,
                             const struct ggml_tensor *b, const char *y, int64_t c0, int64_t c1) {
    const int64_t ne0 = dst->ne[0], ne10 = b->ne[0];
    float xs[EW_CHUNK], ys[EW_CHUNK], zs[EW_CHUNK];
    for (int64_t off = c0; off < c1; off += EW_CHUNK) {
        const int64_t n = c1 - off < EW_CHUNK ? c1 - off : EW_CHUNK;
        ew_load(xs, x + off * a->nb[0], a->type, a->nb[0], n);
        if (ne10 == ne0) {
            ew_load(ys, y + off * b->nb[0], b->type, b->nb[0], n);
        } else {
            for (int64_t i = 0; i < n; i++) ew_load(&ys[i], y + ((off + i) % ne10) * b->nb[0], b->type, b->nb[0], 1);
        }
        fn(n, zs, xs, ys);
        ew_store(z + off * dst->nb[0], dst->type, dst->nb[0], zs, n);
    }
}

static enum ggml_status binary_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst, binary_row_fn fn) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int64_t ne0 = dst->ne[0], ne10 = b->ne[0];
    int64_t r0, r1, c0, c1;
    ew_task_share(ggml_nrows(dst), ne0, call->ith, call->nth, &r0, &r1, &c0, &c1);
    /* the F32 loops take whole rows, or any columns when b is not tiled along them */
    const bool fast = dst->type == GGML_TYPE_F32 && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 &&
                      dst->nb[0] == sizeof(float) && a->nb[0] == sizeof(float) && b->nb[0] == sizeof(float) &&
                      (ne10 == ne0 || ne10 == 1 || (c0 == 0 && c1 == ne0));
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        float *z = (float *)ew_row(dst, i1, i2, i3);
        const float *x = (const float *)ew_row(a, i1, i2, i3);
        const float *y = (const float *)ew_row(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        if (fast)
            binary_row_f32(fn, c1 - c0, ne10 == ne0 ? c1 - c0 : ne10, z + c0, x + c0, ne10 == ne0 ? y + c0 : y);
        else
            binary_row_mixed(fn, dst, (char *)z, a, (const char *)x, b, (const char *)y, c0, c1);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_add(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return binary_compute(call, dst, row_add); }
static enum ggml_status compute_sub(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return binary_compute(call, dst, row_sub); }
static enum ggml_status compute_mul(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return binary_compute(call, dst, row_mul); }
static enum ggml_status compute_div(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return binary_compute(call, dst, row_div); }

static bool supports_binary(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return a && b && ew_is_float(node->type) && ew_is_float(a->type) && ew_is_float(b->type) && ggml_can_repeat(b, a) &&
           ggml_are_same_shape(a, node);
}

void cpu_ops_binary_register(struct cpu_op_table *t) {
    static const struct {
        enum ggml_op op;
        ggmlc_op_fn fn;
    } ops[] = {
        {GGML_OP_ADD, compute_add}, {GGML_OP_ADD1, compute_add}, {GGML_OP_SUB, compute_sub},
        {GGML_OP_MUL, compute_mul}, {GGML_OP_DIV, compute_div},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        t->compute[ops[i].op] = ops[i].fn;
        t->supports[ops[i].op] = supports_binary;
        t->n_tasks[ops[i].op] = ew_tasks_cheap;
    }
}
