/*
 * demo.c - runs one graph that mixes the example plugin's operators (ADD,
 * MUL, RELU) with operators only the CPU has (SQR, SUM_ROWS), three ways:
 *   1. through ggml_backend_sched over {example, CPU};
 *   2. on the CPU alone (the reference);
 *   3. with plain ggml_backend_graph_compute on the example backend, which
 *      runs the nodes the backend lacks on the CPU by itself.
 * It prints where each node ran and how the results compare; the exit
 * status is 0 when all three agree exactly.
 */
#include <stdio.h>
#include <string.h>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <ggmlc.h>

#define COLS 13
#define ROWS 5

struct demo_graph {
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    struct ggml_tensor *x, *y, *out;
};

/* out = sum_rows((relu(x + y))^2 * y), y a row broadcast over x's rows */
static struct demo_graph build(void) {
    struct demo_graph d;
    d.ctx = ggml_init((struct ggml_init_params){.mem_size = 32 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    d.x = ggml_new_tensor_2d(d.ctx, GGML_TYPE_F32, COLS, ROWS);
    d.y = ggml_new_tensor_2d(d.ctx, GGML_TYPE_F32, COLS, 1);
    ggml_set_name(d.x, "x");
    ggml_set_name(d.y, "y");
    ggml_set_input(d.x);
    ggml_set_input(d.y);
    struct ggml_tensor *a = ggml_set_name(ggml_add(d.ctx, d.x, d.y), "a");
    struct ggml_tensor *r = ggml_set_name(ggml_relu(d.ctx, a), "r");
    struct ggml_tensor *s = ggml_set_name(ggml_sqr(d.ctx, r), "s");
    struct ggml_tensor *m = ggml_set_name(ggml_mul(d.ctx, s, d.y), "m");
    d.out = ggml_set_name(ggml_sum_rows(d.ctx, m), "out");
    ggml_set_output(d.out);
    d.graph = ggml_new_graph(d.ctx);
    ggml_build_forward_expand(d.graph, d.out);
    return d;
}

static void set_inputs(struct demo_graph *d) {
    float x[COLS * ROWS], y[COLS];
    for (int i = 0; i < COLS * ROWS; i++) x[i] = (float)((i * 7) % 17) - 8.5f;
    for (int i = 0; i < COLS; i++) y[i] = 0.25f * (float)i - 1.0f;
    ggml_backend_tensor_set(d->x, x, 0, sizeof x);
    ggml_backend_tensor_set(d->y, y, 0, sizeof y);
}

static float max_diff(const float *a, const float *b, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        const float e = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
        if (!(e <= m)) m = e; /* NaN counts as a difference */
    }
    return m;
}

int main(void) {
    ggml_backend_t example = ggml_backend_init_by_name("example", NULL);
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (!example || !cpu) {
        fprintf(stderr, "demo: %s (is example.ini in the configuration's backends.d/?)\n", ggmlc_last_error());
        return 2;
    }

    /* 1. the scheduler */
    struct demo_graph d = build();
    ggml_backend_t backends[2] = {example, cpu};
    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, NULL, 2, GGML_DEFAULT_GRAPH_SIZE, false, true);
    if (!sched || !ggml_backend_sched_alloc_graph(sched, d.graph)) {
        fprintf(stderr, "demo: %s\n", ggmlc_last_error());
        return 1;
    }
    set_inputs(&d);
    const enum ggml_status st = ggml_backend_sched_graph_compute(sched, d.graph);
    printf("sched: status %d, splits %d, copies %d\n", (int)st, ggml_backend_sched_get_n_splits(sched),
           ggml_backend_sched_get_n_copies(sched));
    for (int i = 0; i < ggml_graph_n_nodes(d.graph); i++) {
        struct ggml_tensor *node = ggml_graph_node(d.graph, i);
        printf("node %s %s on %s\n", node->name, ggml_op_desc(node),
               ggml_backend_name(ggml_backend_sched_get_tensor_backend(sched, node)));
    }
    float got[ROWS], want[ROWS], fallback[ROWS];
    ggml_backend_tensor_get(d.out, got, 0, sizeof got);

    /* 2. the reference: the CPU alone */
    struct demo_graph ref = build();
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    ggml_gallocr_alloc_graph(galloc, ref.graph);
    set_inputs(&ref);
    ggml_backend_graph_compute(cpu, ref.graph);
    ggml_backend_tensor_get(ref.out, want, 0, sizeof want);
    printf("sched vs cpu: max difference %g\n", max_diff(got, want, ROWS));

    /* 3. every tensor in the example backend's memory, computed by ggml_backend_graph_compute */
    struct demo_graph fb = build();
    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(fb.ctx, example);
    set_inputs(&fb);
    const enum ggml_status fst = ggml_backend_graph_compute(example, fb.graph);
    ggml_backend_tensor_get(fb.out, fallback, 0, sizeof fallback);
    printf("graph_compute on example: status %d, max difference %g\n", (int)fst, max_diff(fallback, want, ROWS));

    size_t (*nodes_computed)(void) =
        (size_t (*)(void))ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(ggml_backend_get_device(example)),
                                                            "example_nodes_computed");
    printf("example computed %zu nodes\n", nodes_computed ? nodes_computed() : (size_t)0);
    for (int i = 0; i < ROWS; i++) printf("out[%d] = %.6g\n", i, got[i]);

    const int ok = st == GGML_STATUS_SUCCESS && fst == GGML_STATUS_SUCCESS && max_diff(got, want, ROWS) == 0.0f &&
                   max_diff(fallback, want, ROWS) == 0.0f;
    ggml_backend_buffer_free(buffer);
    ggml_gallocr_free(galloc);
    ggml_backend_sched_free(sched);
    ggml_free(fb.ctx);
    ggml_free(ref.ctx);
    ggml_free(d.ctx);
    ggml_backend_free(example);
    ggml_backend_free(cpu);
    return ok ? 0 : 1;
}
