/*
 * backward.h - shared by backward.c (graph expansion) and backward-rules.c
 * (the gradient of each operator).
 */
#ifndef GGMLC_BACKWARD_H
#define GGMLC_BACKWARD_H

#include "ggml-impl.h"

/* State of one backward expansion. */
struct bw_state {
    struct ggml_context *ctx;
    struct ggml_cgraph  *graph;
    bool *needed; /* per hash slot of graph: a gradient must flow into this tensor */
};

/* Whether a gradient must flow into t. */
GGMLC_HIDDEN bool ggmlc__bw_needs_grad(const struct bw_state *s, const struct ggml_tensor *t);

/* Add contribution to the gradient of src (reducing broadcast dimensions and
 * reshaping to src's shape as needed). Ignored when src needs no gradient. */
GGMLC_HIDDEN void ggmlc__bw_add_grad(struct bw_state *s, struct ggml_tensor *src, struct ggml_tensor *contribution);

/* The gradient src has gathered so far, for a rule to replace by a function of it, when that
 * is allowed: it exists, is not a parameter's accumulator (those are added in place) and is a
 * contiguous F32 tensor of src's shape.  NULL otherwise (use ggmlc__bw_add_grad). */
GGMLC_HIDDEN struct ggml_tensor **ggmlc__bw_open_grad(struct bw_state *s, struct ggml_tensor *src);

/* Propagate dy, the gradient of node, into node's sources; false when the
 * operator has no backward rule (the caller reports it once). */
GGMLC_HIDDEN bool ggmlc__bw_apply_rule(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy);

#endif /* GGMLC_BACKWARD_H */
