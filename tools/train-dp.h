/*
 * train-dp.h - ggmlc-train's data-parallel part: replicas in this process (--replicas,
 * --devices) and, when mpirun started it and ggmlc has libggmlc-mpi, one member per process.
 */
#ifndef GGMLC_TRAIN_DP_H
#define GGMLC_TRAIN_DP_H

#include "ggmlc-nn.h"

/* Joins the MPI job when mpirun started this process: 0, or an exit status after a message
 * (started by mpirun, but built without MPI). */
int train_dp_init(int *argc, char ***argv);
/* Whether this process trains with others over MPI, and whether it is rank 0 (always true
 * without MPI): only rank 0 prints, plots and saves. */
bool train_dp_over_mpi(void);
bool train_dp_is_leader(void);
/* The device of replica i from a comma-separated list (NULL: fallback), in buf. */
const char *train_dp_device(const char *list, int i, char *buf, size_t size);
/* How many names the list has (0 for NULL). */
int train_dp_device_count(const char *list);
/* ggmlc_model_fit's work over n replicas (and the MPI job); prints the all-reduce cost.  shares:
 * NULL (equal), "auto" (measured) or n comma-separated positive numbers. */
enum ggmlc_status train_dp_fit(ggmlc_model **replicas, int n, const char *shares, const float *x,
                               size_t x_len, const float *y, size_t y_len, int64_t count,
                               const struct ggmlc_fit_options *fo, ggmlc_history **history);
/* The shares of a --shares list into out (cap entries): their number, 0 for NULL or "auto",
 * -1 when the text is neither auto nor positive numbers separated by commas. */
int train_dp_parse_shares(const char *text, float *out, int cap);
/* Leaves the MPI job (after the last collective call). */
void train_dp_finish(void);

#endif
