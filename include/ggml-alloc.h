/*
 * ggml-alloc.h - placing tensors in backend buffers.
 *
 * A tensor allocator (tallocr) hands out consecutive, aligned slices of one
 * buffer.  A graph allocator (gallocr) plans a whole graph: it places each
 * node's result by liveness, so that memory of tensors no longer needed is
 * reused, lets in-place-capable operators overwrite their input, and never
 * reuses the memory of inputs, outputs, parameters or views' sources while
 * they are alive.
 */
#ifndef GGML_ALLOC_H
#define GGML_ALLOC_H

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggml_backend_buffer_type *ggml_backend_buffer_type_t;
typedef struct ggml_backend_buffer *ggml_backend_buffer_t;
typedef struct ggml_backend *ggml_backend_t;

/* Linear allocator over one buffer. */
struct ggml_tallocr {
    ggml_backend_buffer_t buffer;
    void  *base;
    size_t alignment;
    size_t offset;
};

/* Start allocating at the beginning of buffer. */
GGML_API struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer);
/* Place tensor at the next aligned offset; GGML_STATUS_ALLOC_FAILED when it does not fit. */
GGML_API enum ggml_status ggml_tallocr_alloc(struct ggml_tallocr *talloc, struct ggml_tensor *tensor);

typedef struct ggml_gallocr *ggml_gallocr_t;

/* A graph allocator for one buffer type, or one per backend of a multi-backend graph. */
GGML_API ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft);
GGML_API ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t *bufts, int n_bufs);
GGML_API void           ggml_gallocr_free(ggml_gallocr_t galloc);

/* Size the buffers for the largest graph to come (optional: alloc_graph reserves on demand).
 * node_buffer_ids/leaf_buffer_ids pick a buffer per node/leaf when there are several. */
GGML_API bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph *graph);
GGML_API bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph *graph,
                                     const int *node_buffer_ids, const int *leaf_buffer_ids);

/* The bytes per buffer (sizes[n_bufs]) that ggml_gallocr_reserve_n would need for graph,
 * without allocating; zeros on failure. */
GGML_API void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph *graph, const int *node_buffer_ids,
                                          const int *leaf_buffer_ids, size_t *sizes);

/* Give every unallocated tensor of the graph its place; false on failure (out of memory). */
GGML_API bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph *graph);

/* Bytes of buffer buffer_id (the planned peak memory). */
GGML_API size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);

/* Allocate all tensors of a no_alloc context in one new buffer of the given type
 * (or of the backend's default type); NULL when there is nothing to allocate or on failure. */
/* The bytes ggml_backend_alloc_ctx_tensors_from_buft would allocate (0: nothing to allocate). */
GGML_API size_t ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context *ctx, ggml_backend_buffer_type_t buft);
GGML_API struct ggml_backend_buffer *ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context *ctx, ggml_backend_buffer_type_t buft);
GGML_API struct ggml_backend_buffer *ggml_backend_alloc_ctx_tensors(struct ggml_context *ctx, ggml_backend_t backend);

#ifdef __cplusplus
}
#endif

#endif /* GGML_ALLOC_H */
