/*
 * train-dp.c - ggmlc-train's data-parallel training (train-dp.h) over ggmlc-dp.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc-dp.h"
#include "train-dp.h"

static ggmlc_comm *mpi_comm; /* NULL: this process trains alone */

int train_dp_init(int *argc, char ***argv) {
    if (!ggmlc_comm_mpi_launched()) return 0;
#ifdef GGMLC_WITH_MPI
    mpi_comm = ggmlc_comm_mpi(argc, argv);
    if (mpi_comm && ggmlc_comm_size(mpi_comm) > 1) return 0;
    if (!mpi_comm) {
        fprintf(stderr, "ggmlc-train: cannot join the MPI job: %s\n", ggmlc_last_error());
        return 4;
    }
    return 0; /* a job of one process: as without mpirun */
#else
    (void)argc, (void)argv;
    fputs(
        "ggmlc-train: started by an MPI launcher, but this ggmlc was built without MPI (configure --with-mpi)\n",
        stderr);
    return 2;
#endif
}

bool train_dp_over_mpi(void) { return mpi_comm != NULL; }

bool train_dp_is_leader(void) { return !mpi_comm || ggmlc_comm_rank(mpi_comm) == 0; }

int train_dp_device_count(const char *list) {
    if (!list || !*list) return 0;
    int n = 1;
    for (const char *c = list; *c; c++) n += *c == ',';
    return n;
}

const char *train_dp_device(const char *list, int i, char *buf, size_t size) {
    const int n = train_dp_device_count(list);
    if (n == 0) return NULL;
    const char *start = list;
    for (int k = 0; k < i % n; k++)
        start = strchr(start, ',') + 1; /* fewer names than replicas: round robin */
    const size_t len = strcspn(start, ",");
    snprintf(buf, size, "%.*s", (int)len, start);
    return buf;
}

int train_dp_parse_shares(const char *text, float *out, int cap) {
    if (!text || strcmp(text, "auto") == 0) return 0;
    int n = 0;
    for (const char *p = text;; n++) {
        char *end;
        const float v = strtof(p, &end);
        if (end == p || !(v > 0 && v < 1e30f) || (*end != ',' && *end != '\0')) return -1;
        if (n < cap) out[n] = v;
        if (*end == '\0') return n + 1;
        p = end + 1;
    }
}

enum ggmlc_status train_dp_fit(ggmlc_model **replicas, int n, const char *shares, const float *x,
                               size_t x_len, const float *y, size_t y_len, int64_t count,
                               const struct ggmlc_fit_options *fo, ggmlc_history **history) {
    struct ggmlc_fit_options o = *fo;
    if (!train_dp_is_leader()) o.verbose = 0;
    struct ggmlc_dp_options dp = ggmlc_dp_defaults();
    float weights[64];
    const int n_shares = train_dp_parse_shares(shares, weights, 64);
    if (n_shares > 0 && n_shares != n)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "--shares gives %d shares for %d replicas",
                               n_shares, n);
    dp.weights = n_shares > 0 ? weights : NULL;
    dp.measure = shares && strcmp(shares, "auto") == 0;
    const enum ggmlc_status status =
        ggmlc_model_fit_dp(replicas, n, mpi_comm, &dp, x, x_len, y, y_len, count, &o, history);
    if (status == GGMLC_OK && fo->verbose && train_dp_is_leader()) {
        const int total = n * (mpi_comm ? ggmlc_comm_size(mpi_comm) : 1);
        const struct ggmlc_dp_stats st = ggmlc_dp_last_stats();
        printf("data-parallel: %d replicas (%d per process%s); per step: all-reduce %.2f ms, "
               "time lost to it %.2f ms\n",
               total, n, mpi_comm ? ", MPI" : "", st.allreduce_us / 1e3, st.overhead_us / 1e3);
    }
    return status;
}

void train_dp_finish(void) {
    ggmlc_comm_free(mpi_comm);
    mpi_comm = NULL;
}
