/*
 * counters.c - the benchmarks' report of host-device traffic per step (counters.h).
 */
#include "counters.h"

static double per_step(uint64_t after, uint64_t before, int64_t steps) {
    return steps > 0 ? (double)(after - before) / (double)steps : 0.0;
}

void bench_print_counts_per_step(FILE *out, const struct ggmlc_counters *a, const struct ggmlc_counters *b,
                                 int64_t steps) {
    fprintf(out, "%.2f submits, %.2f waits, %.2f writes (%.0f B), %.2f reads (%.0f B), %.2f fallback nodes",
            per_step(b->submits, a->submits, steps), per_step(b->waits, a->waits, steps),
            per_step(b->writes_to_device, a->writes_to_device, steps),
            per_step(b->bytes_to_device, a->bytes_to_device, steps),
            per_step(b->reads_from_device, a->reads_from_device, steps),
            per_step(b->bytes_from_device, a->bytes_from_device, steps),
            per_step(b->fallback_nodes, a->fallback_nodes, steps));
}

void bench_print_epoch(int epoch, double seconds, int64_t steps, double loss, double accuracy,
                       const struct ggmlc_counters *a, const struct ggmlc_counters *b) {
    printf("epoch %d: %.3f s, %.1f steps/s, loss %.4f, accuracy %.4f; per step: ", epoch, seconds, (double)steps / seconds,
           loss, accuracy);
    bench_print_counts_per_step(stdout, a, b, steps);
    printf("\n");
    fflush(stdout);
}

void bench_print_epoch_mean(double seconds, bool several, int64_t steps) {
    printf("epoch time %.3f s (%s), %.1f steps/s\n", seconds, several ? "mean of the epochs after the first" : "one epoch",
           (double)steps / seconds);
}
