/*
 * test-cgraph-layout.c - what stable-diffusion.cpp does with the installed subset of ggml's
 * ggml-impl.h ("ggml/src/ggml-impl.h"): it reads a graph's leafs through gf->n_leafs and
 * gf->leafs, and computes a graph segment by segment through views it builds itself with a
 * positional initializer in ggml's member order (size, n_nodes, n_leafs, nodes, grads,
 * grad_accs, leafs, use_counts, visited_hash_set, order, uid).  The segments computed one
 * after the other must give what the whole graph gives, checked against values computed
 * by hand.
 */
#include <math.h>
#include <stdio.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml/src/ggml-impl.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N = 8, STEPS = 6 };

/* A view of nodes [i0, i1) of g, written as stable-diffusion.cpp writes it. */
static struct ggml_cgraph view_of(struct ggml_cgraph *g, int i0, int i1) {
    struct ggml_cgraph v = {0, i1 - i0, 0, g->nodes + i0, NULL, NULL, NULL, g->use_counts, g->visited_hash_set,
                            g->order, 0};
    return v;
}

/* x_{s+1} = 2 x_s + 1 - x_s / 2 = 1.5 x_s + 1, per element, from x_0[i] = i. */
static float expected(int i) {
    double x = i;
    for (int s = 0; s < STEPS; s++) x = 1.5 * x + 1.0;
    return (float)x;
}

int main(void) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!tap_ok(backend != NULL, "CPU backend")) return tap_done();
    struct ggml_init_params ip = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x0 = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N), *x = x0;
    ggml_set_name(x0, "x0");
    ggml_set_input(x0);
    for (int s = 0; s < STEPS; s++)
        x = ggml_sub(ctx, ggml_scale_bias(ctx, x, 2.0f, 1.0f), ggml_scale(ctx, x, 0.5f));
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, x);

    bool found = false;
    for (int i = 0; i < gf->n_leafs; i++) found = found || gf->leafs[i] == x0;
    tap_ok(gf->n_leafs == 1 && found, "gf->n_leafs and gf->leafs hold the graph's one input (%d leafs)", gf->n_leafs);
    tap_ok(gf->n_nodes == ggml_graph_n_nodes(gf) && gf->order == GGML_CGRAPH_EVAL_ORDER_LEFT_TO_RIGHT,
           "gf->n_nodes is ggml_graph_n_nodes (%d), gf->order left to right", gf->n_nodes);

    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    bool ok = ggml_gallocr_alloc_graph(galloc, gf);
    float in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (float)i;
    if (ok) ggml_backend_tensor_set(x0, in, 0, sizeof in);
    /* three nodes a segment, as a per-node evaluation callback splits a graph */
    for (int i0 = 0; ok && i0 < gf->n_nodes; i0 += 3) {
        const int i1 = i0 + 3 < gf->n_nodes ? i0 + 3 : gf->n_nodes;
        struct ggml_cgraph segment = view_of(gf, i0, i1);
        ok = ggml_backend_graph_compute(backend, &segment) == GGML_STATUS_SUCCESS;
    }
    double worst = ok ? 0 : INFINITY;
    if (ok) ggml_backend_tensor_get(x, out, 0, sizeof out);
    for (int i = 0; ok && i < N; i++) worst = fmax(worst, fabs(out[i] - expected(i)) / fabs(expected(i)));
    tap_ok(worst < 1e-6, "segments of 3 nodes through hand-built views compute the graph (worst relative %.2g)",
           worst);

    ggml_gallocr_free(galloc);
    ggml_free(ctx);
    ggml_backend_free(backend);
    ggmlc_shutdown();
    return tap_done();
}
