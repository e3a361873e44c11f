/*
 * ops-matmul-id.c - MUL_MAT_ID on the CPU: the indirect product of mixtures
 * of experts.  dst[:, slot, t] = as[:, :, ids[slot, t]] x b[:, slot % b->ne[1], t].
 * The (slot, token) pairs are grouped by expert so that each expert's
 * matrix multiplies all its activation rows in one product:
 *   1. thread 0 groups the pairs (counting sort),
 *   2. all threads gather the activation rows, expert by expert, converted,
 *   3. each expert's product runs through the GEMM (quantized weights: the
 *      multi-row kernels of mul_mat, so that a column's result is the same bits
 *      as mul_mat's, else vec_dot; a stack packed in CPU_REPACK: its group
 *      kernels in ggml's repacked GEMV order) into a staging buffer,
 *   4. all threads scatter the staged rows to dst.
 */
#include "gemm.h"
#include "ggmlc-blocks.h"
#include "ops-ew.h"
#include "ops-matmul.h"
#include "quant-dot.h"
#include "quant-match.h"
#include "repack.h"

/* Layout of the shared scratch. */
struct id_layout {
    int64_t n_pairs, n_as;
    enum ggml_type xtype; /* type of the gathered activation rows */
    enum ggml_type round; /* float experts: the type those rows are rounded through (cpu_matmul_rounding) */
    size_t xrow;          /* bytes of one gathered row */
    cpu_vec_dot_rows_t rows; /* the weights' multi-row kernel, NULL if none (or float) */
    bool planes;             /* rows reads Q8_0 planes of the gathered rows (at off_planes) */
    size_t off_order, off_x, off_planes, off_out, shared;
};

/* Bytes of the Q8_0 planes of n_pairs gathered rows of k values: values, scales, sums. */
static size_t planes_size(int64_t n_pairs, int64_t k) {
    return GGML_PAD((size_t)(n_pairs * k), 64) +
           2 * GGML_PAD((size_t)(n_pairs * (k / QK8_0)) * sizeof(float), 64);
}

static struct id_layout id_layout_of(const struct ggml_tensor *node) {
    const struct ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    struct id_layout l;
    l.n_pairs = ids->ne[0] * ids->ne[1];
    l.n_as = as->ne[2];
    l.xtype = cpu_gemm_type_ok(as->type) ? GGML_TYPE_F32 : cpu_get_type_traits(as->type)->vec_dot_type;
    l.round = cpu_gemm_type_ok(as->type) ? cpu_matmul_rounding(as->type, b->type) : GGML_TYPE_F32;
    l.xrow = ggml_row_size(l.xtype, b->ne[0]);
    l.off_order = GGML_PAD((size_t)(l.n_as + 1) * sizeof(int64_t), 64);
    l.off_x = l.off_order + GGML_PAD((size_t)l.n_pairs * sizeof(int64_t), 64);
    const bool packed = cpu_repack_is_packed(as);
    l.rows = cpu_gemm_type_ok(as->type) || packed ? NULL
             : as->type == GGML_TYPE_IQ4_NL ? cpu_qmatch_vec2_rows(as->type) /* ggml's vec_dot */
                                            : cpu_get_vec_dot_rows(as->type);
    l.planes = (l.rows || packed) && cpu_matmul_uses_planes(as->type);
    l.off_planes = l.off_x + GGML_PAD((size_t)l.n_pairs * l.xrow, 64);
    l.off_out = l.off_planes + (l.planes ? planes_size(l.n_pairs, b->ne[0]) : 0);
    l.shared = l.off_out + GGML_PAD((size_t)l.n_pairs * (size_t)as->ne[1] * sizeof(float), 64);
    return l;
}

static size_t id_thread_work(const struct ggml_tensor *node, const struct id_layout *l) {
    const struct ggml_tensor *b = node->src[1];
    const size_t gemm = cpu_gemm_thread_work(cpu_gemm_kernel(), l->n_pairs, b->ne[0]);
    const size_t conv = (size_t)b->ne[0] * sizeof(float) + 64;
    return gemm > conv ? gemm : conv;
}

static int32_t expert_of(const struct ggml_tensor *ids, int64_t pair) {
    const int64_t slot = pair % ids->ne[0], t = pair / ids->ne[0];
    return *(const int32_t *)((const char *)ids->data + slot * ids->nb[0] + t * ids->nb[1]);
}

/* Counting sort of the pairs by expert: offs[e]..offs[e+1] index order[]; the first pair with
 * an id outside [0, n_as), or -1 when there is none (nothing sorted then). */
static int64_t group_pairs(const struct ggml_tensor *ids, int64_t n_pairs, int64_t n_as, int64_t *offs,
                           int64_t *order) {
    memset(offs, 0, (size_t)(n_as + 1) * sizeof(int64_t));
    for (int64_t p = 0; p < n_pairs; p++) {
        const int32_t e = expert_of(ids, p);
        if (e < 0 || e >= n_as) return p;
        offs[e + 1]++;
    }
    for (int64_t e = 0; e < n_as; e++) offs[e + 1] += offs[e];
    for (int64_t p = 0; p < n_pairs; p++) order[offs[expert_of(ids, p)]++] = p;
    for (int64_t e = n_as; e > 0; e--) offs[e] = offs[e - 1]; /* the fill advanced each start to the next */
    offs[0] = 0;
    return -1;
}

/* The activation rows [q, q + nrows) as the multi-row kernels read them. */
static struct cpu_q8_rows gathered_rows(const struct ggmlc_op_call *call, const struct id_layout *l,
                                        int64_t k, int64_t q, int nrows) {
    const char *xs = (const char *)call->wdata + l->off_x;
    if (!l->planes)
        return (struct cpu_q8_rows){
            (const int8_t *)(xs + q * l->xrow), l->xrow, NULL, 0, NULL, nrows};
    const int64_t nblocks = k / QK8_0;
    const int8_t *qs = (const int8_t *)((const char *)call->wdata + l->off_planes);
    const float *d = (const float *)((const char *)qs + GGML_PAD((size_t)(l->n_pairs * k), 64));
    const int32_t *sums =
        (const int32_t *)((const char *)d +
                          GGML_PAD((size_t)(l->n_pairs * nblocks) * sizeof(float), 64));
    return (struct cpu_q8_rows){qs + q * k,      (size_t)k,          d + q * nblocks,
                                (size_t)nblocks, sums + q * nblocks, nrows};
}

/* Weight rows [n0, n1) of one expert (w, rows wstride bytes apart) times its gathered rows
 * [q0, q1) through the multi-row kernel, grouped as mul_mat groups them, so the results
 * are mul_mat's bit for bit. */
static void expert_rows_product(const struct ggmlc_op_call *call, const struct id_layout *l,
                                const char *w, size_t wstride, int64_t k, int64_t n, int64_t n0,
                                int64_t n1, int64_t q0, int64_t q1) {
    float *out = (float *)((char *)call->wdata + l->off_out);
    enum { CHUNK = 16 }; /* weight rows kept in cache while all groups pass */
    for (int64_t c0 = n0; c0 < n1; c0 += CHUNK) {
        const int64_t c1 = c0 + CHUNK < n1 ? c0 + CHUNK : n1;
        for (int64_t q = q0; q < q1; q += CPU_QUANT_MAX_ROWS) {
            const int nrows = (int)(q1 - q < CPU_QUANT_MAX_ROWS ? q1 - q : CPU_QUANT_MAX_ROWS);
            const struct cpu_q8_rows y = gathered_rows(call, l, k, q, nrows);
            for (int64_t i = c0; i < c1; i++)
                l->rows((int)k, w + i * wstride, &y, out + q * n + i, (size_t)n);
        }
    }
}

/* A stack packed in CPU_REPACK (repack.h): expert e's groups of eight weight rows, this
 * thread's share, times its gathered rows [q0, q1) through the group kernel in ggml's GEMV
 * order (as ggml's repacked MUL_MAT_ID sums). */
static void expert_groups_product(const struct ggmlc_op_call *call, const struct id_layout *l,
                                  const struct ggml_tensor *as, int64_t e, int64_t q0, int64_t q1) {
    const int64_t n = as->ne[1], k = as->ne[0];
    const size_t group_size =
        (size_t)(k / ggml_blck_size(as->type)) * cpu_repack_group_block(as->type);
    const char *groups = (const char *)as->data + e * as->nb[2];
    const cpu_repack_kernel_t kernel = cpu_repack_kernel(as->type, false);
    float *out = (float *)((char *)call->wdata + l->off_out);
    int64_t g0, g1;
    cpu_split_range(n / CPU_REPACK_ROWS, call->ith, call->nth, &g0, &g1);
    for (int64_t g = g0; g < g1; g++)
        for (int64_t q = q0; q < q1; q += CPU_QUANT_MAX_ROWS) {
            const int nrows = (int)(q1 - q < CPU_QUANT_MAX_ROWS ? q1 - q : CPU_QUANT_MAX_ROWS);
            const struct cpu_q8_rows y = gathered_rows(call, l, k, q, nrows);
            kernel((int)k, groups + g * group_size, &y, out + q * n + g * CPU_REPACK_ROWS,
                   (size_t)n);
        }
}

/* Products of expert e with its gathered rows [q0, q1), this thread's share. */
static void expert_product(const struct ggmlc_op_call *call, const struct ggml_tensor *node, const struct id_layout *l,
                           int64_t e, int64_t q0, int64_t q1, void *work) {
    const struct ggml_tensor *as = node->src[0];
    const char *xs = (const char *)call->wdata + l->off_x;
    float *out = (float *)((char *)call->wdata + l->off_out);
    const char *w = (const char *)as->data + e * as->nb[2];
    const int64_t n = as->ne[1], k = as->ne[0];
    if (cpu_gemm_type_ok(as->type)) {
        const struct cpu_gemm_problem p = {
            .n = n, .m = q1 - q0, .k = k,
            .w = {w, as->type, as->nb[1], as->nb[0], NULL},
            .x = {xs + q0 * l->xrow, GGML_TYPE_F32, l->xrow, sizeof(float), NULL},
            .dst = out + q0 * n,
            .dst_stride = (size_t)n * sizeof(float),
        };
        cpu_gemm_compute(cpu_gemm_kernel(), &p, call->ith, call->nth, work);
        return;
    }
    if (cpu_repack_is_packed(as)) {
        expert_groups_product(call, l, as, e, q0, q1);
        return;
    }
    int64_t n0, n1;
    cpu_split_range(n, call->ith, call->nth, &n0, &n1);
    if (l->rows) {
        expert_rows_product(call, l, w, as->nb[1], k, n, n0, n1, q0, q1);
        return;
    }
    const ggml_vec_dot_t vec_dot = cpu_get_type_traits(as->type)->vec_dot;
    for (int64_t q = q0; q < q1; q++)
        for (int64_t i = n0; i < n1; i++) vec_dot((int)k, out + q * n + i, 0, w + i * as->nb[1], 0, xs + q * l->xrow, 0, 1);
}

static enum ggml_status mul_mat_id_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    const struct id_layout l = id_layout_of(dst);
    int64_t *offs = call->wdata, *order = (int64_t *)((char *)call->wdata + l.off_order);
    void *work = cpu_matmul_thread_work(call, l.shared, id_thread_work(dst, &l));
    if (call->ith == 0) {
        const int64_t bad = group_pairs(ids, l.n_pairs, l.n_as, offs, order);
        if (bad >= 0) {
            offs[l.n_as] = -1; /* the other tasks stop too */
            cpu_index_out_of_range(call, dst, ids, expert_of(ids, bad), bad % ids->ne[0], bad / ids->ne[0], 0, l.n_as);
        }
    }
    call->barrier(call);
    if (offs[l.n_as] < 0) return GGML_STATUS_FAILED; /* an expert id out of range */

    int64_t q0, q1;
    cpu_split_range(l.n_pairs, call->ith, call->nth, &q0, &q1);
    for (int64_t q = q0; q < q1; q++) {
        const int64_t slot = order[q] % ids->ne[0], t = order[q] / ids->ne[0];
        const char *src = (const char *)b->data + (slot % b->ne[1]) * b->nb[1] + t * b->nb[2];
        char *xrow = (char *)call->wdata + l.off_x + q * l.xrow;
        cpu_matmul_convert_row(l.xtype, src, b->type, b->nb[0], b->ne[0], xrow, work);
        if (l.round != GGML_TYPE_F32) ew_round_row(l.round, b->ne[0], (float *)xrow);
        if (l.planes) {
            struct cpu_q8_rows y = gathered_rows(call, &l, b->ne[0], q, 1);
            cpu_q8_0_to_planes((const block_q8_0 *)xrow, b->ne[0] / QK8_0, (int8_t *)y.qs,
                               (float *)y.d, (int32_t *)y.sums);
        }
    }
    call->barrier(call);
    for (int64_t e = 0; e < l.n_as; e++)
        if (offs[e + 1] > offs[e]) expert_product(call, dst, &l, e, offs[e], offs[e + 1], work);
    call->barrier(call);

    const float *out = (const float *)((const char *)call->wdata + l.off_out);
    for (int64_t q = q0; q < q1; q++) {
        const int64_t slot = order[q] % ids->ne[0], t = order[q] / ids->ne[0];
        memcpy((char *)dst->data + slot * dst->nb[1] + t * dst->nb[2], out + q * as->ne[1], (size_t)as->ne[1] * sizeof(float));
    }
    return GGML_STATUS_SUCCESS;
}

static bool mul_mat_id_supports(const struct ggml_tensor *node) {
    const struct ggml_tensor *as = node->src[0], *b = node->src[1];
    if (node->type != GGML_TYPE_F32 || node->nb[0] != sizeof(float) || !cpu_gemm_type_ok(b->type)) return false;
    if (cpu_gemm_type_ok(as->type)) return true;
    return cpu_matmul_quant_ok(as->type) && as->nb[0] == ggml_type_size(as->type) && as->ne[0] <= INT32_MAX;
}

static size_t mul_mat_id_work_size(const struct ggml_tensor *node, int n_threads) {
    const struct id_layout l = id_layout_of(node);
    return l.shared + (size_t)n_threads * id_thread_work(node, &l);
}

void cpu_ops_matmul_id_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_MUL_MAT_ID] = mul_mat_id_compute;
    t->supports[GGML_OP_MUL_MAT_ID] = mul_mat_id_supports;
    t->work_size[GGML_OP_MUL_MAT_ID] = mul_mat_id_work_size;
}
