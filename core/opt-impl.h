/* opt-impl.h - shared by the files implementing ggml-opt.h. */
#ifndef GGMLC_OPT_IMPL_H
#define GGMLC_OPT_IMPL_H

#include "ggml-impl.h"
#include "ggml-opt.h"
#include "optimizer.h"

/* Nodes of each of a context's graphs (forward, gradients, optimizer step). */
#define OPT_GRAPH_SIZE (16 * GGML_DEFAULT_GRAPH_SIZE)

/* The optimization context's random generator (seeded alike in every context). */
GGMLC_HIDDEN struct ggmlc_rng *ggmlc__opt_rng(ggml_opt_context_t opt_ctx);

/* ------------------------------------------------ datasets (opt-dataset.c) */

/* How a dataset's datapoints are cut into shards, for gathering its batches on a device. */
struct ggmlc_opt_shards {
    int64_t n;                 /* whole shards */
    size_t nb_data, nb_labels; /* bytes of one shard of data, of labels (0: no labels) */
    const int64_t *order;      /* the shard order (ggml_opt_dataset_shuffle), n entries */
};
GGMLC_HIDDEN struct ggmlc_opt_shards ggmlc__opt_dataset_shards(ggml_opt_dataset_t dataset);

/* The number of whole shards in nb_data_batch bytes of data (and nb_labels_batch bytes of
 * labels, unless labels are not wanted: SIZE_MAX), or -1 (error set, func named) when the
 * batch is not made of whole shards or batch ibatch of that size lies past the last shard.
 * Like ggml, only byte sizes count, not the batch tensors' shapes. */
GGMLC_HIDDEN int64_t ggmlc__opt_dataset_batch_shards(ggml_opt_dataset_t dataset, size_t nb_data_batch,
                                                     size_t nb_labels_batch, int64_t ibatch, const char *func);

/* ------------------------------- batches gathered on the device (opt-gather.c) */

struct opt_gather;

/* What the gathering needs of an optimization context. */
struct opt_gather_target {
    ggml_backend_t backend;            /* the scheduler's first backend: the copy goes there */
    struct ggml_tensor *inputs, *labels; /* the batch tensors (labels NULL without labels) */
};

/* The copy of dataset's whole shards in target's backend and the nodes that gather a batch from
 * it into the inputs and labels, which then live there too (target's labels must have no place
 * yet); NULL (no error left) where the batches should go up from the host:
 * GGMLC_OPT_DEVICE_DATA=0, the inputs in host memory (unless GGMLC_OPT_DEVICE_DATA=1), types
 * other than F32, a copy over a quarter of the device's free memory, or no memory for it. */
GGMLC_HIDDEN struct opt_gather *ggmlc__opt_gather_new(const struct opt_gather_target *target, ggml_opt_dataset_t dataset);
/* Whether g (NULL: no) serves target and dataset's layout, and the route still applies. */
GGMLC_HIDDEN bool ggmlc__opt_gather_fits(const struct opt_gather *g, const struct opt_gather_target *target,
                                         ggml_opt_dataset_t dataset);
/* Copy the dataset's shards into g's copy (an epoch's start: the caller may have changed them). */
GGMLC_HIDDEN bool ggmlc__opt_gather_upload(struct opt_gather *g, ggml_opt_dataset_t dataset);
/* Write batch ibatch's shard numbers (from the dataset's order) for the next gather. */
GGMLC_HIDDEN void ggmlc__opt_gather_batch(struct opt_gather *g, ggml_opt_dataset_t dataset, int64_t ibatch);
/* graph with the batch's gathering first (made once per graph), or NULL (error set). */
GGMLC_HIDDEN struct ggml_cgraph *ggmlc__opt_gather_graph(struct opt_gather *g, struct ggml_cgraph *graph);
/* Free g; the labels it housed lose their place. */
GGMLC_HIDDEN void ggmlc__opt_gather_free(struct opt_gather *g);

/* ggml_opt_epoch's switch between the two routes (opt.c): while on, ggml_opt_alloc allocates
 * the step graphs with the gathering first; false when the batches go up from the host.
 * copied: the device holds this dataset, unchanged, from the last epoch (ggml_opt_fit's later
 * epochs): it is not copied again. */
GGMLC_HIDDEN bool ggmlc__opt_gather_begin(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, bool copied);
GGMLC_HIDDEN void ggmlc__opt_gather_end(ggml_opt_context_t opt_ctx);
GGMLC_HIDDEN void ggmlc__opt_gather_step(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, int64_t ibatch);

#endif /* GGMLC_OPT_IMPL_H */
