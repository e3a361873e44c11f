/*
 * ops-matmul.c - the matmul family of CPU kernels (see cpu-impl.h): MUL_MAT
 * and OUT_PROD.  Float operands go through the packed GEMM (gemm.h), which
 * reads any strides and, for up to 24 activation rows, streams contiguous
 * weights through the mat-vec kernels (matvec.h) without packing them;
 * quantized weights use integer dot products against activation rows
 * converted once per node to the type's vec_dot_type: the multi-row kernels
 * of quant-dot.h where the type has them (one pass over the weights for up
 * to 8 activation rows),
 * else its vec_dot per pair of rows.  MUL_MAT_ID lives in ops-matmul-id.c.
 */
#include "gemm.h"
#include "graph.h"
#include "ggmlc-blocks.h"
#include "ops-ew.h"
#include "ops-matmul.h"
#include "quant-dot.h"
#include "quant-match.h"
#include "repack.h"

/* -------------------------------------------------------- shared helpers */

void *cpu_matmul_thread_work(const struct ggmlc_op_call *call, size_t shared, size_t per_thread) {
    return (char *)call->wdata + shared + (size_t)call->ith * per_thread;
}

bool cpu_matmul_quant_ok(enum ggml_type type) {
    const struct cpu_type_traits *tr = cpu_get_type_traits(type);
    return tr->vec_dot && (cpu_gemm_type_ok(tr->vec_dot_type) || cpu_get_type_traits(tr->vec_dot_type)->from_float);
}

void cpu_matmul_convert_row(enum ggml_type to, const void *src, enum ggml_type src_type, size_t src_k_stride,
                            int64_t k, void *dst, float *tmp) {
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const float *f = src;
    if (src_type != GGML_TYPE_F32 || src_k_stride != sizeof(float) || to == GGML_TYPE_F32) {
        float *out = to == GGML_TYPE_F32 ? dst : tmp;
        if (src_k_stride == ggml_type_size(src_type)) {
            kern->to_f32(src_type, src, out, k);
        } else {
            for (int64_t i = 0; i < k; i++) kern->to_f32(src_type, (const char *)src + i * src_k_stride, out + i, 1);
        }
        if (to == GGML_TYPE_F32) return;
        f = out;
    }
    switch (to) {
    case GGML_TYPE_F16:
        ew_f32_to_f16_row(k, dst, f);
        break;
    case GGML_TYPE_BF16:
        for (int64_t i = 0; i < k; i++) ((ggml_bf16_t *)dst)[i] = ggmlc_fp32_to_bf16(f[i]);
        break;
    default:
        cpu_get_type_traits(to)->from_float(f, dst, k);
        break;
    }
}

/* ------------------------------------------------------------- MUL_MAT */

/* The 2-D product of batch (i2, i3) of a mul_mat node. */
static struct cpu_gemm_problem mul_mat_problem(const struct ggml_tensor *dst, int64_t i2,
                                               int64_t i3, const void *rounded) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    if (rounded) { /* b rounded through the vec_dot type: contiguous f32 rows in logical order */
        const float *x = (const float *)rounded + (i2 + i3 * b->ne[2]) * b->ne[1] * b->ne[0];
        struct cpu_gemm_problem p = mul_mat_problem(dst, i2, i3, NULL);
        p.x = (struct cpu_gemm_operand){x, GGML_TYPE_F32, (size_t)b->ne[0] * sizeof(float),
                                        sizeof(float), NULL};
        return p;
    }
    return (struct cpu_gemm_problem){
        .n = a->ne[1],
        .m = b->ne[1],
        .k = a->ne[0],
        .w = {(const char *)a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3], a->type, a->nb[1], a->nb[0],
              cpu_gemm_type_ok(a->type) ? NULL : cpu_gemm_dequant_fn(cpu_gemm_kernel(), a->type)},
        .x = {(const char *)b->data + i2 * b->nb[2] + i3 * b->nb[3], b->type, b->nb[1], b->nb[0], NULL},
        .dst = (float *)((char *)dst->data + i2 * dst->nb[2] + i3 * dst->nb[3]),
        .dst_stride = dst->nb[1],
    };
}

/* Quantized weights times at least this many activation rows are dequantized into the
 * GEMM's panels (each weight converted once per block of rows) rather than dotted row by
 * row against quantized activations: faster from here on, and without rounding the
 * activations.  Below it the integer vec_dot wins: with q4_0 4096 x 4096 (loaded machine,
 * same minute) 31 rows took 130-160 ms by vec_dot, 32 rows 290-340 ms by the GEMM even
 * with the vectorized dequantizer (dequantizing and packing each weight cost more than
 * 32 rows of its products); 128 rows were faster by the GEMM.  The K-quants and IQ4_XS
 * never take it: ggml sums them in its own order at every size (quant-match.h). */
#define QUANT_GEMM_MIN_ROWS 128

/* Whether a node's product runs through the GEMM (float or dequantized weights).  Not
 * Q4_1 and Q5_1 weights: their dots with Q8_1 activations add each block's offset times
 * the block's sum as Q8_1 stores it, rounded to f16, which no rounding of the activation
 * values reproduces; they take the integer dots at every size, as in ggml. */
static bool mul_mat_uses_gemm(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (cpu_gemm_type_ok(a->type)) return true;
    if (cpu_qmatch_type(a->type) || cpu_qmatch_k_type(a->type) || cpu_repack_is_packed(a) ||
        a->type == GGML_TYPE_IQ4_NL || a->type == GGML_TYPE_MXFP4)
        return false; /* integer dots at every size, as ggml (quant-match.h) */
    if (cpu_quant_lowbit_type(a->type)) return false; /* likewise: ggml has no GEMM for them */
    return b->ne[1] >= QUANT_GEMM_MIN_ROWS &&
           cpu_get_type_traits(a->type)->vec_dot_type != GGML_TYPE_Q8_1 &&
           cpu_gemm_dequant_ok(cpu_gemm_kernel(), a->type);
}

/* Many batches: each thread takes whole products; few: every thread takes a tile of each. */
static bool split_by_batch(int64_t n_batches, int nth) {
    return n_batches >= nth && (n_batches % nth == 0 || n_batches >= 4 * nth);
}

typedef struct cpu_gemm_problem (*batch_problem_fn)(const struct ggml_tensor *, int64_t, int64_t, const void *);

/* Whether batch q continues batch p of one product: the same weights and strides, its x
 * rows and dst rows `rows` rows (of p's strides) after p's first ones. */
static bool batch_continues(const struct cpu_gemm_problem *p, const struct cpu_gemm_problem *q, int64_t rows) {
    return q->w.data == p->w.data && q->w.row_stride == p->w.row_stride && q->w.k_stride == p->w.k_stride &&
           q->x.row_stride == p->x.row_stride && q->x.k_stride == p->x.k_stride && q->dst_stride == p->dst_stride &&
           (const char *)q->x.data == (const char *)p->x.data + rows * (int64_t)p->x.row_stride &&
           (const char *)q->dst == (const char *)p->dst + rows * (int64_t)p->dst_stride;
}

/* Batches that share one weight matrix (a 2-D weight times a batch of sequences) and whose
 * x and dst rows run on at the same strides from one batch to the next are one product of
 * all their rows: *flat gets it.  Its weights are packed once instead of once per batch,
 * and every thread shares it (team mode) instead of taking whole batches. */
static bool batches_as_one(const struct ggml_tensor *dst, batch_problem_fn problem, const void *arg,
                           struct cpu_gemm_problem *flat) {
    const int64_t n2 = dst->ne[2], n3 = dst->ne[3];
    if (n2 * n3 <= 1) return false;
    *flat = problem(dst, 0, 0, arg);
    if (flat->m <= 0) return false;
    if (n2 > 1) {
        const struct cpu_gemm_problem q = problem(dst, 1, 0, arg);
        if (!batch_continues(flat, &q, flat->m)) return false;
    }
    if (n3 > 1) {
        const struct cpu_gemm_problem q = problem(dst, 0, 1, arg);
        if (!batch_continues(flat, &q, flat->m * n2)) return false;
    }
    /* x and dst move linearly with (i2, i3), the weights with (i2 / r2, i3 / r3): the last
     * batch having the first one's weights, every batch has them */
    const struct cpu_gemm_problem last = problem(dst, n2 - 1, n3 - 1, arg);
    if (last.w.data != flat->w.data) return false;
    flat->m *= n2 * n3;
    return true;
}

/* Run the batches of a product node: one product when they form one (batches_as_one), whole
 * products per thread when there are many, else each product split over all threads (in
 * team mode when it is large).  m: the rows of x of one batch. */
static void run_batches(const struct ggmlc_op_call *call, struct ggml_tensor *dst, size_t shared_offset,
                        batch_problem_fn problem, const void *arg, int64_t m, int64_t k) {
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const int64_t n_batches = dst->ne[2] * dst->ne[3];
    const int64_t all_rows = m * n_batches; /* the scratch is sized for these (batches_work_size) */
    void *team_shared = (char *)call->wdata + shared_offset;
    void *work = cpu_matmul_thread_work(call, shared_offset + cpu_gemm_team_shared(kern, dst->ne[0], all_rows, k),
                                        cpu_gemm_thread_work(kern, all_rows, k));
    struct cpu_gemm_problem flat;
    if (batches_as_one(dst, problem, arg, &flat)) {
        if (cpu_gemm_use_team(kern, &flat, call->nth)) cpu_gemm_compute_team(kern, &flat, call, team_shared, work);
        else cpu_gemm_compute(kern, &flat, call->ith, call->nth, work);
        return;
    }
    if (split_by_batch(n_batches, call->nth)) { /* whole products, claimed (cpu_claim_rows) */
        for (int64_t last = -1, b0 = 0, b1 = 0; cpu_claim_rows(call, n_batches, &last, &b0, &b1);)
            for (int64_t bi = b0; bi < b1; bi++) {
                const struct cpu_gemm_problem p =
                    problem(dst, bi % dst->ne[2], bi / dst->ne[2], arg);
                cpu_gemm_compute(kern, &p, 0, 1, work);
            }
        return;
    }
    for (int64_t bi = 0; bi < n_batches; bi++) {
        const struct cpu_gemm_problem p = problem(dst, bi % dst->ne[2], bi / dst->ne[2], arg);
        if (cpu_gemm_use_team(kern, &p, call->nth))
            cpu_gemm_compute_team(kern, &p, call, team_shared, work);
        else cpu_gemm_compute(kern, &p, call->ith, call->nth, work);
    }
}

/* Scratch of run_batches after shared_offset bytes, for the batches of dst with m rows of x
 * each (sized for all of them as one product). */
static size_t batches_work_size(const struct ggml_tensor *dst, int n_threads, int64_t m, int64_t k) {
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const int64_t all_rows = m * dst->ne[2] * dst->ne[3];
    return cpu_gemm_team_shared(kern, dst->ne[0], all_rows, k) + (size_t)n_threads * cpu_gemm_thread_work(kern, all_rows, k);
}

/* F16 and BF16 weights round their activations too: ggml's x86 products of them (its
 * tinyBLAS and vec_dot kernels both) multiply F16 or BF16 activations, one row or many, so
 * a model with F16 weights decodes ggml's tokens only with them rounded (llama.cpp, 100M
 * F16 model, AVX2: greedy tokens left ggml's after 15 without, 100 of 100 equal with). */
enum ggml_type cpu_matmul_rounding(enum ggml_type weights, enum ggml_type activations) {
    const enum ggml_type vt = cpu_get_type_traits(weights)->vec_dot_type;
    return vt == activations ? GGML_TYPE_F32 : vt;
}

/* Products of at most this many activation rows (a decode step's) round them in every task,
 * each into a copy of its own, rather than each its share into one copy that all wait for:
 * no barrier per product. */
#define ROUND_PRIVATE_ROWS 4

static bool rounds_privately(const struct ggml_tensor *b) { return ggml_nrows(b) <= ROUND_PRIVATE_ROWS; }

/* Bytes of one copy of b's rows as f32. */
static size_t f32_rows_size(const struct ggml_tensor *b) {
    return GGML_PAD((size_t)b->ne[0] * (size_t)ggml_nrows(b) * sizeof(float), 64);
}

/* Scratch of the rounded activations (cpu_matmul_rounding): b's rows rounded through that
 * type back to f32 (one copy, or one per task: rounds_privately), then one row of that type
 * per task.  Nothing where the GEMM reads b as it is. */
static size_t rounded_rows_size(const struct ggml_tensor *a, const struct ggml_tensor *b,
                                int n_threads) {
    const enum ggml_type vt = cpu_matmul_rounding(a->type, b->type);
    if (vt == GGML_TYPE_F32) return 0;
    return (rounds_privately(b) ? (size_t)n_threads : 1) * f32_rows_size(b) +
           (size_t)n_threads * GGML_PAD(ggml_row_size(vt, b->ne[0]), 64);
}

/* Share ith of nth of b's rows converted to type vt and back into rounded, so that the GEMM
 * multiplies the activation values ggml's products multiply (the integer dot products of
 * quantized weights, F16 or BF16 for those weights). */
static void round_rows(const struct ggml_tensor *b, enum ggml_type vt, float *rounded, void *qrow, int ith,
                       int nth) {
    const ggml_to_float_t to_float = ggml_get_type_traits(vt)->to_float;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(b), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % b->ne[1], i2 = (r / b->ne[1]) % b->ne[2],
                      i3 = r / (b->ne[1] * b->ne[2]);
        const char *src = (const char *)b->data + i1 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
        float *row = rounded + r * b->ne[0];
        if (vt == GGML_TYPE_F16 || vt == GGML_TYPE_BF16) {
            cpu_matmul_convert_row(GGML_TYPE_F32, src, b->type, b->nb[0], b->ne[0], row, NULL);
            ew_round_row(vt, b->ne[0], row);
            continue;
        }
        cpu_matmul_convert_row(vt, src, b->type, b->nb[0], b->ne[0], qrow,
                               row); /* row: f32 staging */
        to_float(qrow, row, b->ne[0]);
    }
}

/* Float weights, or quantized weights dequantized while packing (the activations rounded
 * through the vec_dot type first where it is not theirs: cpu_matmul_rounding). */
static enum ggml_status mul_mat_float(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const size_t shared = rounded_rows_size(a, b, call->nth);
    float *rounded = NULL;
    if (shared) {
        const enum ggml_type vt = cpu_matmul_rounding(a->type, b->type);
        const bool private = rounds_privately(b);
        const size_t copies = private ? (size_t)call->nth : 1;
        void *qrow = cpu_matmul_thread_work(call, copies * f32_rows_size(b), GGML_PAD(ggml_row_size(vt, b->ne[0]), 64));
        rounded = (float *)((char *)call->wdata + (private ? (size_t)call->ith * f32_rows_size(b) : 0));
        round_rows(b, vt, rounded, qrow, private ? 0 : call->ith, private ? 1 : call->nth);
        if (!private) call->barrier(call);
    }
    run_batches(call, dst, shared, mul_mat_problem, rounded, b->ne[1], b->ne[0]);
    return GGML_STATUS_SUCCESS;
}

/* Bytes of b converted to the vec_dot type of a's type (rows in logical order). */
static size_t quant_rows_size(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const enum ggml_type vt = cpu_get_type_traits(a->type)->vec_dot_type;
    return GGML_PAD(ggml_row_size(vt, b->ne[0]) * (size_t)ggml_nrows(b), 64);
}

void cpu_matmul_convert_rows(const struct ggmlc_op_call *call, const struct ggml_tensor *b, enum ggml_type to,
                             void *dst, float *tmp) {
    const size_t row_size = ggml_row_size(to, b->ne[0]);
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(b), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % b->ne[1], i2 = (r / b->ne[1]) % b->ne[2], i3 = r / (b->ne[1] * b->ne[2]);
        const char *src = (const char *)b->data + i1 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
        cpu_matmul_convert_row(to, src, b->type, b->nb[0], b->ne[0], (char *)dst + r * row_size, tmp);
    }
}

/* Quantized weights through the type's vec_dot: each thread takes a contiguous range of
 * weight rows (so every thread streams its own part of the weights) and dots each row
 * with every activation row while the row is in cache. */
static void mul_mat_quant_by_row(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct cpu_type_traits *tr = cpu_get_type_traits(a->type);
    const size_t shared = quant_rows_size(a, b);
    float *tmp = cpu_matmul_thread_work(call, shared, (size_t)b->ne[0] * sizeof(float) + 64);
    cpu_matmul_convert_rows(call, b, tr->vec_dot_type, call->wdata, tmp);
    call->barrier(call);

    const size_t row_size = ggml_row_size(tr->vec_dot_type, b->ne[0]);
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    int64_t n0, n1;
    cpu_split_range(a->ne[1], call->ith, call->nth, &n0, &n1);
    enum { CHUNK = 16 }; /* w rows reused from cache across all activation rows */
    for (int64_t c0 = n0; c0 < n1; c0 += CHUNK) {
        const int64_t c1 = c0 + CHUNK < n1 ? c0 + CHUNK : n1;
        for (int64_t r = 0; r < ggml_nrows(b); r++) {
            const int64_t i1 = r % b->ne[1], i2 = (r / b->ne[1]) % b->ne[2], i3 = r / (b->ne[1] * b->ne[2]);
            const char *xrow = (const char *)call->wdata + r * row_size;
            const char *wmat = (const char *)a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3];
            float *out = (float *)((char *)dst->data + i1 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]);
            for (int64_t n = c0; n < c1; n++) tr->vec_dot((int)a->ne[0], out + n, 0, wmat + n * a->nb[1], 0, xrow, 0, 1);
        }
    }
}

/* ---------------------------------------------- multi-row quantized kernels */

/* Scratch of the multi-row path: every activation row as Q8_0 planes (values, float
 * scales, int32 block sums; struct cpu_q8_rows), then per thread one f32 row and one Q8_0 row,
 * then (Q8_0 and Q4_0 with column kernels) the rows interleaved in groups (cols_area_size). */
static size_t planes_qs_size(const struct ggml_tensor *b) { return GGML_PAD((size_t)b->ne[0] * (size_t)ggml_nrows(b), 64); }
static size_t planes_d_size(const struct ggml_tensor *b) {
    return 2 * GGML_PAD((size_t)(b->ne[0] / QK8_0) * (size_t)ggml_nrows(b) * sizeof(float), 64); /* d and sums */
}
static size_t planes_thread_size(const struct ggml_tensor *b) {
    return (size_t)b->ne[0] * sizeof(float) + 64 + GGML_PAD(ggml_row_size(GGML_TYPE_Q8_0, b->ne[0]), 64);
}

/* Groups of CPU_QUANT_MAX_ROWS activation rows from which Q8_0 and Q4_0 weights take the
 * column kernels of quant-match.h (AVX-512 VNNI) instead of the multi-row kernels.
 * Their cost does not depend on the rows a group fills (all eight lanes run), the others'
 * grows with them.  Measured (one thread, CPU time, 7168 x 4096 weights streamed, best of
 * 7 with the two kernels alternating in one process, loaded machine, 2026-12-03 07:48 UTC),
 * column kernel / the other one at 3, 4, 5, 6 rows: Q8_0 1.71, 1.09, 0.90, 0.80 (0.77 at 8);
 * Q4_0 at 3, 4, 6 rows 1.69, 1.69, 0.98. */
static int cols_min_rows(const struct ggml_tensor *a) {
    return a->type == GGML_TYPE_Q8_0 ? 5 : 7;
}

/* The column kernel for a's products, or NULL. */
static cpu_vec_dot_cols_t cols_kernel(const struct ggml_tensor *a) {
    return cpu_qmatch_type(a->type) && !cpu_repack_is_packed(a) ? cpu_qmatch_cols(a->type) : NULL;
}

/* The column kernel for groups CPU_QMATCH_WIDE wide, where a's type has one (Q8_0) and b has
 * rows to fill them, or NULL. */
static cpu_vec_dot_cols_t wide_kernel(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (!cols_kernel(a) || b->ne[1] <= CPU_QUANT_MAX_ROWS) return NULL;
    return cpu_qmatch_cols_wide(a->type);
}

/* Rows per group of activation rows: CPU_QMATCH_WIDE where the wide kernel serves a, else
 * CPU_QUANT_MAX_ROWS (also the rows of the multi-row kernels). */
static int64_t group_rows(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    return wide_kernel(a, b) ? CPU_QMATCH_WIDE : CPU_QUANT_MAX_ROWS;
}

/* Groups of activation rows of b per batch (group_rows rows each but the last). */
static int64_t cols_groups_per_batch(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    return (b->ne[1] + group_rows(a, b) - 1) / group_rows(a, b);
}
static size_t cols_area_size(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (!cols_kernel(a) || b->ne[1] < cols_min_rows(a)) return 0;
    return (size_t)(cols_groups_per_batch(a, b) * b->ne[2] * b->ne[3]) * cpu_q8_cols_size(b->ne[0] / QK8_0, (int)group_rows(a, b));
}

/* The interleaved group of activation rows starting at row i1 of batch `batch` in the area
 * at cols_mem.  A group of up to CPU_QUANT_MAX_ROWS rows is laid out that wide, for the
 * 256-bit kernels, even among wide groups (the last one). */
static struct cpu_q8_cols cols_group(void *cols_mem, const struct ggml_tensor *a, const struct ggml_tensor *b,
                                     int64_t batch, int64_t i1) {
    const int64_t nblocks = b->ne[0] / QK8_0, width = group_rows(a, b), first = i1 / width * width;
    const int64_t g = batch * cols_groups_per_batch(a, b) + i1 / width;
    const int layout = b->ne[1] - first > CPU_QUANT_MAX_ROWS ? (int)width : CPU_QUANT_MAX_ROWS;
    return cpu_q8_cols_at((char *)cols_mem + (size_t)g * cpu_q8_cols_size(nblocks, (int)width), nblocks, layout);
}

/* This thread's share of the activation rows, quantized to Q8_0 and split into planes, and
 * interleaved into their groups at cols_mem where it is not NULL (the rows a last group
 * lacks: zeros). */
static void convert_rows_to_planes(const struct ggmlc_op_call *call, const struct ggml_tensor *a, const struct ggml_tensor *b,
                                   int8_t *qs, float *d, int32_t *sums, void *cols_mem) {
    const size_t shared = planes_qs_size(b) + planes_d_size(b);
    float *tmp = cpu_matmul_thread_work(call, shared, planes_thread_size(b));
    block_q8_0 *q8 = (block_q8_0 *)((char *)tmp + GGML_PAD((size_t)b->ne[0] * sizeof(float) + 64, 64));
    const int64_t k = b->ne[0], nblocks = k / QK8_0;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(b), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % b->ne[1], i2 = (r / b->ne[1]) % b->ne[2], i3 = r / (b->ne[1] * b->ne[2]);
        const char *src = (const char *)b->data + i1 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
        cpu_matmul_convert_row(GGML_TYPE_Q8_0, src, b->type, b->nb[0], k, q8, tmp);
        cpu_q8_0_to_planes(q8, nblocks, qs + r * k, d + r * nblocks, sums + r * nblocks);
        if (!cols_mem) continue;
        const struct cpu_q8_cols cols = cols_group(cols_mem, a, b, r / b->ne[1], i1);
        const int c = (int)(i1 % group_rows(a, b));
        cpu_q8_0_to_cols(q8, nblocks, c, &cols);
        if (i1 == b->ne[1] - 1)
            for (int z = c + 1; z < cols.width; z++) cpu_q8_0_to_cols(NULL, nblocks, z, &cols);
    }
}

/* Units (of unit_bytes of weights each) per chunk that a product's tasks claim
 * (cpu_claim_chunk): about eight chunks per task, so that a task that falls behind (its core
 * taken by another process) leaves its share to the others.  Where such chunks would be under
 * 16 KiB (small matrices over many threads: a 768-row Q4_0 matrix on 16 threads gave one
 * group of 8 rows per claim, and decoding ran 1.3x slower on the H200 host's 16 cores), each
 * task claims one even share instead: too short a chunk neither streams nor amortizes its
 * claim. */
static int64_t units_per_chunk(int64_t n_units, int nth, size_t unit_bytes) {
    int64_t per = n_units / (8 * (int64_t)nth);
    if ((size_t)per * unit_bytes < 16384) per = (n_units + nth - 1) / nth;
    return per > 1 ? per : 1;
}

/* A product's activations once converted: Q8_0 planes (qs, d, sums; planes true) or rows
 * of the weights' vec_dot type (qs, row_size apart). */
struct converted_rows {
    bool planes;
    const int8_t *qs;
    const float *d;
    const int32_t *sums;
    size_t row_size;
};

/* The nrows converted rows from row r on, of k values each. */
static struct cpu_q8_rows converted_at(const struct converted_rows *c, int64_t r, int64_t k,
                                       int nrows) {
    const int64_t nblocks = k / QK8_0;
    if (c->planes)
        return (struct cpu_q8_rows){
            c->qs + r * k, (size_t)k, c->d + r * nblocks, (size_t)nblocks, c->sums + r * nblocks,
            nrows,         NULL};
    return (struct cpu_q8_rows){c->qs + r * c->row_size, c->row_size, NULL, 0, NULL, nrows, NULL};
}

/* Groups [g0, g1) of repacked_products: each plane's activation rows below tail_from in
 * groups of up to CPU_QUANT_MAX_ROWS through kernel, the rest through tail. */
static void repacked_chunk(struct ggml_tensor *dst, const struct converted_rows *c,
                           cpu_repack_kernel_t kernel, cpu_repack_kernel_t tail, int64_t tail_from,
                           int64_t g0, int64_t g1) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int64_t k = b->ne[0];
    const size_t group_size =
        (size_t)(k / ggml_blck_size(a->type)) * cpu_repack_group_block(a->type);
    for (int64_t g = g0; g < g1; g++) {
        const char *group = (const char *)a->data + g * group_size;
        for (int64_t batch = 0; batch < b->ne[2] * b->ne[3]; batch++) {
            const int64_t i2 = batch % b->ne[2], i3 = batch / b->ne[2];
            for (int64_t i1 = 0, next; i1 < b->ne[1]; i1 = next) {
                next = i1 + CPU_QUANT_MAX_ROWS < b->ne[1] ? i1 + CPU_QUANT_MAX_ROWS : b->ne[1];
                if (i1 < tail_from && next > tail_from) next = tail_from;
                const struct cpu_q8_rows y =
                    converted_at(c, batch * b->ne[1] + i1, k, (int)(next - i1));
                float *out = (float *)((char *)dst->data + i1 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]) + g * CPU_REPACK_ROWS;
                (i1 < tail_from ? kernel : tail)((int)k, group, &y, out,
                                                 dst->nb[1] / sizeof(float));
            }
        }
    }
}

/* Packed weights (repack.h): the tasks claim chunks of groups of eight weight rows and
 * pass every group of up to CPU_QUANT_MAX_ROWS activation rows over each while it is in
 * cache.  Q4_K: ggml's GEMM order for a plane's rows below its last multiple of four, its
 * GEMV order for the rest (quant-match.h). */
static void repacked_products(const struct ggmlc_op_call *call, struct ggml_tensor *dst,
                              const struct converted_rows *c) {
    const struct ggml_tensor *a = dst->src[0];
    const cpu_repack_kernel_t kernel = cpu_repack_kernel(a->type, true),
                              tail = cpu_repack_kernel(a->type, false);
    const int64_t tail_from =
        kernel == tail ? dst->src[1]->ne[1] : cpu_qmatch_serial_gemm_rows(dst->src[1]->ne[1]);
    const int64_t n_groups = a->ne[1] / CPU_REPACK_ROWS;
    const int64_t per_chunk = units_per_chunk(n_groups, call->nth, CPU_REPACK_ROWS * a->nb[1]);
    const int64_t n_chunks = (n_groups + per_chunk - 1) / per_chunk;
    for (int64_t last = -1, ch; (ch = cpu_claim_chunk(call, n_chunks, &last)) < n_chunks;)
        repacked_chunk(dst, c, kernel, tail, tail_from, ch * per_chunk,
                       (ch + 1) * per_chunk < n_groups ? (ch + 1) * per_chunk : n_groups);
}

bool cpu_matmul_uses_planes(enum ggml_type type) {
    return cpu_get_type_traits(type)->vec_dot_type == GGML_TYPE_Q8_0;
}

/* One activation row (a decode step's products): every task converts it into planes of its
 * own instead of one task converting it for all, so that the tasks need not meet between the
 * conversion and the products (a barrier less per product: 49 per token of a 12-layer GPT).
 * The conversion is a few microseconds at most, which the other tasks spent waiting. */
static bool private_planes(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    return cpu_matmul_uses_planes(a->type) && ggml_nrows(b) == 1;
}
static size_t private_planes_size(const struct ggml_tensor *b) {
    return planes_qs_size(b) + planes_d_size(b) + planes_thread_size(b);
}

static size_t multi_row_work_size(const struct ggml_tensor *a, const struct ggml_tensor *b, int n_threads) {
    if (private_planes(a, b)) return (size_t)n_threads * private_planes_size(b);
    if (cpu_matmul_uses_planes(a->type))
        return planes_qs_size(b) + planes_d_size(b) + (size_t)n_threads * planes_thread_size(b) + cols_area_size(a, b);
    return quant_rows_size(a, b) + (size_t)n_threads * ((size_t)b->ne[0] * sizeof(float) + 64);
}

/* The next weight rows [*n0, *n1) of this task (*last = -1 at first): claimed chunks of
 * per_claim rows (cpu_claim_chunk).  False when none is left. */
static bool next_weight_rows(const struct ggmlc_op_call *call, int64_t rows, int64_t per_claim,
                             int64_t *last, int64_t *n0, int64_t *n1) {
    const int64_t n_chunks = (rows + per_claim - 1) / per_claim, c = cpu_claim_chunk(call, n_chunks, last);
    if (c >= n_chunks) return false;
    *n0 = c * per_claim;
    *n1 = *n0 + per_claim < rows ? *n0 + per_claim : rows;
    return true;
}

/* Weights whose type has a multi-row kernel: each weight row is read and decoded once per
 * group of up to CPU_QUANT_MAX_ROWS activation rows of the same batch, so m = 8 costs
 * about one pass over the weights, not eight.  Threads split the weight rows as above;
 * Q8_0 and Q4_0 groups of cols_min_rows rows or more take the column kernels, two weight
 * rows at a time; packed weights (repack.h) take their own kernels. */
static void mul_mat_quant_multi_row(const struct ggmlc_op_call *call, struct ggml_tensor *dst,
                                    cpu_vec_dot_rows_t kernel) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const bool planes = cpu_matmul_uses_planes(a->type), private = private_planes(a, b);
    /* with private planes: this task's region of the scratch, converted as by a lone task */
    const struct ggmlc_op_call solo = {0, 1, (char *)call->wdata + (size_t)call->ith * private_planes_size(b),
                                       private_planes_size(b), call->backend_ctx, NULL, NULL};
    int8_t *qs = private ? solo.wdata : call->wdata;
    float *d = (float *)((char *)qs + planes_qs_size(b));
    int32_t *sums = (int32_t *)((char *)d + planes_d_size(b) / 2);
    /* Not planes: plain rows of the vec_dot type (Q8_K, or Q8_1 for Q4_1 and Q5_1). */
    const enum ggml_type vt = cpu_get_type_traits(a->type)->vec_dot_type;
    const size_t q8k_row_size = ggml_row_size(vt, b->ne[0]);
    const cpu_vec_dot_cols_t cols = cols_area_size(a, b) ? cols_kernel(a) : NULL;
    const int cols_min = cols ? cols_min_rows(a) : 0;
    const cpu_vec_dot_cols_t wide = cols ? wide_kernel(a, b) : NULL;
    const int64_t step = group_rows(a, b); /* activation rows per group */
    const cpu_vec_dot_wrows_t wrows = cpu_get_vec_dot_wrows(a->type);
    void *cols_mem = cols ? (char *)call->wdata + planes_qs_size(b) + planes_d_size(b) + (size_t)call->nth * planes_thread_size(b) : NULL;
    if (private) {
        convert_rows_to_planes(&solo, a, b, qs, d, sums, NULL);
    } else if (planes) {
        convert_rows_to_planes(call, a, b, qs, d, sums, cols_mem);
        call->barrier(call);
    } else {
        float *tmp = cpu_matmul_thread_work(call, quant_rows_size(a, b), (size_t)b->ne[0] * sizeof(float) + 64);
        cpu_matmul_convert_rows(call, b, vt, call->wdata, tmp);
        call->barrier(call);
    }
    const struct converted_rows conv = {planes, qs, d, sums, q8k_row_size};
    if (cpu_repack_is_packed(a)) {
        repacked_products(call, dst, &conv);
        return;
    }

    const int64_t k = b->ne[0], r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    enum { CHUNK = 16 }; /* weight rows kept in cache while all groups of activation rows pass */
    const int64_t per_claim = CHUNK * units_per_chunk((a->ne[1] + CHUNK - 1) / CHUNK, call->nth, CHUNK * a->nb[1]);
    /* claimed chunks of weight rows, not static shares: a task whose core is slower (an SMT
     * sibling busy, another process) leaves its rows to the others (H100 host, 16 vCPUs,
     * TinyLlama-shaped Q6_K prompt: see BENCHMARKS.md) */
    for (int64_t last = -1, n0, n1; next_weight_rows(call, a->ne[1], per_claim, &last, &n0, &n1);)
        for (int64_t c0 = n0; c0 < n1; c0 += CHUNK) {
            const int64_t c1 = c0 + CHUNK < n1 ? c0 + CHUNK : n1;
            for (int64_t batch = 0; batch < b->ne[2] * b->ne[3]; batch++) {
                const int64_t i2 = batch % b->ne[2], i3 = batch / b->ne[2];
                const char *wmat =
                    (const char *)a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3];
                for (int64_t i1 = 0, next; i1 < b->ne[1]; i1 = next) {
                    next = i1 + step < b->ne[1] ? i1 + step : b->ne[1];
                    const int nrows = (int)(next - i1);
                    const struct cpu_q8_rows y =
                        converted_at(&conv, batch * b->ne[1] + i1, k, nrows);
                    float *out = (float *)((char *)dst->data + i1 * dst->nb[1] + i2 * dst->nb[2] +
                                           i3 * dst->nb[3]);
                    if (cols && nrows >= cols_min) {
                        const struct cpu_q8_cols group = cols_group(cols_mem, a, b, batch, i1);
                        const bool is_wide = group.width == CPU_QMATCH_WIDE;
                        const cpu_vec_dot_cols_t kern = is_wide ? wide : cols;
                        const int wrows = is_wide ? CPU_QMATCH_WIDE_WROWS : CPU_QMATCH_COLS_WROWS;
                        struct cpu_q8_rows yc = y;
                        yc.cols = &group;
                        for (int64_t n = c0; n < c1; n += wrows) {
                            const int nw = (int)(c1 - n < wrows ? c1 - n : wrows);
                            kern((int)k, wmat + n * a->nb[1], a->nb[1], nw, &yc, out + n,
                                 dst->nb[1] / sizeof(float));
                        }
                        continue;
                    }
                    if (wrows && nrows == 1) {
                        wrows((int)k, wmat + c0 * a->nb[1], a->nb[1], (int)(c1 - c0), &y, out + c0);
                        continue;
                    }
                    for (int64_t n = c0; n < c1; n++)
                        kernel((int)k, wmat + n * a->nb[1], &y, out + n,
                               dst->nb[1] / sizeof(float));
                }
            }
        }
}

static enum ggml_status mul_mat_quant(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    /* IQ4_NL: one column in ggml's vec_dot order, more in its tinyBLAS order (quant-match.h) */
    const cpu_vec_dot_rows_t kernel = a->type == GGML_TYPE_IQ4_NL && dst->src[1]->ne[1] == 1
                                          ? cpu_qmatch_vec2_rows(a->type)
                                          : cpu_get_vec_dot_rows(a->type);
    if (kernel || cpu_repack_is_packed(a))
        mul_mat_quant_multi_row(call, dst, kernel);
    else mul_mat_quant_by_row(call, dst);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status mul_mat_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    if (dst->src[0]->type == GGML_TYPE_I8) return cpu_mul_mat_i8_compute(call, dst);
    return mul_mat_uses_gemm(dst) ? mul_mat_float(call, dst) : mul_mat_quant(call, dst);
}

static bool mul_mat_supports(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (a->type == GGML_TYPE_I8) return cpu_mul_mat_i8_supports(node);
    if (node->type != GGML_TYPE_F32 || node->nb[0] != sizeof(float) || !cpu_gemm_type_ok(b->type)) return false;
    if (cpu_gemm_type_ok(a->type)) return true;
    if (a->nb[0] != ggml_type_size(a->type)) return false;
    return mul_mat_uses_gemm(node) || (cpu_matmul_quant_ok(a->type) && a->ne[0] <= INT32_MAX);
}

static size_t mul_mat_work_size(const struct ggml_tensor *node, int n_threads) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (a->type == GGML_TYPE_I8) return cpu_mul_mat_i8_work_size(node, n_threads);
    if (mul_mat_uses_gemm(node))
        return rounded_rows_size(a, b, n_threads) +
               batches_work_size(node, n_threads, b->ne[1], b->ne[0]);
    if (cpu_get_vec_dot_rows(a->type)) return multi_row_work_size(a, b, n_threads);
    return quant_rows_size(a, b) + (size_t)n_threads * ((size_t)b->ne[0] * sizeof(float) + 64);
}

/* ------------------------------------------------------------ OUT_PROD */

/* dst[i1][i0] = sum_k a[k][i0] * b[k][i1]: a gemm whose rows are a's and b's columns. */
struct out_prod_a {
    const void *data;
    enum ggml_type type;
    size_t nb[4];
};

static struct cpu_gemm_problem out_prod_problem(const struct ggml_tensor *dst, int64_t i2, int64_t i3, const void *arg) {
    const struct out_prod_a *oa = arg;
    const void *a_data = oa->data;
    const enum ggml_type a_type = oa->type;
    const size_t *a_nb = oa->nb;
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    return (struct cpu_gemm_problem){
        .n = a->ne[0],
        .m = b->ne[0],
        .k = a->ne[1],
        .w = {(const char *)a_data + (i2 / r2) * a_nb[2] + (i3 / r3) * a_nb[3], a_type, a_nb[0], a_nb[1], NULL},
        .x = {(const char *)b->data + i2 * b->nb[2] + i3 * b->nb[3], b->type, b->nb[0], b->nb[1], NULL},
        .dst = (float *)((char *)dst->data + i2 * dst->nb[2] + i3 * dst->nb[3]),
        .dst_stride = dst->nb[1],
    };
}

/* Quantized a is dequantized once per node into the shared scratch. */
static size_t out_prod_dequant_size(const struct ggml_tensor *a) {
    return cpu_gemm_type_ok(a->type) ? 0 : GGML_PAD((size_t)ggml_nelements(a) * sizeof(float), 64);
}

static enum ggml_status out_prod_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    struct out_prod_a oa = {a->data, a->type, {a->nb[0], a->nb[1], a->nb[2], a->nb[3]}};
    const size_t shared = out_prod_dequant_size(a);
    if (shared) {
        ggml_to_float_t to_float = ggml_get_type_traits(a->type)->to_float;
        float *fa = call->wdata;
        int64_t r0, r1;
        cpu_split_range(ggml_nrows(a), call->ith, call->nth, &r0, &r1);
        for (int64_t r = r0; r < r1; r++) {
            const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
            to_float((const char *)a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3], fa + r * a->ne[0], a->ne[0]);
        }
        call->barrier(call);
        oa.data = fa;
        oa.type = GGML_TYPE_F32;
        oa.nb[0] = sizeof(float);
        for (int i = 1; i < 4; i++) oa.nb[i] = oa.nb[i - 1] * (size_t)a->ne[i - 1];
    }
    run_batches(call, dst, shared, out_prod_problem, &oa, b->ne[0], a->ne[1]);
    return GGML_STATUS_SUCCESS;
}

static bool out_prod_supports(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (node->type != GGML_TYPE_F32 || node->nb[0] != sizeof(float) || !cpu_gemm_type_ok(b->type)) return false;
    return cpu_gemm_type_ok(a->type) || (ggml_get_type_traits(a->type)->to_float && a->nb[0] == ggml_type_size(a->type));
}

static size_t out_prod_work_size(const struct ggml_tensor *node, int n_threads) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return out_prod_dequant_size(a) + batches_work_size(node, n_threads, b->ne[0], a->ne[1]);
}

/* Products below this many multiply-adds run as one task: a single thread finishes them
 * (in a few us) before a second one would be useful, and the node needs no barrier.  Larger
 * ones split: the pool's workers spin between nodes, so a decode step's 768 x 768 mat-vecs
 * gain from a second thread (llama.cpp, 100M Q8_0 model, 2 threads: 6.7 -> 4.6 ms per token
 * against 1 << 22 here, where ggml takes 5.1). */
#define MATMUL_SERIAL_WORK (1 << 16)

/* One task for small products, all threads otherwise (MUL_MAT, OUT_PROD, MUL_MAT_ID). */
static int matmul_n_tasks(const struct ggml_tensor *node, int n_threads) {
    const struct ggml_tensor *a = node->src[0];
    const int64_t depth = node->op == GGML_OP_OUT_PROD ? a->ne[1] : a->ne[0];
    const double work = (double)ggml_nelements(node) * (double)depth;
    return work < MATMUL_SERIAL_WORK ? 1 : n_threads;
}

/* Whether float weights' products never meet at a barrier: no activations to round, and
 * no product in team mode, neither one batch nor all of them as one (run_batches). */
static bool float_tasks_free(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!cpu_gemm_type_ok(a->type)) return false;
    struct cpu_gemm_problem p = mul_mat_problem(node, 0, 0, NULL);
    if (cpu_gemm_use_team(cpu_gemm_kernel(), &p, 2)) return false;
    p.m = ggml_nrows(b);
    return !cpu_gemm_use_team(cpu_gemm_kernel(), &p, 2);
}

/* A decode step's products meet nowhere: quantized ones with private planes, and float ones
 * (mat-vecs) without team mode.  Their tasks then go to whichever thread comes first: with
 * the tasks fixed to threads, a 2-thread F32 decode graph on a loaded 2-core VM waited for
 * the descheduled worker at every product (2.7 ms a graph against 0.6 on one thread). */
static bool mul_mat_tasks_free(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (a->type == GGML_TYPE_I8) return false;
    if (mul_mat_uses_gemm(node)) return float_tasks_free(node);
    return cpu_get_vec_dot_rows(a->type) && private_planes(a, b);
}

void cpu_ops_matmul_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_MUL_MAT] = mul_mat_compute;
    t->supports[GGML_OP_MUL_MAT] = mul_mat_supports;
    t->work_size[GGML_OP_MUL_MAT] = mul_mat_work_size;
    t->tasks_free[GGML_OP_MUL_MAT] = mul_mat_tasks_free;
    t->compute[GGML_OP_OUT_PROD] = out_prod_compute;
    t->supports[GGML_OP_OUT_PROD] = out_prod_supports;
    t->work_size[GGML_OP_OUT_PROD] = out_prod_work_size;
    cpu_ops_matmul_id_register(t);
    cpu_ops_i8_register(t);
    t->n_tasks[GGML_OP_MUL_MAT] = t->n_tasks[GGML_OP_OUT_PROD] = t->n_tasks[GGML_OP_MUL_MAT_ID] = matmul_n_tasks;
}
