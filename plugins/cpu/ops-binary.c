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

/* n values of a row starting at column off: quantized rows through the type's traits
 * (off and n whole blocks), others through ew_load/ew_store. */
static void load_at(float *dst, const char *row, const struct ggml_tensor *t, int64_t off, int64_t n) {
    if (ggml_is_quantized(t->type))
        ggml_get_type_traits(t->type)->to_float(row + ggml_row_size(t->type, off), dst, n);
    else
        ew_load(dst, row + off * t->nb[0], t->type, t->nb[0], n);
}

static void store_at(char *row, const struct ggml_tensor *t, int64_t off, const float *src, int64_t n) {
    if (ggml_is_quantized(t->type))
        ggml_get_type_traits(t->type)->from_float_ref(src, row + ggml_row_size(t->type, off), n);
    else
        ew_store(row + off * t->nb[0], t->type, t->nb[0], src, n);
}

/* Columns [c0, c1) of one row of any float types and strides, through float chunks
 * (EW_CHUNK is a multiple of every block size, so quantized chunks are whole blocks). */
static void binary_row_mixed(binary_row_fn fn, const struct ggml_tensor *dst, char *z, const struct ggml_tensor *a, const char *x,
                             const struct ggml_tensor *b, const char *y, int64_t c0, int64_t c1) {
    const int64_t ne0 = dst->ne[0], ne10 = b->ne[0];
    float xs[EW_CHUNK], ys[EW_CHUNK], zs[EW_CHUNK];
    for (int64_t off = c0; off < c1; off += EW_CHUNK) {
        const int64_t n = c1 - off < EW_CHUNK ? c1 - off : EW_CHUNK;
        load_at(xs, x, a, off, n);
        if (ne10 == ne0) {
            ew_load(ys, y + off * b->nb[0], b->type, b->nb[0], n);
        } else {
            for (int64_t i = 0; i < n; i++) ew_load(&ys[i], y + ((off + i) % ne10) * b->nb[0], b->type, b->nb[0], 1);
        }
        fn(n, zs, xs, ys);
        store_at(z, dst, off, zs, n);
    }
}

static enum ggml_status binary_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst, binary_row_fn fn) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int64_t ne0 = dst->ne[0], ne10 = b->ne[0];
    int64_t r0, r1, c0 = 0, c1 = ne0;
    if (ggml_is_quantized(a->type) || ggml_is_quantized(dst->type))
        ew_task_rows(dst, call->ith, call->nth, &r0, &r1); /* blocks are not split */
    else
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

/* Quantized operands (add's a, add_cast's result) need their traits and contiguous blocks. */
static bool quantized_ok(const struct ggml_tensor *t, bool as_dst) {
    const struct ggml_type_traits *tr = ggml_get_type_traits(t->type);
    return t->nb[0] == ggml_type_size(t->type) && (as_dst ? tr->from_float_ref != NULL : tr->to_float != NULL);
}

static bool supports_binary(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || !b || !ew_is_float(b->type) || !ggml_can_repeat(b, a) || !ggml_are_same_shape(a, node)) return false;
    const bool qa = ggml_is_quantized(a->type), qd = ggml_is_quantized(node->type);
    if (qa || qd)
        return node->op == GGML_OP_ADD && b->type == GGML_TYPE_F32 && (!qa || quantized_ok(a, false)) && (!qd || quantized_ok(node, true)) &&
               (qa || ew_is_float(a->type)) && (qd || ew_is_float(node->type));
    return ew_is_float(node->type) && ew_is_float(a->type);
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
