/* train-epoch.h - `ggmlc-bench train-epoch`: whole training epochs through the model API
 * (bench/train-epoch.c). */
#ifndef GGMLC_BENCH_TRAIN_EPOCH_H
#define GGMLC_BENCH_TRAIN_EPOCH_H

#include <stdint.h>

/* Runs the mode on argv[2..] (argv[1] is "train-epoch"); the process exit status. */
int bench_train_epoch(int argc, char **argv);

struct ggmlc_dataset;
/* --api opt: epochs of the MLP through ggml-opt on the backend named (NULL: the best one),
 * batch and seed as the model API's; d's first whole batches.  The process exit status. */
int bench_train_epoch_opt(const char *backend, int64_t batch, int epochs, unsigned seed, const struct ggmlc_dataset *d);

#endif
