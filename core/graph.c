/*
 * graph.c - computation graphs: creation in a context, forward expansion
 * (topological order without recursion, so deep chains cannot overflow the
 * stack), node access, printing and Graphviz output.
 *
 * Backward expansion lives in backward.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ggml-impl.h"

/* ------------------------------------------------------------ hash set */

static size_t bitset_words(size_t n) { return (n + 31) / 32; }

size_t ggmlc__hash_size(size_t min_sz) {
    /* A power of two above min_sz (a free slot even when min_sz keys are in): a slot is then
     * a mask of the mixed key, not a division, which planning a graph would pay thousands
     * of times. */
    size_t n = 1;
    while (n <= min_sz && n <= SIZE_MAX / 4) n *= 2;
    return n;
}

struct ggml_hash_set ggmlc__hash_set_new(size_t size) {
    const size_t n = ggmlc__hash_size(size);
    struct ggml_hash_set s = {
        .size = n,
        .keys = malloc(sizeof(struct ggml_tensor *) * n),
        .used = calloc(bitset_words(n), sizeof(uint32_t)),
    };
    if (!s.keys || !s.used) {
        free(s.keys);
        free(s.used);
        s = (struct ggml_hash_set){0};
    }
    return s;
}

void ggmlc__hash_set_free(struct ggml_hash_set *s) {
    free(s->used);
    free(s->keys);
}

void ggmlc__hash_set_reset(struct ggml_hash_set *s) { memset(s->used, 0, sizeof(uint32_t) * bitset_words(s->size)); }

static inline bool slot_used(const struct ggml_hash_set *s, size_t i) { return (s->used[i >> 5] >> (i & 31)) & 1; }
static inline void slot_take(struct ggml_hash_set *s, size_t i) { s->used[i >> 5] |= 1u << (i & 31); }

/* Fibonacci hashing of the pointer: tensors of one context lie a fixed stride apart, and the
 * multiplication spreads such keys over every bit that the power-of-two mask keeps. */
static size_t hash_of(const struct ggml_tensor *p) {
    uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h ^ (h >> 32));
}

size_t ggmlc__hash_find(const struct ggml_hash_set *s, const struct ggml_tensor *key) {
    if (s->size == 0) return GGML_HASHSET_FULL;
    const size_t mask = s->size - 1; /* sizes are powers of two (ggmlc__hash_size) */
    const size_t h = hash_of(key) & mask;
    size_t i = h;
    while (slot_used(s, i) && s->keys[i] != key) {
        i = (i + 1) & mask;
        if (i == h) return GGML_HASHSET_FULL;
    }
    return i;
}

bool ggmlc__hash_contains(const struct ggml_hash_set *s, const struct ggml_tensor *key) {
    const size_t i = ggmlc__hash_find(s, key);
    return i != GGML_HASHSET_FULL && slot_used(s, i);
}

size_t ggmlc__hash_insert(struct ggml_hash_set *s, struct ggml_tensor *key) {
    const size_t i = ggmlc__hash_find(s, key);
    if (i == GGML_HASHSET_FULL) return GGML_HASHSET_FULL;
    if (slot_used(s, i)) return GGML_HASHSET_ALREADY_EXISTS;
    slot_take(s, i);
    s->keys[i] = key;
    return i;
}

size_t ggmlc__hash_find_or_insert(struct ggml_hash_set *s, struct ggml_tensor *key) {
    const size_t i = ggmlc__hash_find(s, key);
    if (i == GGML_HASHSET_FULL) return GGML_HASHSET_FULL;
    slot_take(s, i);
    s->keys[i] = key;
    return i;
}

size_t ggmlc__hash_claim(struct ggml_hash_set *s, struct ggml_tensor *key, bool *inserted) {
    const size_t i = ggmlc__hash_find(s, key);
    *inserted = i != GGML_HASHSET_FULL && !slot_used(s, i);
    if (*inserted) {
        slot_take(s, i);
        s->keys[i] = key;
    }
    return i;
}

/* ------------------------------------------------------------- graphs */

static size_t graph_nbytes(size_t size, bool grads) {
    const size_t hash_size = ggmlc__hash_size(size * 2);
    size_t n = sizeof(struct ggml_cgraph);
    n += sizeof(struct ggml_tensor *) * size * 2;              /* nodes + leafs */
    n += sizeof(int32_t) * hash_size;                          /* use counts */
    n += sizeof(struct ggml_tensor *) * hash_size;             /* hash keys */
    if (grads) n += sizeof(struct ggml_tensor *) * hash_size * 2; /* grads + grad_accs */
    n += sizeof(uint32_t) * bitset_words(hash_size);
    return n;
}

size_t ggml_graph_overhead_custom(size_t size, bool grads) {
    return GGML_OBJECT_SIZE + GGML_PAD(graph_nbytes(size, grads), GGML_MEM_ALIGN);
}

size_t ggml_graph_overhead(void) { return ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, false); }

struct ggml_cgraph *ggml_new_graph_custom(struct ggml_context *ctx, size_t size, bool grads) {
    if (!ctx) return NULL;
    if (size == 0 || size > INT32_MAX / 2) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_new_graph_custom: invalid graph size %zu", size);
        return NULL;
    }
    struct ggml_object *obj = ggmlc__new_object(ctx, GGML_OBJECT_TYPE_GRAPH, graph_nbytes(size, grads));
    if (!obj) return NULL;
    struct ggml_cgraph *g = (struct ggml_cgraph *)((char *)ctx->mem_buffer + obj->offs);
    const size_t hash_size = ggmlc__hash_size(size * 2);
    /* arrays of pointers first, then the 4-byte arrays, keeping alignment */
    struct ggml_tensor **p = (struct ggml_tensor **)(g + 1);
    struct ggml_tensor **nodes = p;      p += size;
    struct ggml_tensor **leafs = p;      p += size;
    struct ggml_tensor **keys = p;       p += hash_size;
    struct ggml_tensor **grads_p = NULL, **accs_p = NULL;
    if (grads) {
        grads_p = p; p += hash_size;
        accs_p = p;  p += hash_size;
    }
    int32_t *use_counts = (int32_t *)p;
    uint32_t *used = (uint32_t *)(use_counts + hash_size);
    *g = (struct ggml_cgraph){
        .size = (int)size,
        .nodes = nodes,
        .leafs = leafs,
        .grads = grads_p,
        .grad_accs = accs_p,
        .use_counts = use_counts,
        .visited_hash_set = {.size = hash_size, .used = used, .keys = keys},
    };
    ggmlc__hash_set_reset(&g->visited_hash_set);
    if (grads) {
        memset(grads_p, 0, sizeof(struct ggml_tensor *) * hash_size);
        memset(accs_p, 0, sizeof(struct ggml_tensor *) * hash_size);
    }
    return g;
}

struct ggml_cgraph *ggml_new_graph(struct ggml_context *ctx) {
    return ggml_new_graph_custom(ctx, GGML_DEFAULT_GRAPH_SIZE, false);
}

struct ggml_cgraph ggmlc__graph_view(struct ggml_cgraph *g, int i0, int i1) {
    return (struct ggml_cgraph){
        .size = 0,
        .n_nodes = i1 - i0,
        .n_leafs = 0,
        .nodes = g->nodes + i0,
        .grads = NULL,
        .grad_accs = NULL,
        .leafs = NULL,
        .use_counts = g->use_counts,
        .visited_hash_set = g->visited_hash_set,
        .order = g->order,
    };
}

/* t's name becomes prefix followed by n in decimal ("node_12"), written by hand: every unnamed
 * tensor of every graph built gets one, and a printf costs more than the rest of adding it. */
static void name_numbered(struct ggml_tensor *t, const char *prefix, int n) {
    char digits[16];
    int len = 0;
    unsigned v = n < 0 ? 0u : (unsigned)n;
    do {
        digits[len++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t p = strlen(prefix);
    memcpy(t->name, prefix, p);
    while (len > 0) t->name[p++] = digits[--len];
    t->name[p] = '\0';
}

static bool add_to_graph(struct ggml_cgraph *g, struct ggml_tensor *t) {
    const bool is_leaf = t->op == GGML_OP_NONE && !(t->flags & GGML_TENSOR_FLAG_PARAM);
    if (is_leaf) {
        if (g->n_leafs >= g->size) goto full;
        g->leafs[g->n_leafs++] = t;
        if (t->name[0] == '\0') name_numbered(t, "leaf_", g->n_leafs - 1);
    } else {
        if (g->n_nodes >= g->size) goto full;
        g->nodes[g->n_nodes++] = t;
        if (t->name[0] == '\0') name_numbered(t, "node_", g->n_nodes - 1);
    }
    return true;
full:
    g->incomplete = true;
    ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_build_forward_expand: graph is full (size %d); use ggml_new_graph_custom", g->size);
    return false;
}

/* The sources cover the leafs. */
bool ggmlc__graph_buffers_live(const struct ggml_cgraph *g, const char *who) {
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor *node = g->nodes[i];
        if (!ggmlc__tensor_buffer_live(who, node)) return false;
        for (int j = 0; j < GGML_MAX_SRC; j++)
            if (node->src[j] && !ggmlc__tensor_buffer_live(who, node->src[j])) return false;
    }
    return true;
}

bool ggmlc__graph_complete(const struct ggml_cgraph *g, const char *who) {
    if (!g->incomplete) return true;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: the graph is incomplete (a node was refused when it was built: "
                    "the graph was full or the node NULL); rebuild it larger", who);
    return false;
}

/* Depth-first post-order over sources, with an explicit stack. */
void ggml_build_forward_expand(struct ggml_cgraph *g, struct ggml_tensor *tensor) {
    if (!g || !tensor) { /* a NULL tensor: its constructor failed and recorded why */
        if (g) g->incomplete = true; /* computing g would not give that output */
        return;
    }
    struct frame {
        struct ggml_tensor *t;
        int next_src;
    };
    size_t cap = 64, top = 0;
    struct frame *stack = malloc(cap * sizeof *stack);
    if (!stack) {
        g->incomplete = true;
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_build_forward_expand: out of memory");
        return;
    }
    if (ggmlc__hash_insert(&g->visited_hash_set, tensor) == GGML_HASHSET_ALREADY_EXISTS) {
        free(stack);
        return;
    }
    stack[top++] = (struct frame){tensor, 0};
    while (top > 0) {
        struct frame *f = &stack[top - 1];
        struct ggml_tensor *child = NULL;
        while (f->next_src < GGML_MAX_SRC && !child) {
            struct ggml_tensor *s = f->t->src[f->next_src++];
            if (s && ggmlc__hash_insert(&g->visited_hash_set, s) != GGML_HASHSET_ALREADY_EXISTS) child = s;
        }
        if (child) {
            if (top == cap) {
                struct frame *bigger = realloc(stack, 2 * cap * sizeof *stack);
                if (!bigger) {
                    g->incomplete = true;
                    ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_build_forward_expand: out of memory");
                    break;
                }
                stack = bigger;
                cap *= 2;
            }
            stack[top++] = (struct frame){child, 0};
        } else {
            if (!add_to_graph(g, f->t)) break;
            top--;
        }
    }
    free(stack);
}

int ggml_graph_size(struct ggml_cgraph *g) { return g->size; }
int ggml_graph_n_nodes(struct ggml_cgraph *g) { return g->n_nodes; }
struct ggml_tensor **ggml_graph_nodes(struct ggml_cgraph *g) { return g->nodes; }

struct ggml_tensor *ggml_graph_node(struct ggml_cgraph *g, int i) {
    if (i < 0) i += g->n_nodes;
    if (i < 0 || i >= g->n_nodes) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_graph_node: index %d out of range (%d nodes)", i, g->n_nodes);
        return NULL;
    }
    return g->nodes[i];
}

void ggml_graph_add_node(struct ggml_cgraph *g, struct ggml_tensor *t) {
    if (!g) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_graph_add_node: NULL graph");
        return;
    }
    if (!t || g->n_nodes >= g->size) {
        g->incomplete = true;
        if (t) ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_graph_add_node: graph is full (size %d)", g->size);
        else ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_graph_add_node: NULL node (a failed op constructor?)");
        return;
    }
    g->nodes[g->n_nodes++] = t;
}

void ggml_graph_clear(struct ggml_cgraph *g) {
    g->n_nodes = 0;
    g->n_leafs = 0;
    g->incomplete = false;
    ggmlc__hash_set_reset(&g->visited_hash_set);
}

void ggml_graph_cpy(struct ggml_cgraph *src, struct ggml_cgraph *dst) {
    GGML_ASSERT(dst->size >= src->n_leafs && dst->size >= src->n_nodes);
    GGML_ASSERT(dst->visited_hash_set.size >= src->visited_hash_set.size);
    dst->n_leafs = src->n_leafs;
    dst->n_nodes = src->n_nodes;
    dst->incomplete = src->incomplete;
    dst->order = src->order;
    memcpy(dst->leafs, src->leafs, sizeof(struct ggml_tensor *) * (size_t)src->n_leafs);
    memcpy(dst->nodes, src->nodes, sizeof(struct ggml_tensor *) * (size_t)src->n_nodes);
    ggmlc__hash_set_reset(&dst->visited_hash_set);
    for (size_t i = 0; i < src->visited_hash_set.size; i++) {
        if (!slot_used(&src->visited_hash_set, i)) continue;
        struct ggml_tensor *key = src->visited_hash_set.keys[i];
        const size_t j = ggmlc__hash_insert(&dst->visited_hash_set, key);
        if (src->grads && dst->grads) {
            dst->grads[j] = src->grads[i];
            dst->grad_accs[j] = src->grad_accs[i];
        }
    }
}

struct ggml_cgraph *ggml_graph_dup(struct ggml_context *ctx, struct ggml_cgraph *g, bool force_grads) {
    struct ggml_cgraph *r = ggml_new_graph_custom(ctx, (size_t)g->size, g->grads != NULL || force_grads);
    if (r) ggml_graph_cpy(g, r);
    return r;
}

struct ggml_tensor *ggml_graph_get_tensor(const struct ggml_cgraph *g, const char *name) {
    for (int i = 0; i < g->n_leafs; i++) {
        if (strcmp(g->leafs[i]->name, name) == 0) return g->leafs[i];
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (strcmp(g->nodes[i]->name, name) == 0) return g->nodes[i];
    }
    return NULL;
}

struct ggml_tensor *ggml_graph_get_grad(const struct ggml_cgraph *g, const struct ggml_tensor *node) {
    const size_t i = ggmlc__hash_find(&g->visited_hash_set, node);
    return i != GGML_HASHSET_FULL && slot_used(&g->visited_hash_set, i) && g->grads ? g->grads[i] : NULL;
}

struct ggml_tensor *ggml_graph_get_grad_acc(const struct ggml_cgraph *g, const struct ggml_tensor *node) {
    const size_t i = ggmlc__hash_find(&g->visited_hash_set, node);
    return i != GGML_HASHSET_FULL && slot_used(&g->visited_hash_set, i) && g->grad_accs ? g->grad_accs[i] : NULL;
}

/* ------------------------------------------------------------ printing */

void ggml_graph_print(const struct ggml_cgraph *g) {
    GGMLC_LOG_INFO("=== GRAPH ===\n");
    GGMLC_LOG_INFO("n_nodes = %d\n", g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor *t = g->nodes[i];
        GGMLC_LOG_INFO(" - %3d: [ %5lld, %5lld, %5lld, %5lld] %16s %s\n", i, (long long)t->ne[0], (long long)t->ne[1],
                       (long long)t->ne[2], (long long)t->ne[3], ggml_op_desc(t),
                       (t->flags & GGML_TENSOR_FLAG_PARAM) ? "param" : (ggml_graph_get_grad(g, t) ? "g" : " "));
    }
    GGMLC_LOG_INFO("n_leafs = %d\n", g->n_leafs);
    for (int i = 0; i < g->n_leafs; i++) {
        const struct ggml_tensor *t = g->leafs[i];
        GGMLC_LOG_INFO(" - %3d: [ %5lld, %5lld] %8s %16s\n", i, (long long)t->ne[0], (long long)t->ne[1],
                       ggml_op_name(t->op), t->name);
    }
    GGMLC_LOG_INFO("========================================\n");
}

static void dot_node(FILE *fp, const struct ggml_cgraph *g, const struct ggml_tensor *t, const char *color) {
    fprintf(fp, "  \"%p\" [style = filled; fillcolor = %s; shape = record; label=\"", (const void *)t, color);
    if (t->name[0]) fprintf(fp, "%s (%s)|", t->name, ggml_type_name(t->type));
    fprintf(fp, "%lld x %lld x %lld x %lld | <x>%s", (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
            (long long)t->ne[3], t->op == GGML_OP_NONE ? "leaf" : ggml_op_symbol(t->op));
    if (ggml_graph_get_grad(g, t)) fprintf(fp, " | <g>grad");
    fprintf(fp, "\"; ]\n");
}

void ggml_graph_dump_dot(const struct ggml_cgraph *gb, const struct ggml_cgraph *gf, const char *filename) {
    FILE *fp = fopen(filename, "w");
    if (!fp) {
        ggmlc_set_error(GGMLC_ERR_IO, "ggml_graph_dump_dot: cannot open %s for writing", filename);
        return;
    }
    fprintf(fp, "digraph G {\n  newrank = true;\n  rankdir = TB;\n");
    for (int i = 0; i < gb->n_nodes; i++) {
        const struct ggml_tensor *t = gb->nodes[i];
        const bool in_forward = gf && ggmlc__hash_contains(&gf->visited_hash_set, t);
        const char *color = (t->flags & GGML_TENSOR_FLAG_PARAM) ? "yellow" : (in_forward || !gf ? "white" : "green");
        dot_node(fp, gb, t, color);
    }
    for (int i = 0; i < gb->n_leafs; i++) dot_node(fp, gb, gb->leafs[i], "pink");
    for (int i = 0; i < gb->n_nodes; i++) {
        const struct ggml_tensor *t = gb->nodes[i];
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (t->src[j]) fprintf(fp, "  \"%p\" -> \"%p\":x [ label = \"src%d\" ]\n", (const void *)t->src[j], (const void *)t, j);
        }
    }
    fprintf(fp, "}\n");
    if (fclose(fp) != 0) ggmlc_set_error(GGMLC_ERR_IO, "ggml_graph_dump_dot: error writing %s", filename);
}
