/*
 * simple-matmul.c - a program written against ggml's public API only: it
 * multiplies two matrices, adds a bias and applies a softmax on the best
 * backend the configuration offers, and checks the result against a plain C
 * computation.  Installed as `ggmlc-example-matmul`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

enum { ROWS_A = 4, COLS_A = 2, ROWS_B = 3 };

/* --help and --version, as every installed program answers them; returns -1 for neither. */
static int standard_option(int argc, char **argv) {
    if (argc < 2) return -1;
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        puts("Usage: ggmlc-example-matmul [--help] [--version]\n"
             "Multiply two small matrices, add a bias and apply a softmax on the best backend\n"
             "(ggml_backend_init_best), and check the result against plain C.\n"
             "Exit status: 0 when the results match, 1 otherwise, 2 for an unknown argument.");
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
#ifdef PACKAGE_VERSION
        puts("ggmlc-example-matmul (ggmlc) " PACKAGE_VERSION);
#else
        puts("ggmlc-example-matmul");
#endif
        return 0;
    }
    fprintf(stderr,
            "ggmlc-example-matmul: unknown argument '%s'\nTry 'ggmlc-example-matmul --help'.\n",
            argv[1]);
    return 2;
}

int main(int argc, char **argv) {
    const int answered = standard_option(argc, argv);
    if (answered >= 0) return answered;
    /* A is 4x2 and B is 3x2 (row-major); ggml_mul_mat(A, B) = B A^T, a 3x4 result */
    const float a[ROWS_A * COLS_A] = {2, 8, 5, 1, 4, 2, 8, 6};
    const float b[ROWS_B * COLS_A] = {10, 5, 9, 9, 5, 4};
    const float bias[ROWS_A] = {0.5f, -1.0f, 0.0f, 2.0f};

    ggml_backend_t backend = ggml_backend_init_best();
    if (!backend) {
        fprintf(stderr, "no backend could be initialised (run ggmlc-info to see why)\n");
        return 1;
    }
    printf("backend: %s\n", ggml_backend_name(backend));

    struct ggml_init_params params = {
        .mem_size = 8 * ggml_tensor_overhead() + ggml_graph_overhead(),
        .mem_buffer = NULL,
        .no_alloc = true, /* data lives in the backend's buffer */
    };
    struct ggml_context *ctx = ggml_init(params);
    struct ggml_tensor *ta = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, COLS_A, ROWS_A);
    struct ggml_tensor *tb = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, COLS_A, ROWS_B);
    struct ggml_tensor *tbias = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ROWS_A);
    struct ggml_tensor *prod = ggml_mul_mat(ctx, ta, tb);
    struct ggml_tensor *out = ggml_soft_max(ctx, ggml_add(ctx, prod, tbias));
    struct ggml_cgraph *graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);

    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, backend);
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!buffer || !galloc || !ggml_gallocr_alloc_graph(galloc, graph)) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    ggml_backend_tensor_set(ta, a, 0, sizeof a);
    ggml_backend_tensor_set(tb, b, 0, sizeof b);
    ggml_backend_tensor_set(tbias, bias, 0, sizeof bias);
    if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "computation failed\n");
        return 1;
    }

    float result[ROWS_B * ROWS_A];
    ggml_backend_tensor_get(out, result, 0, sizeof result);

    int errors = 0;
    printf("softmax(B A^T + bias) =\n");
    for (int i = 0; i < ROWS_B; i++) {
        float logits[ROWS_A], max = -INFINITY, sum = 0;
        for (int j = 0; j < ROWS_A; j++) {
            logits[j] = bias[j];
            for (int k = 0; k < COLS_A; k++) logits[j] += b[i * COLS_A + k] * a[j * COLS_A + k];
            if (logits[j] > max) max = logits[j];
        }
        for (int j = 0; j < ROWS_A; j++) sum += expf(logits[j] - max);
        for (int j = 0; j < ROWS_A; j++) {
            const float expect = expf(logits[j] - max) / sum, got = result[i * ROWS_A + j];
            printf(" %.6f", got);
            if (fabsf(got - expect) > 1e-5f) errors++;
        }
        printf("\n");
    }
    printf(errors ? "MISMATCH against the plain C computation\n" : "matches the plain C computation\n");

    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(buffer);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return errors ? 1 : 0;
}
