/*
 * graph-alloc-impl.h - what the scheduler needs from the graph allocator beyond
 * ggml-alloc.h.
 */
#ifndef GGMLC_GRAPH_ALLOC_IMPL_H
#define GGMLC_GRAPH_ALLOC_IMPL_H

#include "ggml-impl.h"

/* Plan and place graph with an explicit buffer id per node and leaf (no prior
 * reserve needed); buffers grow when the graph needs more memory. */
GGMLC_HIDDEN bool ggmlc__gallocr_alloc_graph_n(ggml_gallocr_t galloc, struct ggml_cgraph *graph, const int *node_ids,
                                              const int *leaf_ids);

/* True when buffer is one of the allocator's compute buffers. */
/* Place graph's tensors where the last ggmlc__gallocr_alloc_graph_n placed them, without planning:
 * for a caller that knows graph is that same graph object with the same tensors (addresses,
 * shapes, flags, ops: the scheduler's kept plan).  False when the allocator cannot (its last
 * plan was of another graph, a reservation, or failed); then plan with alloc_graph_n. */
GGMLC_HIDDEN bool ggmlc__gallocr_alloc_again(ggml_gallocr_t galloc, struct ggml_cgraph *graph);

GGMLC_HIDDEN bool ggmlc__gallocr_owns_buffer(ggml_gallocr_t galloc, ggml_backend_buffer_t buffer);

#endif /* GGMLC_GRAPH_ALLOC_IMPL_H */
