/*
 * sched-impl.h - the multi-backend scheduler's state, shared by sched.c
 * (public API, allocation, computation) and sched-plan.c (assigning nodes to
 * backends and cutting the graph into splits).
 *
 * The plan of a graph:
 *  - every node gets a backend (assign[]) by ggml's rules (sched-plan.c): where its
 *    memory, its weights, its being an input or its neighbours put it; views get the
 *    backend of the tensor they view but never cut a split;
 *  - the nodes are cut into splits, one per run of nodes on one backend;
 *  - a source that the split's backend cannot read (it lives in a buffer that
 *    backend does not support) is copied into that backend's compute buffer
 *    at the start of the split (an input); the node reads the copy;
 *  - a pre-allocated node that must run on a backend unable to use its
 *    buffer is computed into a clone in that backend's compute buffer and
 *    copied back after the split (so that the caller's tensor has the result).
 * Nodes read copies and clones through rewires: src pointers swapped in
 * only while the allocator plans and while the split computes, so that the
 * caller's graph is left as it was.
 *
 * The internal graph (`graph`) lists, per split, its input copies, then its
 * nodes (clones in place of the cloned ones), then the cloned in-place nodes
 * themselves, uncomputed, so that the memory they write stays alive; the
 * graph allocator places it with one buffer per backend.
 */
#ifndef GGMLC_SCHED_IMPL_H
#define GGMLC_SCHED_IMPL_H

#include "backend-impl.h"
#include "graph-alloc-impl.h"

#define SCHED_MAX_BACKENDS 16

struct sched_input {
    struct ggml_tensor *src;  /* what the split reads */
    struct ggml_tensor *copy; /* its copy in the split's backend */
};

struct sched_clone {
    struct ggml_tensor *orig;  /* the caller's tensor */
    struct ggml_tensor *clone; /* computed in the split's backend instead */
};

struct ggmlc__sched_rewire {
    struct ggml_tensor *node; /* the caller's node, or a clone */
    int slot;
    struct ggml_tensor *orig; /* the source the caller gave */
    int ref;                  /* >= 0: inputs[ref].copy; < 0: clones[-ref-1].clone */
};

struct sched_split {
    int backend_id;
    int i_start, i_end;   /* its nodes in the caller's graph */
    int in_start, in_end; /* inputs[] copied before it runs */
    int cl_start, cl_end; /* clones[] made for it */
    int rw_start, rw_end; /* rewires[] of its nodes */
    int g_start, g_end;   /* its nodes in the internal graph */
};

/* What a plan depends on in one tensor besides its address: a graph rebuilt after a reset
 * in the same memory (llama.cpp's decode loop) keeps its plan when all of these are equal. */
struct sched_props {
    int32_t op, type, flags;
    int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)];
    int64_t ne[GGML_MAX_DIMS];
    size_t nb[GGML_MAX_DIMS];
    size_t view_offs;
    const struct ggml_tensor *view_src;
    const void *data;
    const struct ggml_backend_buffer *buffer;
};

/* The phases of a graph's computation GGMLC_DEBUG=sched-time times. */
enum sched_time_phase {
    SCHED_TIME_ALLOC,   /* plan check (or planning) and allocation */
    SCHED_TIME_CHECKS,  /* the graph complete, its buffers alive */
    SCHED_TIME_INPUTS,  /* copies of the splits' inputs (and clones' prefills) */
    SCHED_TIME_COMPUTE, /* the backends' graph_compute_async (checks, recording, submits) */
    SCHED_TIME_SYNC,    /* waiting for each split's backend */
    SCHED_TIME_BACK,    /* clones copied back */
    SCHED_TIME_COUNT
};

/* A growable array of T: items, count, capacity. */
#define SCHED_ARRAY(T, name) T *name; int n_##name, cap_##name

struct ggml_backend_sched {
    int n_backends;
    ggml_backend_t backends[SCHED_MAX_BACKENDS];
    ggml_backend_buffer_type_t bufts[SCHED_MAX_BACKENDS];
    ggml_gallocr_t galloc;
    bool op_offload;
    /* the plan put a node on a backend that does not compute it (none does): the splits then
     * keep the backends' own check, which reports the node */
    bool unagreed;
    bool debug; /* GGMLC_DEBUG=sched */

    /* nodes the caller pinned (set_tensor_backend) */
    SCHED_ARRAY(struct ggml_tensor *, pinned);
    int *pinned_ids;

    /* per hash slot of the planned graph's tensors */
    struct ggml_hash_set hash;
    int *assign;    /* backend id, -1 unset */
    int *split_of;  /* the split computing this node, -1 for leafs */
    int *input_of;    /* index in inputs[] of this tensor's copy for split input_split[] */
    int *input_split;
    int *clone_of;    /* index in clones[] of this node's clone, -1 if none */
    int *cause;       /* why the node has its backend (enum sched_cause in sched-plan.c) */

    /* the plan */
    SCHED_ARRAY(struct sched_split, splits);
    SCHED_ARRAY(struct sched_input, inputs);
    SCHED_ARRAY(struct sched_clone, clones);
    SCHED_ARRAY(struct ggmlc__sched_rewire, rewires);
    struct ggml_context *ctx; /* copies, clones and the internal graph */
    struct ggml_cgraph *graph;
    int *node_ids, *leaf_ids;

    /* plan reuse: the nodes and sources of the planned graph */
    struct ggml_tensor **key;
    size_t key_len;
    bool planned, allocated;
    /* after a reset the plan is kept, stale: a graph at the same addresses reuses it (and the
     * allocator's placement) only when its tensors' props[] (nodes, sources, leafs) are equal */
    bool stale;
    bool replanned; /* the last plan_graph planned anew (the allocator must too) */
    struct sched_props *props;
    size_t n_props, cap_props;

    ggml_backend_sched_eval_callback eval_cb;
    void *eval_cb_data;

    /* GGMLC_DEBUG=sched-time: host time per phase of each graph_compute, summed over
     * SCHED_TIME_EVERY graphs and then logged as means (sched.c) */
    bool time_debug;
    int64_t time_ns[SCHED_TIME_COUNT];
    int time_graphs, time_splits, time_copies;
};

/* Slot of t in the planning hash (the hash is sized for the graph). */
GGMLC_HIDDEN size_t ggmlc__sched_slot(ggml_backend_sched_t sched, const struct ggml_tensor *t);
/* Assign backends, cut splits, and build the internal graph; false on error. */
GGMLC_HIDDEN bool ggmlc__sched_plan(ggml_backend_sched_t sched, struct ggml_cgraph *graph);
/* Swap the copies/clones in for rewires [first, last), or swap the originals back. */
GGMLC_HIDDEN void ggmlc__sched_rewire(ggml_backend_sched_t sched, int first, int last, bool apply);

#endif /* GGMLC_SCHED_IMPL_H */
