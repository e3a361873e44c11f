/*
 * ops-layout.c - operators that rearrange data: set and acc (write or add
 * b into a strided view of a copy of a), repeat, repeat_back and concat.
 */
#include "ops-ew.h"

/* ------------------------------------------------------------ set, acc */

/* dst = a (unless in place); then view(dst, nb1, nb2, nb3, offset) = b (set) or += b (acc). */
static enum ggml_status set_acc(const struct ggmlc_op_call *call, struct ggml_tensor *dst, bool add) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct ggmlc_set_params p = ggmlc_set_params_of(dst);
    const size_t nb1 = p.nb1, nb2 = p.nb2, nb3 = p.nb3, offset = p.offset;
    const bool inplace = p.inplace;
    if (!inplace) {
        int64_t b0, b1;
        cpu_split_range((int64_t)ggml_nbytes(dst), call->ith, call->nth, &b0, &b1);
        if (b1 > b0) memcpy((char *)dst->data + b0, (const char *)a->data + b0, (size_t)(b1 - b0));
        call->barrier(call); /* the copy is complete before any task writes b's rows */
    }
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(b), call->ith, call->nth, &r0, &r1);
    float xs[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, b->ne, &i1, &i2, &i3);
        const char *x = ew_row(b, i1, i2, i3);
        float *y = (float *)((char *)dst->data + offset + i1 * nb1 + i2 * nb2 + i3 * nb3);
        if (dst->type == GGML_TYPE_I32) { /* set of I32 into I32: a plain element copy */
            ew_copy_same((char *)y, sizeof(int32_t), x, b->nb[0], b->ne[0], sizeof(int32_t));
            continue;
        }
        for (int64_t off = 0; off < b->ne[0]; off += EW_CHUNK) {
            const int64_t n = b->ne[0] - off < EW_CHUNK ? b->ne[0] - off : EW_CHUNK;
            ew_load(xs, x + off * b->nb[0], b->type, b->nb[0], n);
            if (add)
                for (int64_t i = 0; i < n; i++) y[off + i] += xs[i];
            else
                memcpy(y + off, xs, (size_t)n * sizeof(float));
        }
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_set(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return set_acc(call, dst, false); }
static enum ggml_status compute_acc(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return set_acc(call, dst, true); }

static bool supports_set_acc(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const bool i32_set = node->op == GGML_OP_SET && a && b && node->type == GGML_TYPE_I32 && a->type == GGML_TYPE_I32 &&
                         b->type == GGML_TYPE_I32;
    return a && b && ((node->type == GGML_TYPE_F32 && a->type == GGML_TYPE_F32 && ew_is_float(b->type)) || i32_set) &&
           ggml_is_contiguous(a) && ggml_is_contiguous(node) && ggml_are_same_shape(a, node);
}

/* -------------------------------------------------------------- repeat */

static enum ggml_status compute_repeat(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const size_t es = ggml_type_size(a->type);
    const int64_t ne00 = a->ne[0];
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        const char *x = ew_row(a, i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]);
        char *y = ew_row(dst, i1, i2, i3);
        for (int64_t k = 0; k < dst->ne[0]; k += ne00) ew_copy_same(y + k * dst->nb[0], dst->nb[0], x, a->nb[0], ne00, es);
    }
    return GGML_STATUS_SUCCESS;
}

/* dst (b's shape) = the sum of a's repetitions of it. */
static enum ggml_status compute_repeat_back(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const int64_t ne0 = dst->ne[0];
    const int64_t k0n = a->ne[0] / ne0, k1n = a->ne[1] / dst->ne[1], k2n = a->ne[2] / dst->ne[2], k3n = a->ne[3] / dst->ne[3];
    int64_t r0, r1, c0, c1; /* a bias gradient is one row: the tasks share its columns */
    ew_task_share(ggml_nrows(dst), ne0, call->ith, call->nth, &r0, &r1, &c0, &c1);
    const bool dense = a->type == GGML_TYPE_F32 && a->nb[0] == sizeof(float);
    float acc[EW_CHUNK], xs[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        for (int64_t off = c0; off < c1; off += EW_CHUNK) {
            const int64_t n = c1 - off < EW_CHUNK ? c1 - off : EW_CHUNK;
            memset(acc, 0, sizeof acc);
            for (int64_t k3 = 0; k3 < k3n; k3++)
                for (int64_t k2 = 0; k2 < k2n; k2++)
                    for (int64_t k1 = 0; k1 < k1n; k1++) {
                        const char *x = ew_row(a, i1 + k1 * dst->ne[1], i2 + k2 * dst->ne[2], i3 + k3 * dst->ne[3]);
                        for (int64_t k0 = 0; k0 < k0n; k0++) {
                            const char *xk = x + (k0 * ne0 + off) * a->nb[0];
                            if (dense) { /* summed from the row itself: no copy through xs */
                                for (int64_t i = 0; i < n; i++) acc[i] += ((const float *)xk)[i];
                                continue;
                            }
                            ew_load(xs, xk, a->type, a->nb[0], n);
                            for (int64_t i = 0; i < n; i++) acc[i] += xs[i];
                        }
                    }
            ew_store(ew_row(dst, i1, i2, i3) + off * dst->nb[0], dst->type, dst->nb[0], acc, n);
        }
    }
    return GGML_STATUS_SUCCESS;
}

/* Split by what it reads: the bias gradient of a 256-row batch is a 512-element result
 * that sums 131072 elements, cut as cheap and given to one thread until then. */
static int repeat_back_tasks(const struct ggml_tensor *node, int n_threads) {
    return ggml_nelements(node->src[0]) < 32768 ? 1 : n_threads;
}

static bool supports_repeat(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && a->type == node->type && ew_type_ok(a->type) && ggml_can_repeat(a, node);
}

static bool supports_repeat_back(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && ew_is_float(a->type) && ew_is_float(node->type) && ggml_can_repeat(node, a);
}

/* -------------------------------------------------------------- concat */

static enum ggml_status compute_concat(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int dim = ggmlc_op_param_i32(dst, 0);
    /* rows are moved as units of the type: elements, or whole blocks of a block format */
    const size_t es = ggml_type_size(dst->type);
    const int64_t blck = ggml_blck_size(dst->type);
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t c[4] = {0};
        ew_row_coords(ir, dst->ne, &c[1], &c[2], &c[3]);
        char *y = ew_row(dst, c[1], c[2], c[3]);
        if (dim == 0) {
            const int64_t na = a->ne[0] / blck;
            ew_copy_same(y, dst->nb[0], ew_row(a, c[1], c[2], c[3]), a->nb[0], na, es);
            ew_copy_same(y + na * dst->nb[0], dst->nb[0], ew_row(b, c[1], c[2], c[3]), b->nb[0], b->ne[0] / blck, es);
            continue;
        }
        const struct ggml_tensor *src = c[dim] < a->ne[dim] ? a : b;
        if (src == b) c[dim] -= a->ne[dim];
        ew_copy_same(y, dst->nb[0], ew_row(src, c[1], c[2], c[3]), src->nb[0], dst->ne[0] / blck, es);
    }
    return GGML_STATUS_SUCCESS;
}

static bool supports_concat(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = ggmlc_op_param_i32(node, 0);
    const enum ggml_type t = node->type;
    const int64_t blck = ggml_blck_size(t);
    /* any type with a size: values are moved, never converted */
    if (!a || !b || a->type != t || b->type != t || blck <= 0 || ggml_type_size(t) == 0 || dim < 0 || dim > 3) return false;
    if (blck > 1 && (a->ne[0] % blck != 0 || b->ne[0] % blck != 0 || a->nb[0] != ggml_type_size(t) ||
                     b->nb[0] != ggml_type_size(t) || node->nb[0] != ggml_type_size(t)))
        return false;
    for (int d = 0; d < 4; d++)
        if (node->ne[d] != (d == dim ? a->ne[d] + b->ne[d] : a->ne[d]) || (d != dim && a->ne[d] != b->ne[d])) return false;
    return true;
}

void cpu_ops_layout_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_SET] = compute_set;
    t->compute[GGML_OP_ACC] = compute_acc;
    t->supports[GGML_OP_SET] = supports_set_acc;
    t->supports[GGML_OP_ACC] = supports_set_acc;
    t->n_tasks[GGML_OP_SET] = ew_tasks_cheap;
    t->n_tasks[GGML_OP_ACC] = ew_tasks_cheap;

    t->compute[GGML_OP_REPEAT] = compute_repeat;
    t->supports[GGML_OP_REPEAT] = supports_repeat;
    t->n_tasks[GGML_OP_REPEAT] = ew_tasks_cheap;
    t->compute[GGML_OP_REPEAT_BACK] = compute_repeat_back;
    t->supports[GGML_OP_REPEAT_BACK] = supports_repeat_back;
    t->n_tasks[GGML_OP_REPEAT_BACK] = repeat_back_tasks;

    t->compute[GGML_OP_CONCAT] = compute_concat;
    t->supports[GGML_OP_CONCAT] = supports_concat;
    t->n_tasks[GGML_OP_CONCAT] = ew_tasks_cheap;
}
