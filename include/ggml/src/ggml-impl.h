/*
 * ggml/src/ggml-impl.h - the part of ggml's private ggml-impl.h that clients use, installed
 * at the path they include it by.
 *
 * stable-diffusion.cpp includes "ggml/src/ggml-impl.h" (the path inside ggml's source tree)
 * to read a graph's leafs (gf->n_leafs, gf->leafs) and to build a view of a range of a
 * graph's nodes with an aggregate initializer in ggml's member order.  ggmlc installs this
 * file as $(includedir)/ggmlc/ggml/src/ggml-impl.h, so that include resolves through the
 * include directory of the CMake package and pkg-config.  It holds only those layouts:
 * struct ggml_cgraph (ggml's members in ggml's order, then ggmlc's own) and what its
 * members need.  Everything else of ggml's ggml-impl.h (its logging macros, hash and bitset
 * helpers, fp16 tables, op-parameter accessors) is internal and not provided; see
 * docs/compatibility.md.
 */
#ifndef GGMLC_GGML_SRC_IMPL_H
#define GGMLC_GGML_SRC_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The order in which a graph's nodes are visited when it is built (ggml's values). */
enum ggml_cgraph_eval_order {
    GGML_CGRAPH_EVAL_ORDER_LEFT_TO_RIGHT = 0,
    GGML_CGRAPH_EVAL_ORDER_RIGHT_TO_LEFT,
    GGML_CGRAPH_EVAL_ORDER_COUNT
};

/* One bit per slot of a hash set (32 slots a word). */
typedef uint32_t ggml_bitset_t;

/* A graph's set of visited tensors: open addressing over `size` slots; keys[i] is defined
 * where bit i of `used` is set. */
struct ggml_hash_set {
    size_t size;
    ggml_bitset_t *used;
    struct ggml_tensor **keys;
};

/* A computation graph.  A view of nodes [i0, i1) of graph g, as clients build one:
 *   { 0, i1 - i0, 0, g->nodes + i0, NULL, NULL, NULL, g->use_counts, g->visited_hash_set,
 *     g->order, 0 }  (no leafs, no gradients; `incomplete` is then false). */
struct ggml_cgraph {
    int size;    /* capacity of nodes and leafs */
    int n_nodes;
    int n_leafs;
    struct ggml_tensor **nodes;     /* computed tensors, in dependency order */
    struct ggml_tensor **grads;     /* per hash slot: gradient of that tensor (NULL without grads) */
    struct ggml_tensor **grad_accs; /* per hash slot: gradient accumulator */
    struct ggml_tensor **leafs;     /* constants and inputs */
    int32_t *use_counts;            /* per hash slot: number of consumers in the graph */
    struct ggml_hash_set visited_hash_set;
    enum ggml_cgraph_eval_order order; /* ggmlc builds left to right only */
    uint64_t uid;                      /* 0: none; graphs with equal non-zero uids are the same */
    /* ggmlc's own, after ggml's: */
    bool incomplete; /* a node was refused (graph full, NULL node): it must not compute */
};

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_GGML_SRC_IMPL_H */
