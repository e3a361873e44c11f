/*
 * counters.h - the benchmarks' report of host-device traffic (ggmlc_counters_get) per step.
 */
#ifndef GGMLC_BENCH_COUNTERS_H
#define GGMLC_BENCH_COUNTERS_H

#include <stdint.h>
#include <stdio.h>

#include "ggmlc.h"

/* Print to out what happened between two readings of the counters, a then b, per step: command
 * submits, fence waits, writes to the device (and their bytes), reads back (and their bytes)
 * and nodes that fell back to the CPU, as "1.00 submits, ..., 0.00 fallback nodes" (no
 * newline). */
void bench_print_counts_per_step(FILE *out, const struct ggmlc_counters *a, const struct ggmlc_counters *b,
                                 int64_t steps);

#endif
