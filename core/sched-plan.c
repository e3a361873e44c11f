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

/* The first backend that can use buffers of buft, or -1. */
static int backend_of_buft(ggml_backend_sched_t sched, ggml_backend_buffer_type_t buft) {
    for (int b = 0; buft && b < sched->n_backends; b++) {
        if (ggml_backend_supports_buft(sched->backends[b], buft)) return b;
    }
    return -1;
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

/* The backend whose buffer holds one of node's weights and that computes node, or -1. */
static int weight_backend(ggml_backend_sched_t sched, const struct ggml_tensor *node, const struct ggml_tensor **weight) {
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        const struct ggml_tensor *src = node->src[s];
        if (!src || !is_weight(sched, src)) continue;
        const int b = backend_of_buft(sched, storage_buft(sched, src));
        if (b >= 0 && supports(sched, b, node)) {
            *weight = src;
            return b;
        }
    }
    return -1;
}

static int choose_backend(ggml_backend_sched_t sched, const struct ggml_tensor *node, const struct ggml_tensor **weight) {
    const int cpu = sched->n_backends - 1;
    *weight = NULL;
    /* an in-place result (a view that computes) stays with the memory it overwrites */
    if (node->view_src && !preallocated(sched, node)) {
        const int b = sched->assign[ggmlc__sched_slot(sched, node->view_src)];
        if (b >= 0 && supports(sched, b, node)) return b;
    }
    /* a node the caller allocated stays with its buffer when that backend computes it */
    if (preallocated(sched, node)) {
        const int b = backend_of_buft(sched, storage_buft(sched, node));
        if (b >= 0 && supports(sched, b, node)) return b;
    }
    int b = weight_backend(sched, node, weight);
    if (b >= 0) {
        /* weights in host memory: a preferred backend may still ask for the op */
        if (sched->op_offload && b == cpu && ggml_backend_buft_is_host(storage_buft(sched, *weight))) {
            for (int o = 0; o < cpu; o++) {
                if (supports(sched, o, node) && ggml_backend_offload_op(sched->backends[o], node)) return o;
            }
        }
        return b;
    }
    for (b = 0; b < cpu; b++) {
        if (supports(sched, b, node)) return b; /* its weights are copied */
    }
    return cpu;
}

static void explain_cpu(ggml_backend_sched_t sched, const struct ggml_tensor *node, const struct ggml_tensor *weight) {
    const int cpu = sched->n_backends - 1;
    for (int b = 0; b < cpu; b++) {
        const char *why = refusal(sched->backends[b], node);
        if (!why) {
            GGMLC_LOG_INFO("sched: node '%s' (%s) runs on %s, not %s: buffer: its weight '%s' lives in a %s buffer %s cannot use\n",
                           node->name, ggml_op_desc(node), ggml_backend_name(sched->backends[cpu]),
                           ggml_backend_name(sched->backends[b]), weight ? weight->name : "?",
                           weight ? ggml_backend_buft_name(storage_buft(sched, weight)) : "?", ggml_backend_name(sched->backends[b]));
        } else {
            GGMLC_LOG_INFO("sched: node '%s' (%s) falls back to %s: %s: %s\n", node->name, ggml_op_desc(node),
                           ggml_backend_name(sched->backends[cpu]), ggml_backend_name(sched->backends[b]), why);
        }
    }
}

static void assign_nodes(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    const int cpu = sched->n_backends - 1;
    int last = -1;
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor *node = graph->nodes[i];
        int id = pinned_backend(sched, node);
        if (id < 0 && !ggmlc_op_is_view(node->op)) {
            const struct ggml_tensor *weight;
            id = choose_backend(sched, node, &weight);
            if (sched->debug && id == cpu && cpu > 0) explain_cpu(sched, node, weight);
        }
        if (id < 0) id = last; /* views compute nothing: they stay in the current split */
        sched->assign[ggmlc__sched_slot(sched, node)] = id;
        if (id >= 0) last = id;
    }
    /* views before the first computing node join the first split */
    int first = last >= 0 ? last : cpu;
    for (int i = 0; i < graph->n_nodes; i++) {
        const int id = sched->assign[ggmlc__sched_slot(sched, graph->nodes[i])];
        if (id >= 0) {
            first = id;
            break;
        }
    }
    for (int i = 0; i < graph->n_nodes && sched->assign[ggmlc__sched_slot(sched, graph->nodes[i])] < 0; i++)
        sched->assign[ggmlc__sched_slot(sched, graph->nodes[i])] = first;
    /* sources the allocator places: inputs on the CPU (the caller writes them), others with their first consumer */
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor *node = graph->nodes[i];
        const int id = sched->assign[ggmlc__sched_slot(sched, node)];
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            struct ggml_tensor *src = node->src[s];
            if (!src) continue;
            const struct ggml_tensor *st = storage_of(src);
            int *a = &sched->assign[ggmlc__sched_slot(sched, st)];
            if (*a < 0) *a = (st->flags & GGML_TENSOR_FLAG_INPUT) ? cpu : id;
            int *as = &sched->assign[ggmlc__sched_slot(sched, src)];
            if (*as < 0) *as = *a;
        }
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        int *a = &sched->assign[ggmlc__sched_slot(sched, graph->leafs[i])];
        if (*a < 0) *a = cpu;
    }
}

/* -------------------------------------------------------------- splits */

static bool cut_splits(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    sched->n_splits = 0;
    for (int i = 0; i < graph->n_nodes; i++) {
        const int id = sched->assign[ggmlc__sched_slot(sched, graph->nodes[i])];
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
        int **arrays[] = {&sched->assign, &sched->split_of, &sched->input_of, &sched->input_split, &sched->clone_of};
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
