/*
 * ggmlc-internal.h - the core's internal API that nn/ (the model API) and the eager autograd
 * engine may use: the one header those parts of libggmlc include beside the public headers.
 * Everything else in core/ is private to core/.  Nothing here is installed or exported.
 *
 *   - optimizer.h: random generator, optimizer updates, losses, gradient clipping;
 *   - file-replace.h: replacing a file atomically (model files, plots);
 *   - reading a GGUF file with a progress bar (model files);
 *   - the allocation record below.
 */
#ifndef GGMLC_INTERNAL_H
#define GGMLC_INTERNAL_H

#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc.h"
#include "gguf.h"
#include "file-replace.h"
#include "hidden.h"
#include "optimizer.h"

/*
 * Graphs kept and computed again after a scheduler allocated another graph (ggml-opt's
 * graphs, the nn engine's per-batch-shape cache) must lose the places that allocation gave
 * their tensors: the next one may reuse or free that memory.  Record the tensors a
 * scheduler allocation placed in compute buffers right after it, forget them (their
 * data and buffer cleared, views first) before the next allocation.
 */
struct ggmlc_alloc_record {
    struct ggml_tensor **tensors;
    int n, cap;
};
/* Room for every tensor of graph (false, with an error, when memory is short): call before
 * allocating the graph, so that recording it afterwards cannot fail. */
GGMLC_HIDDEN bool ggmlc__alloc_record_reserve(struct ggmlc_alloc_record *r,
                                             const struct ggml_cgraph *graph);
GGMLC_HIDDEN void ggmlc__alloc_record_take(struct ggmlc_alloc_record *r, struct ggml_cgraph *graph);
GGMLC_HIDDEN void ggmlc__alloc_record_forget(struct ggmlc_alloc_record *r);
GGMLC_HIDDEN void ggmlc__alloc_record_free(struct ggmlc_alloc_record *r);

/* gguf_init_from_file that shows label's progress bar on a terminal while large tensor data
 * (16 MiB or more) are read (ggmlc_model_load); quiet on a pipe. */
GGMLC_HIDDEN struct gguf_context *ggmlc__gguf_init_from_file_progress(const char *fname,
                                                                     struct gguf_init_params params,
                                                                     const char *label);

#endif /* GGMLC_INTERNAL_H */
