/*
 * counters.h - the benchmarks' report of host-device traffic (ggmlc_counters_get) per step.
 */
#ifndef GGMLC_BENCH_COUNTERS_H
#define GGMLC_BENCH_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ggmlc.h"

/* Print to out what happened between two readings of the counters, a then b, per step: command
 * submits, fence waits, writes to the device (and their bytes), reads back (and their bytes)
 * and nodes that fell back to the CPU, as "1.00 submits, ..., 0.00 fallback nodes" (no
 * newline). */
void bench_print_counts_per_step(FILE *out, const struct ggmlc_counters *a, const struct ggmlc_counters *b,
                                 int64_t steps);

/* One epoch's line of ggmlc-bench train-epoch (either API): "epoch N: S s, R steps/s, loss L,
 * accuracy A; per step: <the counters between a and b>", then a newline and a flush. */
void bench_print_epoch(int epoch, double seconds, int64_t steps, double loss, double accuracy,
                       const struct ggmlc_counters *a, const struct ggmlc_counters *b);
/* train-epoch's closing line: the mean epoch time (of the epochs after the first when there
 * were several) and the steps per second it gives. */
void bench_print_epoch_mean(double seconds, bool several, int64_t steps);

#endif
