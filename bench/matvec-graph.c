/* matvec-graph.c - one matrix-vector product per graph, timed through ggml's public API
 * only, so the same file builds against ggmlc and against ggml for a side-by-side figure:
 *   cc -O2 -I INCLUDE bench/matvec-graph.c -L LIBDIR -lggml -lggml-base -lggml-cpu   # ggml
 *   cc -O2 -I include bench/matvec-graph.c -L .libs -lggmlc                          # ggmlc
 *   matvec-graph TYPE N K [REPS] [THREADS]
 * N weight rows of K values of TYPE (any ggml type name) times one f32 vector; prints the
 * best of five batches of REPS graph computations (ggml_graph_compute_with_ctx), in us. */
#include "ggml-cpu.h"
#include "ggml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static enum ggml_type type_by_name(const char *name) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char *n = ggml_type_name((enum ggml_type)t);
        if (n && strcmp(n, name) == 0) return (enum ggml_type)t;
    }
    return GGML_TYPE_COUNT;
}

/* Uniform values in [-0.5, 0.5) from a fixed seed. */
static void fill(float *v, long n) {
    srand(1);
    for (long i = 0; i < n; i++) v[i] = (float)rand() / (float)RAND_MAX - 0.5f;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: matvec-graph TYPE N K [REPS] [THREADS]\n");
        return 2;
    }
    const enum ggml_type type = type_by_name(argv[1]);
    const int n = atoi(argv[2]), k = atoi(argv[3]);
    const int reps = argc > 4 ? atoi(argv[4]) : 1000, threads = argc > 5 ? atoi(argv[5]) : 1;
    if (type == GGML_TYPE_COUNT || n <= 0 || k <= 0 || k % ggml_blck_size(type) != 0 || reps <= 0 ||
        threads <= 0) {
        fprintf(stderr, "matvec-graph: bad type or shape (K a multiple of the type's block)\n");
        return 2;
    }
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){(size_t)n * k * 4 + (64 << 20), NULL, false});
    if (!ctx) return 1;
    float *f = malloc(sizeof(float) * (size_t)n * k);
    if (!f) return 1;
    fill(f, (long)n * k);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, type, k, n),
                       *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, k);
    ggml_quantize_chunk(type, f, w->data, 0, n, k, NULL);
    memcpy(x->data, f, sizeof(float) * (size_t)k);
    free(f);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_mul_mat(ctx, w, x));
    ggml_graph_compute_with_ctx(ctx, g, threads);
    double best = 1e30;
    for (int b = 0; b < 5; b++) {
        const double t0 = now_s();
        for (int i = 0; i < reps; i++) ggml_graph_compute_with_ctx(ctx, g, threads);
        const double t = (now_s() - t0) / reps;
        if (t < best) best = t;
    }
    printf("%s %d x %d, %d thread(s): %.2f us per graph\n", argv[1], n, k, threads, best * 1e6);
    ggml_free(ctx);
    return 0;
}
