/* ops-sort.c - row-wise argsort and top_k kernels (equal values keep their
 * index order; top_k selects through a heap when k is small against the row). */
#include "cpu-convops.h"

struct sort_row {
    const char *data;
    size_t stride;
    bool is_i32;
    bool desc;
};

static inline double row_key(const struct sort_row *row, int32_t i) {
    const char *p = row->data + (size_t)i * row->stride;
    return row->is_i32 ? (double)*(const int32_t *)p : (double)*(const float *)p;
}

/* True when index x must come before index y: a total order, equal values by index. */
static inline bool goes_first(const struct sort_row *row, int32_t x, int32_t y) {
    const double kx = row_key(row, x), ky = row_key(row, y);
    if (kx == ky) return x < y;
    return row->desc ? kx > ky : kx < ky;
}

/* Bottom-up merge sort of idx[0, n) using tmp[0, n); the result ends in idx. */
static void merge_sort(const struct sort_row *row, int32_t *idx, int32_t *tmp, int64_t n) {
    int32_t *from = idx, *to = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            const int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) to[k++] = goes_first(row, from[j], from[i]) ? from[j++] : from[i++];
            while (i < mid) to[k++] = from[i++];
            while (j < hi) to[k++] = from[j++];
        }
        int32_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != idx) memcpy(idx, from, (size_t)n * sizeof *idx);
}

static size_t sort_scratch_per_task(const struct ggml_tensor *node) {
    return (size_t)node->src[0]->ne[0] * 2 * sizeof(int32_t) + 64;
}

static size_t sort_work_size(const struct ggml_tensor *node, int n_threads) {
    return sort_scratch_per_task(node) * (size_t)n_threads;
}

/* Row r of a as a sort_row. */
static struct sort_row row_of(const struct ggml_tensor *a, int64_t r, bool desc, int64_t *i1, int64_t *i2, int64_t *i3) {
    *i1 = r % a->ne[1];
    *i2 = (r / a->ne[1]) % a->ne[2];
    *i3 = r / (a->ne[1] * a->ne[2]);
    return (struct sort_row){cpu_elem_ptr(a, 0, *i1, *i2, *i3), a->nb[0], a->type == GGML_TYPE_I32, desc};
}

/* Min-heap of k indices ordered by "goes_first" reversed: the root is the weakest of the best k. */
static void heap_sift_down(const struct sort_row *row, int32_t *heap, int64_t k, int64_t i) {
    for (;;) {
        int64_t weakest = i;
        const int64_t l = 2 * i + 1, r = l + 1;
        if (l < k && goes_first(row, heap[weakest], heap[l])) weakest = l;
        if (r < k && goes_first(row, heap[weakest], heap[r])) weakest = r;
        if (weakest == i) return;
        const int32_t t = heap[i];
        heap[i] = heap[weakest];
        heap[weakest] = t;
        i = weakest;
    }
}

/* The k best indices of the row, best first: a heap pass (O(n log k)) then a sort of the k. */
static void select_best(const struct sort_row *row, int64_t n, int32_t *idx, int32_t *tmp, int64_t k) {
    for (int64_t i = 0; i < k; i++) idx[i] = (int32_t)i;
    for (int64_t i = k / 2 - 1; i >= 0; i--) heap_sift_down(row, idx, k, i);
    for (int64_t i = k; i < n; i++) {
        if (!goes_first(row, (int32_t)i, idx[0])) continue;
        idx[0] = (int32_t)i;
        heap_sift_down(row, idx, k, 0);
    }
    merge_sort(row, idx, tmp, k);
}

/* Sort each row of src[0] in scratch and write the first ne0(dst) indices. */
static enum ggml_status sort_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst, bool desc) {
    const struct ggml_tensor *a = dst->src[0];
    const int64_t n = a->ne[0], k = dst->ne[0];
    int32_t *idx = (int32_t *)((char *)call->wdata + sort_scratch_per_task(dst) * (size_t)call->ith);
    int32_t *tmp = idx + n;
    int64_t r0, r1, i1, i2, i3;
    cpu_split_range(ggml_nrows(a), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const struct sort_row row = row_of(a, r, desc, &i1, &i2, &i3);
        if (k * 4 < n) {
            select_best(&row, n, idx, tmp, k);
        } else {
            for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)i;
            merge_sort(&row, idx, tmp, n);
        }
        for (int64_t i = 0; i < k; i++) *(int32_t *)cpu_elem_ptr(dst, i, i1, i2, i3) = idx[i];
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status argsort(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return sort_rows(call, dst, ggmlc_op_param_i32(dst, 0) == GGML_SORT_ORDER_DESC);
}

static enum ggml_status top_k(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return sort_rows(call, dst, true);
}

void cpu_ops_sort_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_ARGSORT] = argsort;
    t->work_size[GGML_OP_ARGSORT] = sort_work_size;
    t->compute[GGML_OP_TOP_K] = top_k;
    t->work_size[GGML_OP_TOP_K] = sort_work_size;
}
