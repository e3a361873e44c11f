/*
 * ops-matrix.c - operators whose value depends on the element's position:
 * tri, diag_mask_inf/zero, diag and arange.
 */
#include "ops-ew.h"

/* Shared by tri and the diag masks: dst = src where keep(column, row) else fill. */
enum mask_kind { MASK_TRI, MASK_DIAG };

static enum ggml_status mask_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst, enum mask_kind kind, float fill) {
    const struct ggml_tensor *a = dst->src[0];
    const int32_t param = ggmlc_op_param_i32(dst, 0); /* tri: the triangle type; masks: n_past */
    const int64_t ne0 = dst->ne[0];
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    float row[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        const char *x = ew_row(a, i1, i2, i3);
        char *y = ew_row(dst, i1, i2, i3);
        for (int64_t off = 0; off < ne0; off += EW_CHUNK) {
            const int64_t n = ne0 - off < EW_CHUNK ? ne0 - off : EW_CHUNK;
            ew_load(row, x + off * a->nb[0], a->type, a->nb[0], n);
            for (int64_t j = 0; j < n; j++) {
                const int64_t i0 = off + j;
                bool keep;
                if (kind == MASK_DIAG) {
                    keep = i0 <= param + i1;
                } else {
                    switch (param) {
                    case GGML_TRI_TYPE_LOWER: keep = i0 < i1; break;
                    case GGML_TRI_TYPE_LOWER_DIAG: keep = i0 <= i1; break;
                    case GGML_TRI_TYPE_UPPER: keep = i0 > i1; break;
                    default: keep = i0 >= i1; break;
                    }
                }
                if (!keep) row[j] = fill;
            }
            ew_store(y + off * dst->nb[0], dst->type, dst->nb[0], row, n);
        }
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_tri(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return mask_rows(call, dst, MASK_TRI, 0.0f); }
static enum ggml_status compute_mask_inf(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return mask_rows(call, dst, MASK_DIAG, -INFINITY); }
static enum ggml_status compute_mask_zero(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return mask_rows(call, dst, MASK_DIAG, 0.0f); }

/* dst[i0, i1, i2, i3] = i0 == i1 ? a[i0, 0, i2, i3] : 0 */
static enum ggml_status compute_diag(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const int64_t ne0 = dst->ne[0];
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        char *y = ew_row(dst, i1, i2, i3);
        const float zero = 0.0f;
        for (int64_t i0 = 0; i0 < ne0; i0++) ew_store(y + i0 * dst->nb[0], dst->type, dst->nb[0], &zero, 1);
        float v;
        ew_load(&v, ew_row(a, 0, i2, i3) + i1 * a->nb[0], a->type, a->nb[0], 1);
        ew_store(y + i1 * dst->nb[0], dst->type, dst->nb[0], &v, 1);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_arange(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggmlc_arange_params p = ggmlc_arange_params_of(dst);
    int64_t i0, i1;
    cpu_split_range(dst->ne[0], call->ith, call->nth, &i0, &i1);
    for (int64_t i = i0; i < i1; i++)
        *(float *)((char *)dst->data + i * dst->nb[0]) = p.start + p.step * (float)i;
    return GGML_STATUS_SUCCESS;
}

static bool supports_masked(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && ew_is_float(a->type) && ew_is_float(node->type) && ggml_are_same_shape(a, node);
}

static bool supports_diag(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && ew_is_float(a->type) && ew_is_float(node->type) && a->ne[1] == 1 && node->ne[0] == a->ne[0] &&
           node->ne[1] == a->ne[0] && node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

static bool supports_arange(const struct ggml_tensor *node) { return node->type == GGML_TYPE_F32; }

/* Serial for arange: it is tiny and one-dimensional (rows would not split it). */
static int one_task(const struct ggml_tensor *node, int n_threads) { return 1; }

void cpu_ops_matrix_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_TRI] = compute_tri;
    t->compute[GGML_OP_DIAG_MASK_INF] = compute_mask_inf;
    t->compute[GGML_OP_DIAG_MASK_ZERO] = compute_mask_zero;
    t->compute[GGML_OP_DIAG] = compute_diag;
    t->compute[GGML_OP_ARANGE] = compute_arange;
    t->supports[GGML_OP_TRI] = supports_masked;
    t->supports[GGML_OP_DIAG_MASK_INF] = supports_masked;
    t->supports[GGML_OP_DIAG_MASK_ZERO] = supports_masked;
    t->supports[GGML_OP_DIAG] = supports_diag;
    t->supports[GGML_OP_ARANGE] = supports_arange;
    t->n_tasks[GGML_OP_TRI] = ew_tasks_cheap;
    t->n_tasks[GGML_OP_DIAG_MASK_INF] = ew_tasks_cheap;
    t->n_tasks[GGML_OP_DIAG_MASK_ZERO] = ew_tasks_cheap;
    t->n_tasks[GGML_OP_DIAG] = ew_tasks_cheap;
    t->n_tasks[GGML_OP_ARANGE] = one_task;
}
