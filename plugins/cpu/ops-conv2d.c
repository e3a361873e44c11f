/* ops-conv2d.c - GGML_OP_CONV_2D (ggml_conv_2d_direct): the patches of a chunk
 * of output positions are gathered into shared scratch, then the CPU GEMM
 * multiplies them with the kernel rows straight into the result, so no
 * im2col tensor of the whole image is ever materialised.  Kernels whose rows
 * are not contiguous take a plain gather loop. */
#include "cpu-convops.h"
#include "gemm.h"

struct conv2d_geom {
    int s0, s1, p0, p1, d0, d1;
    int64_t KW, KH, IC, OW, OH, OC, K; /* K = KW*KH*IC, the depth of the product */
};

static struct conv2d_geom geom_of(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const int32_t *op = dst->op_params;
    return (struct conv2d_geom){op[0], op[1], op[2], op[3], op[4], op[5],
                                a->ne[0], a->ne[1], a->ne[2], dst->ne[0], dst->ne[1], dst->ne[2], a->ne[0] * a->ne[1] * a->ne[2]};
}

/* Kernel rows [KW*KH*IC] contiguous, of a type the GEMM reads. */
static bool gemm_path(const struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const size_t es = ggml_type_size(a->type);
    return cpu_gemm_type_ok(a->type) && a->nb[0] == es && a->nb[1] == (size_t)a->ne[0] * es &&
           a->nb[2] == (size_t)(a->ne[0] * a->ne[1]) * es && ggml_is_contiguous(dst);
}

/* Output positions per chunk: about 4 MiB of f32 patches. */
static int64_t chunk_positions(const struct conv2d_geom *g) {
    int64_t P = ((int64_t)1 << 20) / g->K;
    if (P < 64) P = 64;
    return P < g->OW * g->OH ? P : g->OW * g->OH;
}

static size_t conv_2d_work_size(const struct ggml_tensor *node, int n_threads) {
    const struct conv2d_geom g = geom_of(node);
    if (!gemm_path(node)) return 0;
    const size_t patches = (size_t)(chunk_positions(&g) * g.K) * sizeof(float) + 64;
    return patches + (size_t)n_threads * cpu_gemm_thread_work(cpu_gemm_kernel(), g.OC, g.K);
}

/* Patch rows of positions [q0, q1) of image n, each K floats in kernel-row order (ic, kh, kw). */
static void gather_patches(const struct ggml_tensor *b, const struct conv2d_geom *g, int64_t n, int64_t first, int64_t q0, int64_t q1,
                           float *patches) {
    const bool f32_rows = b->type == GGML_TYPE_F32 && b->nb[0] == sizeof(float);
    for (int64_t q = q0; q < q1; q++) {
        const int64_t ow = q % g->OW, oh = q / g->OW;
        float *out = patches + (q - first) * g->K;
        for (int64_t ic = 0; ic < g->IC; ic++)
            for (int64_t kh = 0; kh < g->KH; kh++, out += g->KW) {
                const int64_t ih = cpu_tap_pos(oh, kh, g->s1, g->p1, g->d1, b->ne[1]);
                const char *row = ih < 0 ? NULL : cpu_elem_ptr(b, 0, ih, ic, n);
                for (int64_t kw = 0, iw = ow * g->s0 - g->p0; kw < g->KW; kw++, iw += g->d0) {
                    const bool in = row && iw >= 0 && iw < b->ne[0];
                    out[kw] = !in ? 0.0f : f32_rows ? ((const float *)row)[iw] : cpu_load_f32(b->type, row + iw * b->nb[0]);
                }
            }
    }
}

static enum ggml_status conv_2d_gemm(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct conv2d_geom g = geom_of(dst);
    const struct cpu_gemm_kernel *kern = cpu_gemm_kernel();
    const int64_t P = chunk_positions(&g), n_pos = g.OW * g.OH;
    float *patches = call->wdata;
    void *work = (char *)call->wdata + (size_t)(P * g.K) * sizeof(float) + 64 + (size_t)call->ith * cpu_gemm_thread_work(kern, g.OC, g.K);
    for (int64_t n = 0; n < dst->ne[3]; n++)
        for (int64_t first = 0; first < n_pos; first += P) {
            const int64_t count = first + P < n_pos ? P : n_pos - first;
            int64_t q0, q1;
            cpu_split_range(count, call->ith, call->nth, &q0, &q1);
            gather_patches(b, &g, n, first, first + q0, first + q1, patches);
            call->barrier(call);
            /* dst[oc][q] = sum_k patch(q, k) * kernel(oc, k): positions along the GEMM's n, channels along m */
            const struct cpu_gemm_problem prob = {
                .n = count, .m = g.OC, .k = g.K,
                .w = {patches, GGML_TYPE_F32, (size_t)g.K * sizeof(float), sizeof(float)},
                .x = {a->data, a->type, a->nb[3], a->nb[0]},
                .dst = (float *)cpu_elem_ptr(dst, first, 0, 0, n),
                .dst_stride = dst->nb[2],
            };
            cpu_gemm_compute(kern, &prob, call->ith, call->nth, work);
            call->barrier(call); /* the patches are refilled next */
        }
    return GGML_STATUS_SUCCESS;
}

/* Fallback: each task owns output rows of (oc, n) planes and gathers them directly. */
static enum ggml_status conv_2d_gather(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct conv2d_geom g = geom_of(dst);
    int64_t r0, r1;
    cpu_split_range(g.OW * g.OH * g.OC * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % g.OW, oh = (r / g.OW) % g.OH, oc = (r / (g.OW * g.OH)) % g.OC, n = r / (g.OW * g.OH * g.OC);
        float sum = 0.0f;
        for (int64_t ic = 0; ic < g.IC; ic++)
            for (int64_t kh = 0; kh < g.KH; kh++) {
                const int64_t ih = cpu_tap_pos(oh, kh, g.s1, g.p1, g.d1, b->ne[1]);
                for (int64_t kw = 0; ih >= 0 && kw < g.KW; kw++) {
                    const int64_t iw = cpu_tap_pos(ow, kw, g.s0, g.p0, g.d0, b->ne[0]);
                    if (iw >= 0) sum += cpu_get_f32(a, kw, kh, ic, oc) * cpu_get_f32(b, iw, ih, ic, n);
                }
            }
        *(float *)cpu_elem_ptr(dst, ow, oh, oc, n) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status conv_2d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return gemm_path(dst) ? conv_2d_gemm(call, dst) : conv_2d_gather(call, dst);
}

void cpu_ops_conv2d_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_CONV_2D] = conv_2d;
    t->work_size[GGML_OP_CONV_2D] = conv_2d_work_size;
}
