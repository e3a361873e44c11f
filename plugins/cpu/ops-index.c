/* ops-index.c - row gather/scatter kernels: get_rows (any type with a to_float),
 * get_rows_back, set_rows (any type with a from_float), add_id. */
#include "cpu-convops.h"
#include "ops-nn.h" /* per-task scratch rows */

static inline int64_t load_index(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2) {
    const char *p = cpu_elem_ptr(t, i0, i1, i2, 0);
    return t->type == GGML_TYPE_I64 ? *(const int64_t *)p : *(const int32_t *)p;
}

enum ggml_status cpu_index_out_of_range(const struct ggmlc_op_call *call, const struct ggml_tensor *node,
                                        const struct ggml_tensor *idx, int64_t v, int64_t i0, int64_t i1,
                                        int64_t i2, int64_t limit) {
    cpu_task_error(call, GGMLC_ERR_INVALID_ARG,
                   "%s (node '%s'): index %lld at [%lld, %lld, %lld] of '%s' is out of range [0, %lld)",
                   ggml_op_desc(node), node->name, (long long)v, (long long)i0, (long long)i1,
                   (long long)i2, idx->name, (long long)limit);
    return GGML_STATUS_FAILED;
}

/* Copy row `src_row` of a (row-contiguous) into the f32 or i32 row `out` of n values. */
static void row_to_dst(const struct ggml_tensor *a, const char *src_row, const struct ggml_tensor *dst, char *out, int64_t n) {
    if (dst->type == GGML_TYPE_I32) { /* I32 tables are copied as they are */
        for (int64_t i = 0; i < n; i++) *(int32_t *)(out + i * dst->nb[0]) = *(const int32_t *)(src_row + i * a->nb[0]);
        return;
    }
    if (a->type == GGML_TYPE_F32 && a->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float)) {
        memcpy(out, src_row, (size_t)n * sizeof(float));
        return;
    }
    const ggml_to_float_t to_float = ggml_get_type_traits(a->type)->to_float;
    if (ggml_is_quantized(a->type) || (to_float && a->nb[0] == ggml_type_size(a->type) && dst->nb[0] == sizeof(float))) {
        to_float(src_row, (float *)out, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) *(float *)(out + i * dst->nb[0]) = cpu_load_f32(a->type, src_row + i * a->nb[0]);
}

static enum ggml_status get_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int64_t n = b->ne[0], n_rows = n * b->ne[1] * b->ne[2];
    int64_t r0, r1;
    cpu_split_range(n_rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i = r % n, i2 = (r / n) % b->ne[1], i3 = r / (n * b->ne[1]);
        const int64_t row = load_index(b, i, i2, i3);
        if (row < 0 || row >= a->ne[1]) return cpu_index_out_of_range(call, dst, b, row, i, i2, i3, a->ne[1]);
        row_to_dst(a, cpu_elem_ptr(a, 0, row, i2, i3), dst, cpu_elem_ptr(dst, 0, i, i2, i3), a->ne[0]);
    }
    return GGML_STATUS_SUCCESS;
}

static bool get_rows_supported(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if (node->src[1]->type != GGML_TYPE_I32) return false;
    if (a->type == GGML_TYPE_I32) return true;
    if (ggml_is_quantized(a->type))
        return ggml_get_type_traits(a->type)->to_float != NULL && a->nb[0] == ggml_type_size(a->type);
    return a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16;
}

/* Each task owns a band of destination rows and adds every gradient row aimed at it. */
static enum ggml_status get_rows_back(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *dy = dst->src[0], *idx = dst->src[1];
    const int64_t E = dst->ne[0];
    int64_t r0, r1;
    cpu_split_range(dst->ne[1], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t e = 0; e < E; e++) *(float *)cpu_elem_ptr(dst, e, r, 0, 0) = 0.0f;
    for (int64_t i = 0; i < idx->ne[0]; i++) {
        const int64_t row = load_index(idx, i, 0, 0);
        if (row < 0 || row >= dst->ne[1]) return cpu_index_out_of_range(call, dst, idx, row, i, 0, 0, dst->ne[1]);
        if (row < r0 || row >= r1) continue;
        for (int64_t e = 0; e < E; e++) *(float *)cpu_elem_ptr(dst, e, row, 0, 0) += cpu_get_f32(dy, e, i, 0, 0);
    }
    return GGML_STATUS_SUCCESS;
}

/* The CPU's (possibly SIMD) row quantizer of a type, else the core's reference one. */
static ggml_from_float_t row_quantizer(enum ggml_type type) {
    const ggml_from_float_t fast = cpu_get_type_traits(type)->from_float;
    return fast ? fast : ggml_get_type_traits(type)->from_float_ref;
}

/* F16 source rows are widened into this task's scratch row first. */
static size_t set_rows_work(const struct ggml_tensor *dst, int n_threads) {
    return dst->src[0]->type == GGML_TYPE_F16 ? nn_scratch_bytes(dst->src[0]->ne[0], n_threads) : 0;
}

static enum ggml_status set_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0], *idx = dst->src[1];
    const int64_t n = src->ne[1], n_rows = n * src->ne[2] * src->ne[3], E = src->ne[0];
    const ggml_from_float_t from_float = row_quantizer(dst->type);
    float *widened = src->type == GGML_TYPE_F16 ? nn_scratch(call, E) : NULL;
    int64_t r0, r1;
    cpu_split_range(n_rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i = r % n, i2 = (r / n) % src->ne[2], i3 = r / (n * src->ne[2]);
        const int64_t row = load_index(idx, i, i2 % idx->ne[1], i3 % idx->ne[2]);
        if (row < 0 || row >= dst->ne[1])
            return cpu_index_out_of_range(call, dst, idx, row, i, i2 % idx->ne[1], i3 % idx->ne[2], dst->ne[1]);
        const float *in = (const float *)cpu_elem_ptr(src, 0, i, i2, i3);
        if (widened) {
            ew_load(widened, (const char *)in, src->type, src->nb[0], E);
            in = widened;
        }
        char *out = cpu_elem_ptr(dst, 0, row, i2, i3);
        if (from_float) {
            from_float(in, out, E);
        } else {
            for (int64_t e = 0; e < E; e++) cpu_store_f32(dst->type, out + e * dst->nb[0], in[e]);
        }
    }
    return GGML_STATUS_SUCCESS;
}

static bool set_rows_supported(const struct ggml_tensor *node) {
    const enum ggml_type t = node->type;
    if (t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16) return true;
    return row_quantizer(t) != NULL && node->ne[0] % ggml_blck_size(t) == 0;
}

static enum ggml_status add_id(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    const int64_t n_rows = a->ne[1] * a->ne[2];
    int64_t r0, r1;
    cpu_split_range(n_rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % a->ne[1], i2 = r / a->ne[1];
        const int64_t e = load_index(ids, i1, i2, 0);
        if (e < 0 || e >= b->ne[1]) return cpu_index_out_of_range(call, dst, ids, e, i1, i2, 0, b->ne[1]);
        for (int64_t i0 = 0; i0 < a->ne[0]; i0++)
            *(float *)cpu_elem_ptr(dst, i0, i1, i2, 0) = cpu_get_f32(a, i0, i1, i2, 0) + cpu_get_f32(b, i0, e, 0, 0);
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_index_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_GET_ROWS] = get_rows;
    t->supports[GGML_OP_GET_ROWS] = get_rows_supported;
    t->compute[GGML_OP_GET_ROWS_BACK] = get_rows_back;
    t->compute[GGML_OP_SET_ROWS] = set_rows;
    t->supports[GGML_OP_SET_ROWS] = set_rows_supported;
    t->work_size[GGML_OP_SET_ROWS] = set_rows_work;
    t->compute[GGML_OP_ADD_ID] = add_id;
    cpu_ops_sort_register(t);
    cpu_ops_seq_register(t);
    cpu_ops_delta_register(t);
    cpu_ops_indexer_register(t);
    cpu_ops_hc_register(t);
}
