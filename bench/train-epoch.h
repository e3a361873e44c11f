/* train-epoch.h - `ggmlc-bench train-epoch`: whole training epochs through the model API
 * (bench/train-epoch.c). */
#ifndef GGMLC_BENCH_TRAIN_EPOCH_H
#define GGMLC_BENCH_TRAIN_EPOCH_H

/* Runs the mode on argv[2..] (argv[1] is "train-epoch"); the process exit status. */
int bench_train_epoch(int argc, char **argv);

#endif
