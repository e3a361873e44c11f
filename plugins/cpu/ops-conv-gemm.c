/* ops-conv-gemm.c - the convolutions computed with the CPU GEMM.
 *
 * CONV_2D and CONV_3D (ggml_conv_2d_direct, ggml_conv_3d_direct): each task
 * gathers the patches of a chunk of output positions into its own scratch and
 * multiplies them with the kernel rows straight into the result: no im2col
 * tensor of the whole image, no waiting on other tasks.
 * CONV_TRANSPOSE_1D and _2D: the GEMM gives, for a chunk of input positions,
 * every kernel tap's contribution (the "columns"), which the tasks then
 * overlap-add into their share of the output.
 * Kernels of other layouts take plain gather loops. */
#include "cpu-convops.h"
#include "gemm.h"
#include "ops-ew.h"
#include "ops-matmul.h"

/* -------------------------------------------------- CONV_2D and CONV_3D
 * A 2-D convolution is a 3-D one with depth 1. */

struct conv_geom {
    bool is_3d;
    int s[3], p[3], d[3];
    int64_t KW, KH, KD, IC, OW, OH, OD, OC, N, K; /* K = KW*KH*KD*IC, the depth of the product */
};

static struct conv_geom geom_of(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    if (dst->op == GGML_OP_CONV_3D) {
        const struct ggmlc_conv3d_params g = ggmlc_conv_3d_params_of(dst);
        return (struct conv_geom){true, {g.s[0], g.s[1], g.s[2]}, {g.p[0], g.p[1], g.p[2]},
                                  {g.d[0], g.d[1], g.d[2]}, a->ne[0], a->ne[1], a->ne[2], g.ic,
                                  dst->ne[0], dst->ne[1], dst->ne[2], g.oc, g.n,
                                  a->ne[0] * a->ne[1] * a->ne[2] * g.ic};
    }
    const struct ggmlc_conv2d_params g = ggmlc_conv2d_params_of(dst);
    return (struct conv_geom){false, {g.s0, g.s1, 1}, {g.p0, g.p1, 0}, {g.d0, g.d1, 1},
                              a->ne[0], a->ne[1], 1, a->ne[2], dst->ne[0], dst->ne[1], 1, dst->ne[2], dst->ne[3],
                              a->ne[0] * a->ne[1] * a->ne[2]};
}

/* Each output channel's kernel row of K values contiguous, of a type the GEMM reads. */
static bool gemm_path(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const size_t es = ggml_type_size(a->type);
    const bool rows = dst->op == GGML_OP_CONV_3D ? ggml_is_contiguous(a)
                                                 : a->nb[0] == es && a->nb[1] == (size_t)a->ne[0] * es &&
                                                       a->nb[2] == (size_t)(a->ne[0] * a->ne[1]) * es;
    return cpu_gemm_type_ok(a->type) && rows && ggml_is_contiguous(dst);
}

/* Output positions per chunk: at most about 4 MiB of f32 patches, and small enough
 * that every task gets chunks (each task works alone on whole chunks). */
static int64_t chunk_positions(const struct conv_geom *g, int nth) {
    const int64_t n_pos = g->OW * g->OH * g->OD, chunks_per_image = (nth + g->N - 1) / g->N;
    int64_t P = ((int64_t)1 << 20) / g->K;
    if (P < 64) P = 64;
    const int64_t balanced = (n_pos + chunks_per_image - 1) / chunks_per_image;
    if (P > balanced) P = balanced;
    return P < 1 ? 1 : P;
}

static size_t task_scratch(const struct conv_geom *g, int64_t P) {
    return (size_t)(P * g->K) * sizeof(float) + 64 + cpu_gemm_thread_work(cpu_gemm_kernel(), g->OC, g->K);
}

static size_t conv_work_size(const struct ggml_tensor *node, int n_threads) {
    const struct conv_geom g = geom_of(node);
    if (!gemm_path(node)) return 0;
    return (size_t)n_threads * task_scratch(&g, chunk_positions(&g, n_threads));
}

/* Row ih of the input plane (channel ic, depth id) of image n, or NULL for padding. */
static const char *input_row(const struct ggml_tensor *b, const struct conv_geom *g, int64_t ih, int64_t id, int64_t ic, int64_t n) {
    if (ih < 0 || id < 0) return NULL;
    return g->is_3d ? cpu_elem_ptr(b, 0, ih, id, n * g->IC + ic) : cpu_elem_ptr(b, 0, ih, ic, n);
}

/* Patch rows of positions [first, first + count) of image n, each K floats in kernel-row order (ic, kd, kh, kw). */
static void gather_patches(const struct ggml_tensor *b, const struct conv_geom *g, int64_t n, int64_t first, int64_t count,
                           float *patches) {
    const bool f32_rows = b->type == GGML_TYPE_F32 && b->nb[0] == sizeof(float);
    const int64_t depth = g->is_3d ? b->ne[2] : 1;
    for (int64_t q = first; q < first + count; q++) {
        const int64_t ow = q % g->OW, oh = (q / g->OW) % g->OH, od = q / (g->OW * g->OH);
        float *out = patches + (q - first) * g->K;
        for (int64_t ic = 0; ic < g->IC; ic++)
            for (int64_t kd = 0; kd < g->KD; kd++) {
                const int64_t id = cpu_tap_pos(od, kd, g->s[2], g->p[2], g->d[2], depth);
                for (int64_t kh = 0; kh < g->KH; kh++, out += g->KW) {
                    const char *row = input_row(b, g, cpu_tap_pos(oh, kh, g->s[1], g->p[1], g->d[1], b->ne[1]), id, ic, n);
                    for (int64_t kw = 0, iw = ow * g->s[0] - g->p[0]; kw < g->KW; kw++, iw += g->d[0]) {
                        const bool in = row && iw >= 0 && iw < b->ne[0];
                        out[kw] = !in ? 0.0f : f32_rows ? ((const float *)row)[iw] : cpu_load_f32(b->type, row + iw * b->nb[0]);
                    }
                }
            }
    }
}

/* Each task takes whole chunks (image n, positions [first, first + P)): its own patches, its own GEMM. */
static enum ggml_status conv_gemm(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct conv_geom g = geom_of(dst);
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const int64_t P = chunk_positions(&g, call->nth), n_pos = g.OW * g.OH * g.OD;
    const int64_t per_image = (n_pos + P - 1) / P, n_chunks = per_image * g.N;
    const size_t scratch = task_scratch(&g, P);
    if (scratch * (size_t)call->nth > call->wsize) return GGML_STATUS_FAILED; /* planned for other thread counts */
    float *patches = (float *)((char *)call->wdata + (size_t)call->ith * scratch);
    /* an F16 (BF16) kernel multiplies the patches rounded to f16 (bf16), as ggml's conv_2d
     * gathers them, and as ggml_conv_2d's product does (cpu_matmul_rounding) */
    const enum ggml_type round = cpu_matmul_rounding(a->type, GGML_TYPE_F32);
    void *work = (char *)patches + (size_t)(P * g.K) * sizeof(float) + 64;
    for (int64_t c = call->ith; c < n_chunks; c += call->nth) {
        const int64_t n = c / per_image, first = (c % per_image) * P;
        const int64_t count = first + P < n_pos ? P : n_pos - first;
        gather_patches(b, &g, n, first, count, patches);
        if (round != GGML_TYPE_F32) ew_round_row(round, count * g.K, patches);
        /* dst[oc][q] = sum_k patch(q, k) * kernel(oc, k): positions along the GEMM's n, channels along m */
        const struct cpu_gemm_problem prob = {
            .n = count, .m = g.OC, .k = g.K,
            .w = {patches, GGML_TYPE_F32, (size_t)g.K * sizeof(float), sizeof(float)},
            .x = {a->data, a->type, g.is_3d ? (size_t)g.IC * a->nb[3] : a->nb[3], a->nb[0]},
            .dst = (float *)(g.is_3d ? cpu_elem_ptr(dst, first, 0, 0, n * g.OC) : cpu_elem_ptr(dst, first, 0, 0, n)),
            .dst_stride = g.is_3d ? dst->nb[3] : dst->nb[2],
        };
        cpu_gemm_compute(kern, &prob, 0, 1, work);
    }
    return GGML_STATUS_SUCCESS;
}

/* Fallback: every output element gathered directly. */
static enum ggml_status conv_2d_gather(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct conv_geom g = geom_of(dst);
    int64_t r0, r1;
    cpu_split_range(g.OW * g.OH * g.OC * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % g.OW, oh = (r / g.OW) % g.OH, oc = (r / (g.OW * g.OH)) % g.OC, n = r / (g.OW * g.OH * g.OC);
        float sum = 0.0f;
        for (int64_t ic = 0; ic < g.IC; ic++)
            for (int64_t kh = 0; kh < g.KH; kh++) {
                const int64_t ih = cpu_tap_pos(oh, kh, g.s[1], g.p[1], g.d[1], b->ne[1]);
                for (int64_t kw = 0; ih >= 0 && kw < g.KW; kw++) {
                    const int64_t iw = cpu_tap_pos(ow, kw, g.s[0], g.p[0], g.d[0], b->ne[0]);
                    if (iw >= 0) sum += cpu_get_f32(a, kw, kh, ic, oc) * cpu_get_f32(b, iw, ih, ic, n);
                }
            }
        *(float *)cpu_elem_ptr(dst, ow, oh, oc, n) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status conv_3d_gather(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct ggmlc_conv3d_params g = ggmlc_conv_3d_params_of(dst);
    const int32_t *s = g.s, *p = g.p, *d = g.d;
    const int64_t IC = g.ic, OC = g.oc, KW = a->ne[0], KH = a->ne[1], KD = a->ne[2];
    const int64_t OW = dst->ne[0], OH = dst->ne[1], OD = dst->ne[2];
    int64_t r0, r1;
    cpu_split_range(OW * OH * OD * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % OW, oh = (r / OW) % OH, od = (r / (OW * OH)) % OD, q = r / (OW * OH * OD);
        const int64_t oc = q % OC, n = q / OC;
        float sum = 0.0f;
        for (int64_t kd = 0; kd < KD; kd++) {
            const int64_t id = cpu_tap_pos(od, kd, s[2], p[2], d[2], b->ne[2]);
            if (id < 0) continue;
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t ih = cpu_tap_pos(oh, kh, s[1], p[1], d[1], b->ne[1]);
                if (ih < 0) continue;
                for (int64_t kw = 0; kw < KW; kw++) {
                    const int64_t iw = cpu_tap_pos(ow, kw, s[0], p[0], d[0], b->ne[0]);
                    if (iw < 0) continue;
                    for (int64_t ic = 0; ic < IC; ic++)
                        sum += cpu_get_f32(a, kw, kh, kd, oc * IC + ic) * cpu_get_f32(b, iw, ih, id, n * IC + ic);
                }
            }
        }
        *(float *)cpu_elem_ptr(dst, ow, oh, od, q) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status conv_2d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return gemm_path(dst) ? conv_gemm(call, dst) : conv_2d_gather(call, dst);
}

static enum ggml_status conv_3d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return gemm_path(dst) ? conv_gemm(call, dst) : conv_3d_gather(call, dst);
}

/* ------------------------------------------------------ CONV_TRANSPOSE_1D */

struct convt_geom {
    int s0, p0, d0;
    int64_t K, OC, IC, L, OL, KOC; /* KOC = K*OC columns per input position */
};

static struct convt_geom convt_geom_of(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct ggmlc_conv1d_params g = ggmlc_conv_transpose_1d_params_of(dst);
    return (struct convt_geom){g.s0, g.p0, g.d0,
                               a->ne[0], a->ne[1], a->ne[2], b->ne[0], dst->ne[0], a->ne[0] * a->ne[1]};
}

/* Kernel [K, OC, IC] with (k, oc) rows one element apart, of a type the GEMM reads; contiguous result. */
static bool convt_gemm_path(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    return cpu_gemm_type_ok(a->type) && a->nb[1] == (size_t)a->ne[0] * a->nb[0] && ggml_is_contiguous(dst);
}

/* Input positions per chunk: about 4 MiB of columns. */
static int64_t convt_chunk(const struct convt_geom *g) {
    int64_t T = ((int64_t)1 << 20) / g->KOC;
    if (T < 16) T = 16;
    return T < g->L ? T : g->L;
}

static size_t convt_work_size(const struct ggml_tensor *node, int n_threads) {
    if (!convt_gemm_path(node)) return 0;
    const struct convt_geom g = convt_geom_of(node);
    const int64_t T = convt_chunk(&g);
    return (size_t)(T * g.KOC) * sizeof(float) + 64 + (size_t)n_threads * cpu_gemm_thread_work(cpu_gemm_kernel(), T, g.IC);
}

static enum ggml_status convt_gemm(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct convt_geom g = convt_geom_of(dst);
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const int64_t T = convt_chunk(&g);
    float *cols = call->wdata;
    void *work = (char *)call->wdata + (size_t)(T * g.KOC) * sizeof(float) + 64 + (size_t)call->ith * cpu_gemm_thread_work(kern, T, g.IC);
    int64_t r0, r1; /* this task's output rows (oc, n), each OL long */
    cpu_split_range(g.OC * dst->ne[2], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) memset(cpu_elem_ptr(dst, 0, r % g.OC, r / g.OC, 0), 0, (size_t)g.OL * sizeof(float));
    for (int64_t n = 0; n < dst->ne[2]; n++)
        for (int64_t t0 = 0; t0 < g.L; t0 += T) {
            const int64_t nt = t0 + T < g.L ? T : g.L - t0;
            /* cols[t][k + K*oc] = sum_ic b(t0 + t, ic, n) * a(k, oc, ic) */
            const struct cpu_gemm_problem prob = {
                .n = g.KOC, .m = nt, .k = g.IC,
                .w = {a->data, a->type, a->nb[0], a->nb[2]},
                .x = {cpu_elem_ptr(b, t0, 0, n, 0), b->type, b->nb[0], b->nb[1]},
                .dst = cols,
                .dst_stride = (size_t)g.KOC * sizeof(float),
            };
            cpu_gemm_compute(kern, &prob, call->ith, call->nth, work);
            call->barrier(call);
            for (int64_t r = r0; r < r1; r++) {
                if (r / g.OC != n) continue;
                const int64_t oc = r % g.OC;
                float *out = (float *)cpu_elem_ptr(dst, 0, oc, n, 0);
                for (int64_t t = 0; t < nt; t++)
                    for (int64_t k = 0; k < g.K; k++) {
                        const int64_t o = (t0 + t) * g.s0 + k * g.d0 - g.p0;
                        if (o >= 0 && o < g.OL) out[o] += cols[t * g.KOC + oc * g.K + k];
                    }
            }
            call->barrier(call); /* the columns are overwritten next */
        }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status convt_gather(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct convt_geom g = convt_geom_of(dst);
    int64_t r0, r1;
    cpu_split_range(g.OL * g.OC * dst->ne[2], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t o = r % g.OL, oc = (r / g.OL) % g.OC, n = r / (g.OL * g.OC);
        float sum = 0.0f;
        for (int64_t k = 0; k < g.K; k++) {
            const int64_t l = cpu_tap_out(o, k, g.s0, g.p0, g.d0, g.L);
            for (int64_t ic = 0; l >= 0 && ic < g.IC; ic++) sum += cpu_get_f32(a, k, oc, ic, 0) * cpu_get_f32(b, l, ic, n, 0);
        }
        *(float *)cpu_elem_ptr(dst, o, oc, n, 0) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status conv_transpose_1d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return convt_gemm_path(dst) ? convt_gemm(call, dst) : convt_gather(call, dst);
}

/* ------------------------------------------------------ CONV_TRANSPOSE_2D */

struct convt2d_geom {
    int s;
    int64_t KW, KH, OC, IC, W, H, OW, OH, KKO; /* KKO = KW*KH*OC columns per input position */
};

static struct convt2d_geom convt2d_geom_of(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int32_t stride = ggmlc_op_param_i32(dst, 0);
    return (struct convt2d_geom){stride, a->ne[0], a->ne[1], a->ne[2], a->ne[3], b->ne[0], b->ne[1],
                                 dst->ne[0], dst->ne[1], a->ne[0] * a->ne[1] * a->ne[2]};
}

/* Kernel [KW, KH, OC, IC] contiguous in its first three dims, data rows (W) contiguous with
 * the next row right after, a GEMM type, a contiguous result. */
static bool convt2d_gemm_path(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    return cpu_gemm_type_ok(a->type) && cpu_gemm_type_ok(b->type) && a->nb[1] == (size_t)a->ne[0] * a->nb[0] &&
           a->nb[2] == (size_t)a->ne[1] * a->nb[1] && b->nb[1] == (size_t)b->ne[0] * b->nb[0] && ggml_is_contiguous(dst);
}

/* Input positions per chunk: about 4 MiB of columns. */
static int64_t convt2d_chunk(const struct convt2d_geom *g) {
    int64_t T = ((int64_t)1 << 20) / g->KKO;
    if (T < 16) T = 16;
    return T < g->W * g->H ? T : g->W * g->H;
}

static size_t convt2d_work_size(const struct ggml_tensor *node, int n_threads) {
    if (!convt2d_gemm_path(node)) return 0;
    const struct convt2d_geom g = convt2d_geom_of(node);
    const int64_t T = convt2d_chunk(&g);
    return (size_t)(T * g.KKO) * sizeof(float) + 64 + (size_t)n_threads * cpu_gemm_thread_work(cpu_gemm_kernel(), T, g.IC);
}

static enum ggml_status convt2d_gemm(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct convt2d_geom g = convt2d_geom_of(dst);
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const int64_t T = convt2d_chunk(&g), n_pos = g.W * g.H;
    float *cols = call->wdata;
    void *work = (char *)call->wdata + (size_t)(T * g.KKO) * sizeof(float) + 64 + (size_t)call->ith * cpu_gemm_thread_work(kern, T, g.IC);
    int64_t r0, r1; /* this task's output planes (oc, n) */
    cpu_split_range(g.OC * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) memset(cpu_elem_ptr(dst, 0, 0, r % g.OC, r / g.OC), 0, (size_t)(g.OW * g.OH) * sizeof(float));
    for (int64_t n = 0; n < dst->ne[3]; n++)
        for (int64_t q0 = 0; q0 < n_pos; q0 += T) {
            const int64_t nq = q0 + T < n_pos ? T : n_pos - q0;
            /* cols[q][kx + KW*(ky + KH*oc)] = sum_ic b(q0 + q, ic, n) * a(kx, ky, oc, ic) */
            const struct cpu_gemm_problem prob = {
                .n = g.KKO, .m = nq, .k = g.IC,
                .w = {a->data, a->type, a->nb[0], a->nb[3]},
                .x = {cpu_elem_ptr(b, q0 % g.W, q0 / g.W, 0, n), b->type, b->nb[0], b->nb[2]},
                .dst = cols,
                .dst_stride = (size_t)g.KKO * sizeof(float),
            };
            cpu_gemm_compute(kern, &prob, call->ith, call->nth, work);
            call->barrier(call);
            for (int64_t r = r0; r < r1; r++) {
                if (r / g.OC != n) continue;
                const int64_t oc = r % g.OC;
                float *plane = (float *)cpu_elem_ptr(dst, 0, 0, oc, n);
                for (int64_t q = 0; q < nq; q++) {
                    const int64_t ix = (q0 + q) % g.W, iy = (q0 + q) / g.W;
                    const float *c = cols + q * g.KKO + oc * g.KW * g.KH;
                    for (int64_t ky = 0; ky < g.KH; ky++)
                        for (int64_t kx = 0; kx < g.KW; kx++) plane[(iy * g.s + ky) * g.OW + ix * g.s + kx] += c[ky * g.KW + kx];
                }
            }
            call->barrier(call); /* the columns are overwritten next */
        }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status convt2d_gather(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const int s = ggmlc_op_param_i32(dst, 0);
    const int64_t KW = a->ne[0], KH = a->ne[1], IC = a->ne[3], OW = dst->ne[0], OH = dst->ne[1], OC = dst->ne[2];
    int64_t r0, r1;
    cpu_split_range(OW * OH * OC * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ox = r % OW, oy = (r / OW) % OH, oc = (r / (OW * OH)) % OC, n = r / (OW * OH * OC);
        float sum = 0.0f;
        for (int64_t ky = 0; ky < KH; ky++) {
            const int64_t iy = cpu_tap_out(oy, ky, s, 0, 1, b->ne[1]);
            if (iy < 0) continue;
            for (int64_t kx = 0; kx < KW; kx++) {
                const int64_t ix = cpu_tap_out(ox, kx, s, 0, 1, b->ne[0]);
                if (ix < 0) continue;
                for (int64_t ic = 0; ic < IC; ic++) sum += cpu_get_f32(a, kx, ky, oc, ic) * cpu_get_f32(b, ix, iy, ic, n);
            }
        }
        *(float *)cpu_elem_ptr(dst, ox, oy, oc, n) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

/* ------------------------------------------------- direct convolutions */

static enum ggml_status conv_transpose_2d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return convt2d_gemm_path(dst) ? convt2d_gemm(call, dst) : convt2d_gather(call, dst);
}

void cpu_ops_conv_gemm_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_CONV_2D] = conv_2d;
    t->work_size[GGML_OP_CONV_2D] = conv_work_size;
    t->compute[GGML_OP_CONV_3D] = conv_3d;
    t->work_size[GGML_OP_CONV_3D] = conv_work_size;
    t->compute[GGML_OP_CONV_TRANSPOSE_1D] = conv_transpose_1d;
    t->work_size[GGML_OP_CONV_TRANSPOSE_1D] = convt_work_size;
    t->compute[GGML_OP_CONV_TRANSPOSE_2D] = conv_transpose_2d;
    t->work_size[GGML_OP_CONV_TRANSPOSE_2D] = convt2d_work_size;
}
