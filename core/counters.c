/*
 * counters.c - process-wide counters of the work that costs a trip between the
 * host and a device (ggmlc_counters_get in ggmlc.h): transfers the core sees in
 * ggml_backend_tensor_set/get on buffers that are not host memory, nodes it
 * computes on the CPU for another backend, and what plugins report themselves
 * (submits, waits) through ggmlc_counter_add.  Relaxed atomics: the counts are
 * statistics, read after the work they count has finished.
 */
#include <stdatomic.h>

#include "ggml-impl.h"
#include "ggmlc-plugin.h"

static _Atomic uint64_t counters[GGMLC_COUNTER_COUNT];

void ggmlc_counter_add(enum ggmlc_counter which, uint64_t n) {
    if ((unsigned)which < GGMLC_COUNTER_COUNT)
        atomic_fetch_add_explicit(&counters[which], n, memory_order_relaxed);
}

static uint64_t counter(enum ggmlc_counter which) {
    return atomic_load_explicit(&counters[which], memory_order_relaxed);
}

void ggmlc_counters_get(struct ggmlc_counters *out) {
    if (!out) return;
    *out = (struct ggmlc_counters){
        .submits = counter(GGMLC_COUNTER_SUBMITS),
        .waits = counter(GGMLC_COUNTER_WAITS),
        .writes_to_device = counter(GGMLC_COUNTER_WRITES_TO_DEVICE),
        .bytes_to_device = counter(GGMLC_COUNTER_BYTES_TO_DEVICE),
        .reads_from_device = counter(GGMLC_COUNTER_READS_FROM_DEVICE),
        .bytes_from_device = counter(GGMLC_COUNTER_BYTES_FROM_DEVICE),
        .fallback_nodes = counter(GGMLC_COUNTER_FALLBACK_NODES),
    };
}

void ggmlc_counters_reset(void) {
    for (int i = 0; i < GGMLC_COUNTER_COUNT; i++)
        atomic_store_explicit(&counters[i], 0, memory_order_relaxed);
}
