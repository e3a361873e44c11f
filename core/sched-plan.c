/*
 * sched-plan.c - the scheduler's planning: which backend computes each
 * node, where the graph is cut into splits, which tensors are copied
 * between backends, and the internal graph the allocator places.
 * See sched-impl.h for the shape of a plan.
 */
#include <limits.h>
#include <stdlib.h>

#include "sched-impl.h"

/* ------------------------------------------------------------ helpers */

size_t ggmlc__sched_slot(ggml_backend_sched_t sched, const struct ggml_tensor *t) {
    bool fresh;
    const size_t slot = ggmlc__hash_claim(&sched->hash, (struct ggml_tensor *)t, &fresh);
    if (slot == GGML_HASHSET_FULL) abort(); /* sized for every tensor of the graph: a bug */
    if (fresh) { /* a tensor new to this plan: unset (reset_state clears nothing per slot) */
        sched->assign[slot] = sched->split_of[slot] = -1;
        sched->cause[slot] = 0;
        sched->input_split[slot] = sched->clone_of[slot] = -1;
    }
    return slot;
}

static bool grow(void **items, int *cap, int need, size_t item_size) {
    if (need <= *cap) return true;
    const int cap2 = need > 2 * *cap ? need : 2 * *cap;
    void *p = realloc(*items, (size_t)cap2 * item_size);
    if (!p) return false;
    *items = p;
    *cap = cap2;
    return true;
}
#define PUSH(sched, name, value)                                                                           \
    (grow((void **)&(sched)->name, &(sched)->cap_##name, (sched)->n_##name + 1, sizeof *(sched)->name) \
         ? ((sched)->name[(sched)->n_##name++] = (value), true)                                          \
         : false)

static const struct ggml_tensor *storage_of(const struct ggml_tensor *t) { return t->view_src ? t->view_src : t; }

/* Allocated by the caller (not by this scheduler's allocator). */
static bool preallocated(ggml_backend_sched_t sched, const struct ggml_tensor *t) {
    const struct ggml_tensor *st = storage_of(t);
    return st->data && !(st->buffer && ggmlc__gallocr_owns_buffer(sched->galloc, st->buffer));
}

/* The buffer type t's bytes live (or will live) in; NULL when not known yet. */
static ggml_backend_buffer_type_t storage_buft(ggml_backend_sched_t sched, const struct ggml_tensor *t) {
    const struct ggml_tensor *st = storage_of(t);
    if (preallocated(sched, st)) return st->buffer ? st->buffer->buft : ggml_backend_cpu_buffer_type();
    const int id = sched->assign[ggmlc__sched_slot(sched, st)];
    return id >= 0 ? sched->bufts[id] : NULL;
}

static bool can_read(ggml_backend_sched_t sched, int backend_id, const struct ggml_tensor *t) {
    ggml_backend_buffer_type_t buft = storage_buft(sched, t);
    return buft && ggml_backend_supports_buft(sched->backends[backend_id], buft);
}

/* Why a device does not compute node: the op vtable lacks it or supports_op refused; NULL if it computes it. */
static const char *refusal(ggml_backend_t backend, const struct ggml_tensor *node) {
    const struct ggml_backend_device *dev = backend->device;
    if (!dev->iface.ops || (int)node->op >= dev->iface.n_ops || !dev->iface.ops[node->op]) return "op not in the vtable";
    if (dev->iface.supports_op && !dev->iface.supports_op((ggml_backend_dev_t)dev, node)) return "supports_op refused";
    return NULL;
}

static bool supports(ggml_backend_sched_t sched, int b, const struct ggml_tensor *node) {
    return ggml_backend_supports_op(sched->backends[b], node);
}

/* ---------------------------------------------------------- assignment */
/*
 * Which backend computes each node follows ggml's scheduler, in passes:
 *  1. nodes with a place of their own: pinned ones (set_tensor_backend); ones whose memory
 *     the caller allocated (their buffer's backend); graph inputs (the CPU, where the caller
 *     writes them); ones reading a weight (the weight's backend, unless op_offload lets a
 *     preferred backend take over an op whose weight is in host memory);
 *  2. the others take a neighbour's backend when it computes them: first the runs of the
 *     backends other than the CPU grow down the graph and then up, then every backend's
 *     runs do, so that the CPU gets only what lies between nodes fixed to it;
 *  3. a node no neighbour could take goes to the backend that reads most of its sources
 *     (in a graph that fixes no node at all: the first backend that computes it), and a
 *     placed node moves to a preferred backend of the same buffer type that reads all its
 *     sources;
 *  4. views go with the tensor they view, and the sources our allocator places with their
 *     first consumer (graph inputs on the CPU).
 * Views compute nothing: passes 1 to 3 skip them, and they never cut a split.
 */

/* Why a node went where it did (GGMLC_DEBUG=sched prints it). */
enum sched_cause {
    CAUSE_NONE,
    CAUSE_PINNED,
    CAUSE_MEMORY,
    CAUSE_INPUT,
    CAUSE_WEIGHT,
    CAUSE_OFFLOAD,
    CAUSE_GPU_DOWN,
    CAUSE_GPU_UP,
    CAUSE_ANY_DOWN,
    CAUSE_ANY_UP,
    CAUSE_MOST_READ,
    CAUSE_FIRST,
    CAUSE_UPGRADE,
    CAUSE_VIEWED,
};

static const char *const cause_text[] = {
    [CAUSE_NONE] = "?",
    [CAUSE_PINNED] = "pinned there (ggml_backend_sched_set_tensor_backend)",
    [CAUSE_MEMORY] = "the caller allocated its memory (or the memory it writes into)",
    [CAUSE_INPUT] = "a graph input, written by the caller in host memory",
    [CAUSE_WEIGHT] = "it reads a weight living there",
    [CAUSE_OFFLOAD] = "its weight is in host memory and that backend asked for the op (op_offload)",
    [CAUSE_GPU_DOWN] = "it follows a node of that backend",
    [CAUSE_GPU_UP] = "it precedes a node of that backend",
    [CAUSE_ANY_DOWN] = "it follows a node of that backend (the preferred ones did not take it)",
    [CAUSE_ANY_UP] = "it precedes a node of that backend (the preferred ones did not take it)",
    [CAUSE_MOST_READ] = "no neighbour's backend computes it: the one that reads most of its sources",
    [CAUSE_FIRST] = "the graph fixes no node: the first backend that computes it",
    [CAUSE_UPGRADE] = "moved to a preferred backend of the same buffer type that reads all its sources",
    [CAUSE_VIEWED] = "a view: with the tensor it views",
};

static int backend_of(ggml_backend_sched_t sched, const struct ggml_tensor *t) {
    return sched->assign[ggmlc__sched_slot(sched, t)];
}

static void place(ggml_backend_sched_t sched, const struct ggml_tensor *t, int id, enum sched_cause why) {
    const size_t slot = ggmlc__sched_slot(sched, t);
    sched->assign[slot] = id;
    sched->cause[slot] = (int)why;
}

static int pinned_backend(ggml_backend_sched_t sched, const struct ggml_tensor *node) {
    for (int i = 0; i < sched->n_pinned; i++) {
        if (sched->pinned[i] == node) return sched->pinned_ids[i];
    }
    return -1;
}

/* A weight: a source the caller placed in a buffer marked for weights, or in device memory
 * (copying it away would cost more than running the node where it is). Host tensors of
 * other buffers (inputs, say) do not pin their consumers; they are copied where needed. */
static bool is_weight(ggml_backend_sched_t sched, const struct ggml_tensor *src) {
    const struct ggml_tensor *st = storage_of(src);
    if (!preallocated(sched, st) || !st->buffer) return false;
    return ggml_backend_buffer_get_usage(st->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS || !ggml_backend_buffer_is_host(st->buffer);
}

/* The weight that places node: its first source in weight memory. None for ROPE and
 * FLASH_ATTN_EXT, whose small weights (frequency factors, sinks) say nothing about where
 * the big work should run. */
static const struct ggml_tensor *placing_weight(ggml_backend_sched_t sched, const struct ggml_tensor *node) {
    if (node->op == GGML_OP_ROPE || node->op == GGML_OP_FLASH_ATTN_EXT) return NULL;
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        if (node->src[s] && is_weight(sched, node->src[s])) return node->src[s];
    }
    return NULL;
}

/* The first backend that computes node and can use the caller's buffer holding t; -1 if
 * t's memory is not the caller's or no backend does. */
static int backend_of_memory(ggml_backend_sched_t sched, const struct ggml_tensor *t, const struct ggml_tensor *node) {
    if (!preallocated(sched, t)) return -1;
    ggml_backend_buffer_type_t buft = storage_buft(sched, t);
    for (int b = 0; b < sched->n_backends; b++) {
        if (ggml_backend_supports_buft(sched->backends[b], buft) && supports(sched, b, node)) return b;
    }
    return -1;
}

/* Pass 1 for one node: where its memory, its being an input or its weight puts it; -1 if nowhere. */
static int own_place(ggml_backend_sched_t sched, const struct ggml_tensor *node, enum sched_cause *why) {
    const int cpu = sched->n_backends - 1;
    int b = backend_of_memory(sched, node, node);
    *why = CAUSE_MEMORY;
    if (b >= 0) return b; /* otherwise it is computed aside and copied back (plan_split) */
    *why = CAUSE_INPUT;
    if ((node->flags & GGML_TENSOR_FLAG_INPUT) && supports(sched, cpu, node)) return cpu;
    const struct ggml_tensor *w = placing_weight(sched, node);
    if (!w) return -1;
    b = backend_of_memory(sched, w, node);
    *why = CAUSE_WEIGHT;
    if (sched->op_offload && b == cpu && ggml_backend_buft_is_host(storage_buft(sched, w))) {
        for (int o = 0; o < cpu; o++) {
            if (supports(sched, o, node) && ggml_backend_offload_op(sched->backends[o], node)) {
                *why = CAUSE_OFFLOAD;
                return o;
            }
        }
    }
    return b;
}

/* Pass 1: pinned nodes, nodes with a place of their own, and the leafs in the caller's
 * memory or inputs.
 * True when some computing node got a place. */
static bool place_fixed(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    bool any = false;
    for (int i = 0; i < graph->n_leafs; i++) {
        const struct ggml_tensor *leaf = graph->leafs[i];
        const int b = backend_of_memory(sched, leaf, leaf);
        if (b >= 0) place(sched, leaf, b, CAUSE_MEMORY);
        else if ((leaf->flags & GGML_TENSOR_FLAG_INPUT) && !preallocated(sched, leaf))
            place(sched, leaf, sched->n_backends - 1, CAUSE_INPUT);
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor *node = graph->nodes[i];
        enum sched_cause why = CAUSE_PINNED;
        int id = pinned_backend(sched, node);
        if (id < 0 && !ggmlc_op_is_view(node->op)) id = own_place(sched, node, &why);
        if (id < 0) continue;
        place(sched, node, id, why);
        any = any || !ggmlc_op_is_view(node->op);
    }
    return any;
}

/* Pass 2, one sweep: unplaced nodes take the backend of the last placed node before them
 * (after them when !down) when it computes them; with preferred_only, runs of the CPU do
 * not spread. */
static void spread(ggml_backend_sched_t sched, struct ggml_cgraph *graph, bool preferred_only, bool down) {
    static const enum sched_cause causes[2][2] = {{CAUSE_ANY_UP, CAUSE_ANY_DOWN}, {CAUSE_GPU_UP, CAUSE_GPU_DOWN}};
    const int cpu = sched->n_backends - 1, n = graph->n_nodes;
    int cur = -1;
    for (int k = 0; k < n; k++) {
        const struct ggml_tensor *node = graph->nodes[down ? k : n - 1 - k];
        if (ggmlc_op_is_view(node->op)) continue;
        const int id = backend_of(sched, node);
        if (id >= 0) cur = preferred_only && id == cpu ? -1 : id;
        else if (cur >= 0 && supports(sched, cur, node)) place(sched, node, cur, causes[preferred_only][down]);
    }
}

/* The backend computing node that reads most of its (placed) sources where they are; -1 if none computes it. */
static int most_read(ggml_backend_sched_t sched, const struct ggml_tensor *node) {
    int best = -1, best_count = -1;
    for (int b = 0; b < sched->n_backends; b++) {
        if (!supports(sched, b, node)) continue;
        int count = 0;
        for (int s = 0; s < GGML_MAX_SRC; s++) count += node->src[s] && can_read(sched, b, node->src[s]);
        if (count > best_count) best = b, best_count = count;
    }
    return best;
}

static int first_computing(ggml_backend_sched_t sched, const struct ggml_tensor *node) {
    for (int b = 0; b < sched->n_backends; b++) {
        if (supports(sched, b, node)) return b;
    }
    return -1;
}

/* A preferred backend than id that uses the same buffer type, computes node and reads all its sources; -1 if none. */
static int upgrade(ggml_backend_sched_t sched, const struct ggml_tensor *node, int id) {
    for (int b = 0; b < id; b++) {
        if (sched->bufts[b] != sched->bufts[id] || !supports(sched, b, node)) continue;
        bool reads_all = true;
        for (int s = 0; s < GGML_MAX_SRC && reads_all; s++) reads_all = !node->src[s] || can_read(sched, b, node->src[s]);
        if (reads_all) return b;
    }
    return -1;
}

/* Pass 3: the nodes still unplaced, and upgrades of the placed (pinned ones stay). */
static void place_rest(ggml_backend_sched_t sched, struct ggml_cgraph *graph, bool any_fixed) {
    const int cpu = sched->n_backends - 1;
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor *node = graph->nodes[i];
        if (ggmlc_op_is_view(node->op)) continue;
        const size_t slot = ggmlc__sched_slot(sched, node);
        const int id = sched->assign[slot];
        if (id < 0) {
            const int b = any_fixed ? most_read(sched, node) : first_computing(sched, node);
            /* none computes it: the CPU's compute reports the op */
            place(sched, node, b >= 0 ? b : cpu, any_fixed ? CAUSE_MOST_READ : CAUSE_FIRST);
            sched->unagreed = sched->unagreed || b < 0;
        } else if (sched->cause[slot] != CAUSE_PINNED) {
            const int b = upgrade(sched, node, id);
            if (b >= 0) place(sched, node, b, CAUSE_UPGRADE);
        }
    }
}

/* The backend of the first computing node (views before it join its split). */
static int first_split_backend(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    for (int i = 0; i < graph->n_nodes; i++) {
        if (!ggmlc_op_is_view(graph->nodes[i]->op)) return backend_of(sched, graph->nodes[i]);
    }
    return sched->n_backends - 1;
}

/* Pass 4: views, and the sources the allocator places: inputs on the CPU (the caller
 * writes them), others with their first consumer (for a view: the split it lies in). */
static void place_views_and_sources(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    const int cpu = sched->n_backends - 1;
    int split_backend = first_split_backend(sched, graph);
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor *node = graph->nodes[i];
        const bool view = ggmlc_op_is_view(node->op);
        if (!view) split_backend = backend_of(sched, node);
        const int id = view ? split_backend : backend_of(sched, node);
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            const struct ggml_tensor *src = node->src[s];
            if (!src) continue;
            const struct ggml_tensor *st = storage_of(src);
            if (backend_of(sched, st) < 0) place(sched, st, (st->flags & GGML_TENSOR_FLAG_INPUT) ? cpu : id, CAUSE_NONE);
            if (backend_of(sched, src) < 0) place(sched, src, backend_of(sched, st), CAUSE_VIEWED);
        }
        if (view && backend_of(sched, node) < 0) {
            const int viewed = node->view_src ? backend_of(sched, node->view_src) : -1;
            place(sched, node, viewed >= 0 ? viewed : split_backend, CAUSE_VIEWED);
        }
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        if (backend_of(sched, graph->leafs[i]) < 0) place(sched, graph->leafs[i], cpu, CAUSE_NONE);
    }
}

/* GGMLC_DEBUG=sched: where node runs and why; on the CPU also why not on each preferred backend. */
static void explain(ggml_backend_sched_t sched, const struct ggml_tensor *node) {
    const size_t slot = ggmlc__sched_slot(sched, node);
    const int id = sched->assign[slot], cpu = sched->n_backends - 1;
    const enum sched_cause why = (enum sched_cause)sched->cause[slot];
    const struct ggml_tensor *w = why == CAUSE_WEIGHT || why == CAUSE_OFFLOAD ? placing_weight(sched, node) : NULL;
    const struct ggml_tensor *mem = why == CAUSE_MEMORY ? node : w;
    GGMLC_LOG_INFO("sched: node '%s' (%s) runs on %s: %s%s%s%s%s%s\n", node->name, ggml_op_desc(node),
                   ggml_backend_name(sched->backends[id]), cause_text[why], w ? " ('" : "", w ? w->name : "",
                   w ? "')" : "", mem ? ", in a buffer of type " : "",
                   mem ? ggml_backend_buft_name(storage_buft(sched, mem)) : "");
    for (int b = 0; id == cpu && b < cpu; b++) {
        const char *refused = refusal(sched->backends[b], node);
        if (refused)
            GGMLC_LOG_INFO("sched: node '%s' (%s) falls back to %s: %s: %s\n", node->name, ggml_op_desc(node),
                           ggml_backend_name(sched->backends[cpu]), ggml_backend_name(sched->backends[b]), refused);
    }
}

static void assign_nodes(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    const bool any_fixed = place_fixed(sched, graph);
    for (int preferred_only = 1; preferred_only >= 0; preferred_only--) {
        spread(sched, graph, preferred_only, true);
        spread(sched, graph, preferred_only, false);
    }
    place_rest(sched, graph, any_fixed);
    place_views_and_sources(sched, graph);
    for (int i = 0; sched->debug && sched->n_backends > 1 && i < graph->n_nodes; i++) {
        if (!ggmlc_op_is_view(graph->nodes[i]->op)) explain(sched, graph->nodes[i]);
    }
}

/* -------------------------------------------------------------- splits */

static bool cut_splits(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    sched->n_splits = 0;
    int id = first_split_backend(sched, graph);
    for (int i = 0; i < graph->n_nodes; i++) {
        /* a view computes nothing: it stays in the split it lies in */
        if (!ggmlc_op_is_view(graph->nodes[i]->op)) id = backend_of(sched, graph->nodes[i]);
        if (sched->n_splits == 0 || sched->splits[sched->n_splits - 1].backend_id != id) {
            if (sched->n_splits) sched->splits[sched->n_splits - 1].i_end = i;
            if (!PUSH(sched, splits, ((struct sched_split){.backend_id = id, .i_start = i}))) return false;
        }
        sched->split_of[ggmlc__sched_slot(sched, graph->nodes[i])] = sched->n_splits - 1;
    }
    if (sched->n_splits) sched->splits[sched->n_splits - 1].i_end = graph->n_nodes;
    return true;
}

/* The copy of src that split k reads (made once per split). */
static int input_for(ggml_backend_sched_t sched, int k, struct ggml_tensor *src) {
    const size_t slot = ggmlc__sched_slot(sched, src);
    if (sched->input_split[slot] == k) return sched->input_of[slot];
    if (!PUSH(sched, inputs, ((struct sched_input){.src = src}))) return INT_MIN;
    sched->input_split[slot] = k;
    return sched->input_of[slot] = sched->n_inputs - 1;
}

static int clone_in_split(ggml_backend_sched_t sched, int k, const struct ggml_tensor *t) {
    const size_t slot = ggmlc__sched_slot(sched, t);
    return sched->split_of[slot] == k && sched->clone_of[slot] >= 0 ? sched->clone_of[slot] : -1;
}

/* Decide the clones, inputs and rewires of split k. */
static bool plan_split(ggml_backend_sched_t sched, struct ggml_cgraph *graph, int k) {
    struct sched_split *sp = &sched->splits[k];
    const int b = sp->backend_id;
    sp->in_start = sched->n_inputs;
    sp->cl_start = sched->n_clones;
    sp->rw_start = sched->n_rewires;
    for (int i = sp->i_start; i < sp->i_end; i++) {
        struct ggml_tensor *node = graph->nodes[i];
        const bool is_view = ggmlc_op_is_view(node->op);
        const bool cloned = is_view ? node->view_src && clone_in_split(sched, k, node->view_src) >= 0 : !can_read(sched, b, node);
        if (cloned) {
            if (!PUSH(sched, clones, ((struct sched_clone){.orig = node}))) return false;
            sched->clone_of[ggmlc__sched_slot(sched, node)] = sched->n_clones - 1;
        }
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            struct ggml_tensor *src = node->src[s];
            if (!src) continue;
            int ref;
            const int c = clone_in_split(sched, k, src);
            if (c >= 0) {
                ref = -c - 1;
            } else if (is_view || can_read(sched, b, src)) {
                continue; /* a view only names its source; the readable needs nothing */
            } else {
                ref = input_for(sched, k, src);
                if (ref == INT_MIN) return false;
            }
            if (!PUSH(sched, rewires, ((struct ggmlc__sched_rewire){.node = node, .slot = s, .orig = src, .ref = ref}))) return false;
        }
    }
    sp->in_end = sched->n_inputs;
    sp->cl_end = sched->n_clones;
    sp->rw_end = sched->n_rewires;
    return true;
}

/* ------------------------------------------------- the internal graph */

static struct ggml_tensor *new_like(ggml_backend_sched_t sched, const struct ggml_tensor *t, const char *suffix) {
    struct ggml_tensor *r = ggml_new_tensor(sched->ctx, t->type, GGML_MAX_DIMS, t->ne);
    if (!r) return NULL;
    memcpy(r->nb, t->nb, sizeof r->nb);
    if (suffix) ggml_format_name(r, "%.40s#%s", t->name, suffix);
    else ggml_set_name(r, t->name);
    return r;
}

static struct ggml_tensor *replacement(ggml_backend_sched_t sched, int ref) {
    return ref >= 0 ? sched->inputs[ref].copy : sched->clones[-ref - 1].clone;
}

static bool make_tensors(ggml_backend_sched_t sched) {
    for (int k = 0; k < sched->n_splits; k++) {
        const struct sched_split *sp = &sched->splits[k];
        const char *where = ggml_backend_name(sched->backends[sp->backend_id]);
        for (int j = sp->in_start; j < sp->in_end; j++) {
            struct sched_input *in = &sched->inputs[j];
            if (!(in->copy = new_like(sched, in->src, where))) return false;
            in->copy->src[0] = in->src; /* the source must live until the copy is made */
        }
        for (int j = sp->cl_start; j < sp->cl_end; j++) {
            struct sched_clone *cl = &sched->clones[j];
            const struct ggml_tensor *o = cl->orig;
            if (!(cl->clone = new_like(sched, o, NULL))) return false; /* callbacks see the caller's name */
            cl->clone->op = o->op;
            memcpy(cl->clone->op_params, o->op_params, sizeof o->op_params);
            memcpy(cl->clone->src, o->src, sizeof o->src);
            if (ggmlc_op_is_view(o->op)) { /* a view of a clone */
                cl->clone->view_src = sched->clones[sched->clone_of[ggmlc__sched_slot(sched, o->view_src)]].clone;
                cl->clone->view_offs = o->view_offs;
            }
        }
    }
    /* rewires of clones are permanent: the clones are ours */
    int kept = 0;
    for (int k = 0; k < sched->n_splits; k++) {
        struct sched_split *sp = &sched->splits[k];
        const int start = kept;
        for (int j = sp->rw_start; j < sp->rw_end; j++) {
            struct ggmlc__sched_rewire rw = sched->rewires[j];
            const int c = sched->clone_of[ggmlc__sched_slot(sched, rw.node)];
            if (c >= 0 && sched->split_of[ggmlc__sched_slot(sched, rw.node)] == k) {
                sched->clones[c].clone->src[rw.slot] = replacement(sched, rw.ref);
            } else {
                sched->rewires[kept++] = rw;
            }
        }
        sp->rw_start = start;
        sp->rw_end = kept;
    }
    sched->n_rewires = kept;
    return true;
}

/* The split's backend may put its nodes in another order before they are placed (order_nodes). */
static void order_split(ggml_backend_sched_t sched, struct ggml_cgraph *g, const struct sched_split *sp) {
    ggml_backend_t backend = sched->backends[sp->backend_id];
    if (backend->iface.order_nodes && sp->g_end - sp->g_start > 1)
        backend->iface.order_nodes(backend, g->nodes + sp->g_start, sp->g_end - sp->g_start);
}

static bool build_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    const size_t n_nodes = (size_t)graph->n_nodes + (size_t)sched->n_inputs + (size_t)sched->n_clones;
    const size_t size = (n_nodes > (size_t)graph->n_leafs ? n_nodes : (size_t)graph->n_leafs) + 1;
    const size_t mem = (size_t)(sched->n_inputs + sched->n_clones + 1) * ggml_tensor_overhead() +
                       ggml_graph_overhead_custom(size, false);
    ggml_free(sched->ctx);
    sched->ctx = ggml_init((struct ggml_init_params){.mem_size = mem, .no_alloc = true});
    free(sched->node_ids);
    free(sched->leaf_ids);
    sched->node_ids = malloc(size * sizeof(int));
    sched->leaf_ids = malloc(size * sizeof(int));
    if (!sched->ctx || !sched->node_ids || !sched->leaf_ids || !make_tensors(sched)) return false;
    struct ggml_cgraph *g = sched->graph = ggml_new_graph_custom(sched->ctx, size, false);
    if (!g) return false;
    for (int k = 0; k < sched->n_splits; k++) {
        struct sched_split *sp = &sched->splits[k];
        for (int j = sp->in_start; j < sp->in_end; j++) {
            sched->node_ids[g->n_nodes] = sp->backend_id;
            g->nodes[g->n_nodes++] = sched->inputs[j].copy;
        }
        sp->g_start = g->n_nodes;
        for (int i = sp->i_start; i < sp->i_end; i++) {
            struct ggml_tensor *node = graph->nodes[i];
            const int c = sched->clone_of[ggmlc__sched_slot(sched, node)];
            sched->node_ids[g->n_nodes] = sp->backend_id;
            g->nodes[g->n_nodes++] = c >= 0 ? sched->clones[c].clone : node;
        }
        sp->g_end = g->n_nodes;
        order_split(sched, g, sp);
        /* a cloned in-place node stays in the plan, uncomputed: as a view it keeps the
         * memory it writes to (copied back after the split) alive for its consumers */
        for (int j = sp->cl_start; j < sp->cl_end; j++) {
            struct ggml_tensor *orig = sched->clones[j].orig;
            if (orig->view_src && !ggmlc_op_is_view(orig->op)) {
                sched->node_ids[g->n_nodes] = sp->backend_id;
                g->nodes[g->n_nodes++] = orig;
            }
        }
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        sched->leaf_ids[i] = sched->assign[ggmlc__sched_slot(sched, graph->leafs[i])];
        g->leafs[g->n_leafs++] = graph->leafs[i];
    }
    return true;
}

/* ------------------------------------------------------------ planning */

static bool reset_state(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    const size_t want = (size_t)graph->n_leafs + (size_t)graph->n_nodes * (GGML_MAX_SRC + 2);
    if (sched->hash.size < ggmlc__hash_size(want)) {
        ggmlc__hash_set_free(&sched->hash);
        sched->hash = ggmlc__hash_set_new(want);
        int **arrays[] = {&sched->assign,      &sched->split_of, &sched->input_of,
                          &sched->input_split, &sched->clone_of, &sched->cause};
        bool complete = sched->hash.keys != NULL;
        for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) {
            free(*arrays[a]);
            *arrays[a] = complete ? malloc(sched->hash.size * sizeof(int)) : NULL;
            complete = complete && *arrays[a];
        }
        if (!complete) { /* out of memory: leave nothing half-sized, the next plan allocates again */
            for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(*arrays[a]), *arrays[a] = NULL;
            ggmlc__hash_set_free(&sched->hash);
            memset(&sched->hash, 0, sizeof sched->hash);
            return false;
        }
    } else {
        /* ggmlc__sched_slot unsets each slot as a tensor claims it */
        ggmlc__hash_set_reset(&sched->hash);
    }
    sched->n_splits = sched->n_inputs = sched->n_clones = sched->n_rewires = 0;
    sched->unagreed = false;
    return true;
}

static void print_plan(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    GGMLC_LOG_INFO("sched: %d nodes in %d splits, %d input copies, %d copies back\n", graph->n_nodes, sched->n_splits,
                   sched->n_inputs, sched->n_clones);
    for (int k = 0; k < sched->n_splits; k++) {
        const struct sched_split *sp = &sched->splits[k];
        GGMLC_LOG_INFO("sched: split %d on %s: nodes %d..%d ('%s'..'%s')\n", k, ggml_backend_name(sched->backends[sp->backend_id]),
                       sp->i_start, sp->i_end - 1, graph->nodes[sp->i_start]->name, graph->nodes[sp->i_end - 1]->name);
        for (int j = sp->in_start; j < sp->in_end; j++) {
            const struct ggml_tensor *src = sched->inputs[j].src;
            GGMLC_LOG_INFO("sched:   copy in  '%s' (%zu bytes) from %s memory\n", src->name, ggml_nbytes(src),
                           ggml_backend_buft_name(storage_buft(sched, src)));
        }
        for (int j = sp->cl_start; j < sp->cl_end; j++) {
            const struct ggml_tensor *o = sched->clones[j].orig;
            if (!ggmlc_op_is_view(o->op))
                GGMLC_LOG_INFO("sched:   copy out '%s' (%zu bytes) back to its %s memory\n", o->name, ggml_nbytes(o),
                               ggml_backend_buft_name(storage_buft(sched, o)));
        }
    }
}

bool ggmlc__sched_plan(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    if (!reset_state(sched, graph)) goto nomem;
    assign_nodes(sched, graph);
    if (!cut_splits(sched, graph)) goto nomem;
    for (int k = 0; k < sched->n_splits; k++) {
        if (!plan_split(sched, graph, k)) goto nomem;
    }
    if (!build_graph(sched, graph)) goto nomem;
    if (sched->debug) print_plan(sched, graph);
    return true;
nomem:
    ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_sched: out of memory planning a graph of %d nodes", graph->n_nodes);
    return false;
}

void ggmlc__sched_rewire(ggml_backend_sched_t sched, int first, int last, bool apply) {
    for (int j = first; j < last; j++) {
        const struct ggmlc__sched_rewire *rw = &sched->rewires[j];
        rw->node->src[rw->slot] = apply ? replacement(sched, rw->ref) : rw->orig;
    }
}
