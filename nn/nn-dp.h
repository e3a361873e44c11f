/*
 * nn-dp.h - what the files of data-parallel training share (nn/dp-*.c).
 */
#ifndef GGMLC_NN_DP_H
#define GGMLC_NN_DP_H

#include "ggmlc-dp.h"
#include "nn-impl.h"

/* The all-reduce hook of one replica: a worker thread reducing gradient buckets over comm. */
struct dp_hook;
GGMLC_HIDDEN struct dp_hook *ggmlc__dp_hook_new(ggmlc_model *m, ggmlc_comm *comm,
                                                size_t bucket_bytes);
GGMLC_HIDDEN void ggmlc__dp_hook_free(struct dp_hook *h);
/* One training step of the replica on count samples of d (order: their indices): its gradients,
 * scaled by scale (its share of the global batch), summed over all replicas before the update. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__dp_hook_step(struct dp_hook *h, const struct nn_data *d,
                                                   int64_t count, const int64_t *order, float scale,
                                                   const float *class_weights,
                                                   struct pass_stats *st);
/* Microseconds so far that the worker spent in all-reduce calls, and that the replica's steps
 * spent in the hook (copies, scaling, waiting for the sums after the backward pass). */
GGMLC_HIDDEN void ggmlc__dp_hook_times(struct dp_hook *h, double *reduce_us, double *hook_us);

#endif /* GGMLC_NN_DP_H */
