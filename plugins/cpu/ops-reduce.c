/*
 * ops-reduce.c - reductions: sum, sum_rows, mean, cumsum, argmax and
 * count_equal.  Sums accumulate in double so that long rows keep float
 * precision; full reductions (sum, count_equal) sum per task into the work
 * buffer and task 0 adds the parts after a barrier.
 */
#include "ops-ew.h"

/* Partial results of whole-tensor reductions: one cache line per task. */
#define PART_STRIDE 64

static size_t work_parts(const struct ggml_tensor *node, int n_tasks) { return (size_t)n_tasks * PART_STRIDE; }

/* Sum of n contiguous floats: 16 float lanes (a loop gcc vectorizes) over blocks of 1024
 * values, each block's lanes added in double, so rounding grows with 64 values, not n. */
EW_CLONES static double sum_f32(const float *v, int64_t n) {
    double total = 0.0;
    int64_t i = 0;
    for (; i + 1024 <= n; i += 1024) {
        float lanes[16] = {0};
        for (int64_t k = 0; k < 1024; k += 16)
            for (int j = 0; j < 16; j++) lanes[j] += v[i + k + j];
        double block = 0.0;
        for (int j = 0; j < 16; j++) block += lanes[j];
        total += block;
    }
    for (; i < n; i++) total += v[i];
    return total;
}

static double row_sum(const char *x, enum ggml_type type, size_t nb, int64_t n) {
    double acc = 0.0;
    if (type == GGML_TYPE_F32 && nb == sizeof(float)) return sum_f32((const float *)x, n);
    float buf[EW_CHUNK];
    for (int64_t off = 0; off < n; off += EW_CHUNK) {
        const int64_t m = n - off < EW_CHUNK ? n - off : EW_CHUNK;
        ew_load(buf, x + off * nb, type, nb, m);
        for (int64_t i = 0; i < m; i++) acc += buf[i];
    }
    return acc;
}

/* The rows [r0, r1) of src that task ith of nth reduces. */
static void src_rows(const struct ggml_tensor *src, int ith, int nth, int64_t *r0, int64_t *r1) {
    cpu_split_range(ggml_nrows(src), ith, nth, r0, r1);
}

static enum ggml_status compute_sum(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    int64_t r0, r1;
    src_rows(a, call->ith, call->nth, &r0, &r1);
    double acc = 0.0;
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, a->ne, &i1, &i2, &i3);
        acc += row_sum(ew_row(a, i1, i2, i3), a->type, a->nb[0], a->ne[0]);
    }
    *(double *)((char *)call->wdata + (size_t)call->ith * PART_STRIDE) = acc;
    call->barrier(call);
    if (call->ith == 0) {
        double total = 0.0;
        for (int t = 0; t < call->nth; t++) total += *(const double *)((const char *)call->wdata + (size_t)t * PART_STRIDE);
        const float v = (float)total;
        ew_store(dst->data, dst->type, dst->nb[0], &v, 1);
    }
    return GGML_STATUS_SUCCESS;
}

/* sum_rows and mean: one value per row. */
static enum ggml_status row_reduce(const struct ggmlc_op_call *call, struct ggml_tensor *dst, bool mean) {
    const struct ggml_tensor *a = dst->src[0];
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        double s = row_sum(ew_row(a, i1, i2, i3), a->type, a->nb[0], a->ne[0]);
        if (mean) s /= (double)a->ne[0];
        const float v = (float)s;
        ew_store(ew_row(dst, i1, i2, i3), dst->type, dst->nb[0], &v, 1);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_sum_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return row_reduce(call, dst, false); }
static enum ggml_status compute_mean(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return row_reduce(call, dst, true); }

static enum ggml_status compute_cumsum(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const int64_t ne0 = dst->ne[0];
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    float buf[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        const char *x = ew_row(a, i1, i2, i3);
        char *y = ew_row(dst, i1, i2, i3);
        double acc = 0.0;
        for (int64_t off = 0; off < ne0; off += EW_CHUNK) {
            const int64_t n = ne0 - off < EW_CHUNK ? ne0 - off : EW_CHUNK;
            ew_load(buf, x + off * a->nb[0], a->type, a->nb[0], n);
            for (int64_t i = 0; i < n; i++) buf[i] = (float)(acc += buf[i]);
            ew_store(y + off * dst->nb[0], dst->type, dst->nb[0], buf, n);
        }
    }
    return GGML_STATUS_SUCCESS;
}

/* Index of the first maximum of each row (NaN never wins). */
static enum ggml_status compute_argmax(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const int64_t ne0 = a->ne[0];
    int64_t r0, r1;
    cpu_split_range(a->ne[1], call->ith, call->nth, &r0, &r1);
    float buf[EW_CHUNK];
    for (int64_t i1 = r0; i1 < r1; i1++) {
        const char *x = ew_row(a, i1, 0, 0);
        float best = -INFINITY;
        int32_t best_i = 0;
        for (int64_t off = 0; off < ne0; off += EW_CHUNK) {
            const int64_t n = ne0 - off < EW_CHUNK ? ne0 - off : EW_CHUNK;
            ew_load(buf, x + off * a->nb[0], a->type, a->nb[0], n);
            for (int64_t i = 0; i < n; i++)
                if (buf[i] > best) {
                    best = buf[i];
                    best_i = (int32_t)(off + i);
                }
        }
        *(int32_t *)((char *)dst->data + i1 * dst->nb[0]) = best_i;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_count_equal(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    int64_t r0, r1;
    src_rows(a, call->ith, call->nth, &r0, &r1);
    int64_t count = 0;
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, a->ne, &i1, &i2, &i3);
        const char *x = ew_row(a, i1, i2, i3), *y = ew_row(b, i1, i2, i3);
        for (int64_t i0 = 0; i0 < a->ne[0]; i0++)
            count += *(const int32_t *)(x + i0 * a->nb[0]) == *(const int32_t *)(y + i0 * b->nb[0]);
    }
    *(int64_t *)((char *)call->wdata + (size_t)call->ith * PART_STRIDE) = count;
    call->barrier(call);
    if (call->ith == 0) {
        int64_t total = 0;
        for (int t = 0; t < call->nth; t++) total += *(const int64_t *)((const char *)call->wdata + (size_t)t * PART_STRIDE);
        *(int64_t *)dst->data = total;
    }
    return GGML_STATUS_SUCCESS;
}

static bool supports_float_src(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && ew_is_float(a->type) && ew_is_float(node->type);
}

static bool supports_sum(const struct ggml_tensor *node) { return supports_float_src(node) && ggml_nelements(node) == 1; }

static bool supports_row_reduce(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return supports_float_src(node) && node->ne[0] == 1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

static bool supports_cumsum(const struct ggml_tensor *node) { return supports_float_src(node) && ggml_are_same_shape(node, node->src[0]); }

static bool supports_argmax(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && ew_is_float(a->type) && node->type == GGML_TYPE_I32 && ggml_is_matrix(a) && node->ne[0] == a->ne[1];
}

static bool supports_count_equal(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return a && b && a->type == GGML_TYPE_I32 && b->type == GGML_TYPE_I32 && ggml_are_same_shape(a, b) && node->type == GGML_TYPE_I64;
}

/* Whole-tensor reductions split by the source's size, not the (scalar) result's. */
static int tasks_by_source(const struct ggml_tensor *node, int n_threads) { return ew_tasks_cheap(node->src[0], n_threads); }

void cpu_ops_reduce_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_SUM] = compute_sum;
    t->supports[GGML_OP_SUM] = supports_sum;
    t->n_tasks[GGML_OP_SUM] = tasks_by_source;
    t->work_size[GGML_OP_SUM] = work_parts;

    t->compute[GGML_OP_COUNT_EQUAL] = compute_count_equal;
    t->supports[GGML_OP_COUNT_EQUAL] = supports_count_equal;
    t->n_tasks[GGML_OP_COUNT_EQUAL] = tasks_by_source;
    t->work_size[GGML_OP_COUNT_EQUAL] = work_parts;

    t->compute[GGML_OP_SUM_ROWS] = compute_sum_rows;
    t->compute[GGML_OP_MEAN] = compute_mean;
    t->supports[GGML_OP_SUM_ROWS] = supports_row_reduce;
    t->supports[GGML_OP_MEAN] = supports_row_reduce;
    t->n_tasks[GGML_OP_SUM_ROWS] = tasks_by_source;
    t->n_tasks[GGML_OP_MEAN] = tasks_by_source;

    t->compute[GGML_OP_CUMSUM] = compute_cumsum;
    t->supports[GGML_OP_CUMSUM] = supports_cumsum;
    t->n_tasks[GGML_OP_CUMSUM] = ew_tasks_cheap;

    t->compute[GGML_OP_ARGMAX] = compute_argmax;
    t->supports[GGML_OP_ARGMAX] = supports_argmax;
    t->n_tasks[GGML_OP_ARGMAX] = tasks_by_source; /* one result per source row */
}
