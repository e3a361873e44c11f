/*
 * dp-mpi-check.c - compares the weights of two saved models, for tests/test-dp-train.sh:
 *     dp-mpi-check A.gguf B.gguf TOLERANCE
 * prints the largest relative difference and exits 0 when it is at most TOLERANCE (1 when
 * larger, 2 when a file does not load or the models differ in size).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggmlc-nn.h"

static float *weights_of(const char *path, int64_t *n) {
    ggmlc_model *m = ggmlc_model_load(path, "CPU");
    if (!m) return NULL;
    *n = ggmlc_model_get_weights(m, NULL, 0);
    float *w = malloc(sizeof(float) * (size_t)(*n > 0 ? *n : 1));
    if (w) ggmlc_model_get_weights(m, w, (size_t)*n);
    ggmlc_model_free(m);
    return w;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fputs("usage: dp-mpi-check A.gguf B.gguf TOLERANCE\n", stderr);
        return 2;
    }
    ggmlc_init();
    int64_t na = 0, nb = 0;
    float *a = weights_of(argv[1], &na), *b = weights_of(argv[2], &nb);
    int rc = 2;
    if (a && b && na == nb && na > 0) {
        double worst = 0;
        for (int64_t i = 0; i < na; i++)
            worst = fmax(worst, fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1e-3));
        printf("%lld weights, largest relative difference %.3g\n", (long long)na, worst);
        rc = worst <= atof(argv[3]) ? 0 : 1;
    } else {
        fprintf(stderr, "dp-mpi-check: cannot compare %s and %s: %s\n", argv[1], argv[2],
                ggmlc_last_error());
    }
    free(a), free(b);
    ggmlc_shutdown();
    return rc;
}
