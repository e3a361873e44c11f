/*
 * test-alloc.c - tensor and graph allocators (no computation).
 *
 * The graph allocator is checked against an independent liveness model:
 * for every pair of tensors whose lifetimes overlap, their bytes must not
 * overlap (the only exception is an in-place operator taking over its
 * source at that source's last use), and the peak of graphs where no
 * in-place reuse applies equals the largest sum of live tensor sizes.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc-plugin.h"
#include "host-buffer.h"
#include "testutil.h"

#define ALIGN 64 /* the host buffer type's alignment */

static size_t padded(const struct ggml_tensor *t) { return (ggml_nbytes(t) + ALIGN - 1) / ALIGN * ALIGN; }

static struct ggml_context *new_ctx(void) {
    return ggml_init((struct ggml_init_params){.mem_size = 512 * ggml_tensor_overhead() + 8 * ggml_graph_overhead(), .no_alloc = true});
}

/* A node computing op from a and b, with the shape of a (allocation ignores what ops compute). */
static struct ggml_tensor *node(struct ggml_context *ctx, enum ggml_op op, struct ggml_tensor *a, struct ggml_tensor *b) {
    struct ggml_tensor *t = ggml_dup_tensor(ctx, a);
    t->op = op;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

/* A node of n floats computing a non-in-place op from a and b. */
static struct ggml_tensor *node_n(struct ggml_context *ctx, int64_t n, struct ggml_tensor *a, struct ggml_tensor *b) {
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    t->op = GGML_OP_MUL_MAT;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

static struct ggml_cgraph *graph_of(struct ggml_context *ctx, struct ggml_tensor *out) {
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    return g;
}

/* ------------------------------------------------- the liveness model */

struct lifetime {
    struct ggml_tensor *t;
    int def, end; /* computed at node def, needed until node end (INT_MAX: the whole graph) */
};

static int find_life(struct lifetime *l, int n, const struct ggml_tensor *t) {
    for (int i = 0; i < n; i++) {
        if (l[i].t == t) return i;
    }
    return -1;
}

/* Lifetimes of every leaf and node; a view extends its storage's lifetime. */
static int lifetimes(struct ggml_cgraph *g, struct lifetime *l) {
    int n = 0;
    struct ggml_tensor **nodes = ggml_graph_nodes(g);
    const int n_nodes = ggml_graph_n_nodes(g);
    for (int i = 0; i < n_nodes; i++) {
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            struct ggml_tensor *src = nodes[i]->src[s];
            if (src && find_life(l, n, src) < 0) l[n++] = (struct lifetime){src, -1, INT_MAX}; /* a leaf */
        }
        const bool pinned = nodes[i]->flags & (GGML_TENSOR_FLAG_OUTPUT | GGML_TENSOR_FLAG_INPUT);
        l[n++] = (struct lifetime){nodes[i], i, pinned ? INT_MAX : i};
    }
    for (int i = 0; i < n_nodes; i++) {
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            const int k = nodes[i]->src[s] ? find_life(l, n, nodes[i]->src[s]) : -1;
            if (k >= 0 && l[k].end < i) l[k].end = i;
        }
    }
    for (int i = n_nodes - 1; i >= 0; i--) { /* views come after their storage */
        const int k = find_life(l, n, nodes[i]);
        if (nodes[i]->view_src) {
            const int v = find_life(l, n, nodes[i]->view_src);
            if (l[v].end < l[k].end) l[v].end = l[k].end;
        }
    }
    return n;
}

static bool lives_overlap(const struct lifetime *a, const struct lifetime *b) { return a->def <= b->end && b->def <= a->end; }

/* b overwrote a in place: a's last use is b, which reads a (or a view at a's start) as an
 * operand it may overwrite: src[0], or either operand of an elementwise add, sub, mul, div. */
static bool handover(const struct lifetime *a, const struct lifetime *b) {
    if (a->end != b->def || !ggmlc_op_get_info(b->t->op)->inplace_ok) return false;
    const enum ggml_op op = b->t->op;
    const int operands =
        op == GGML_OP_ADD || op == GGML_OP_SUB || op == GGML_OP_MUL || op == GGML_OP_DIV ? 2 : 1;
    for (int s = 0; s < operands; s++) {
        const struct ggml_tensor *x = b->t->src[s];
        if (x && (x == a->t || (x->view_src == a->t && x->view_offs == 0))) return true;
    }
    return false;
}

/* Count the pairs of simultaneously live tensors whose bytes overlap. */
static int count_conflicts(struct ggml_cgraph *g) {
    struct lifetime l[1024];
    const int n = lifetimes(g, l);
    int conflicts = 0;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            const struct ggml_tensor *a = l[i].t, *b = l[j].t;
            if (a->view_src || b->view_src || !a->data || !b->data) continue;
            const char *a0 = a->data, *b0 = b->data;
            const bool bytes = a0 < b0 + ggml_nbytes(b) && b0 < a0 + ggml_nbytes(a);
            if (bytes && lives_overlap(&l[i], &l[j]) && !handover(&l[i], &l[j]) && !handover(&l[j], &l[i])) {
                tap_diag("conflict: %s [%d,%d] and %s [%d,%d]", a->name, l[i].def, l[i].end, b->name, l[j].def, l[j].end);
                conflicts++;
            }
        }
    }
    return conflicts;
}

/* The least memory any placement needs when nothing is computed in place. */
static size_t live_peak(struct ggml_cgraph *g) {
    struct lifetime l[1024];
    const int n = lifetimes(g, l);
    size_t peak = 0;
    for (int step = -1; step < ggml_graph_n_nodes(g); step++) {
        size_t live = 0;
        for (int k = 0; k < n; k++) {
            if (!l[k].t->view_src && l[k].def <= step && step <= l[k].end) live += padded(l[k].t);
        }
        if (live > peak) peak = live;
    }
    return peak;
}

/* --------------------------------------------------------------- tests */

static void test_tallocr(void) {
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 3 * 256);
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 33);  /* 132 bytes -> 192 */
    struct ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100); /* 400 bytes */
    struct ggml_tensor *c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100);
    struct ggml_tensor *v = ggml_view_1d(ctx, b, 10, 40); /* made before b has memory */
    struct ggml_tallocr ta = ggml_tallocr_new(buf);
    tap_ok(ggml_tallocr_alloc(&ta, a) == GGML_STATUS_SUCCESS && a->data == ggml_backend_buffer_get_base(buf) && a->buffer == buf,
           "tallocr places the first tensor at the buffer's base");
    tap_ok(ggml_tallocr_alloc(&ta, b) == GGML_STATUS_SUCCESS && (char *)b->data - (char *)a->data == 192,
           "the next tensor starts at the next aligned offset");
    tap_ok(ggml_tallocr_alloc(&ta, c) == GGML_STATUS_ALLOC_FAILED && c->data == NULL && ggmlc_last_status() == GGMLC_ERR_NOMEM,
           "a tensor that does not fit fails with ALLOC_FAILED: %s", ggmlc_last_error());
    tap_ok(ggml_backend_tensor_alloc(buf, c, (char *)ggml_backend_buffer_get_base(buf) + 600) == GGML_STATUS_FAILED,
           "ggml_backend_tensor_alloc refuses a range past the buffer's end");
    tap_ok(ggml_backend_tensor_alloc(buf, a, a->data) == GGML_STATUS_FAILED, "ggml_backend_tensor_alloc refuses an allocated tensor");
    tap_ok(v->data == NULL && ggml_backend_view_init(v) == GGML_STATUS_SUCCESS && v->data == (char *)b->data + 40 && v->buffer == buf,
           "ggml_backend_view_init places a view inside its source");
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* A host buffer type whose buffers hold at most 1000 bytes. */
static ggml_backend_buffer_type_t small_buft;
static const char *small_name(ggml_backend_buffer_type_t buft) { return "small"; }
static size_t small_align(ggml_backend_buffer_type_t buft) { return ALIGN; }
static size_t small_max(ggml_backend_buffer_type_t buft) { return 1000; }
static bool small_is_host(ggml_backend_buffer_type_t buft) { return true; }
static ggml_backend_buffer_t small_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    return host_buffer_new(buft, size, ALIGN, -1);
}

static ggml_backend_buffer_type_t get_small_buft(void) {
    static const struct ggmlc_buft_iface iface = {
        .struct_size = sizeof iface, .get_name = small_name, .alloc_buffer = small_alloc,
        .get_alignment = small_align, .get_max_size = small_max, .is_host = small_is_host,
    };
    if (!small_buft) small_buft = ggmlc_buft_new(NULL, &iface, NULL);
    return small_buft;
}

static void test_alloc_ctx_tensors(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *t[6];
    for (int i = 0; i < 6; i++) t[i] = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 50 + 20 * i); /* 200..600 bytes */
    struct ggml_tensor *view = ggml_view_1d(ctx, t[2], 5, 8);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, get_small_buft());
    bool all = buf != NULL, disjoint = true;
    for (int i = 0; i < 6 && all; i++) all = t[i]->data && t[i]->buffer;
    for (int i = 0; i < 6 && all; i++) {
        for (int j = i + 1; j < 6; j++) {
            const char *a = t[i]->data, *b = t[j]->data;
            if (a < b + ggml_nbytes(t[j]) && b < a + ggml_nbytes(t[i])) disjoint = false;
        }
    }
    tap_ok(all && disjoint, "tensors larger in total than the type's maximum go into several buffers, without overlap");
    tap_ok(all && t[0]->buffer != t[5]->buffer && ggml_backend_buffer_get_size(buf) == 960 + 448 + 576 + 640,
           "the returned buffer covers all parts (%zu bytes)", buf ? ggml_backend_buffer_get_size(buf) : 0);
    tap_ok(view->data == (char *)t[2]->data + 8, "views of the context are initialised inside their source");
    float x[150];
    for (int i = 0; i < 150; i++) x[i] = (float)i - 80.5f;
    ggml_backend_tensor_set(t[5], x, 0, sizeof x);
    float y[150] = {0};
    ggml_backend_tensor_get(t[5], y, 0, sizeof y);
    tap_ok(memcmp(x, y, sizeof x) == 0, "data written to a tensor of a later part reads back");
    ggml_backend_buffer_free(buf); /* frees every part (ASan checks) */
    ggml_free(ctx);

    ctx = new_ctx();
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 300); /* 1200 bytes > 1000 */
    tap_ok(ggml_backend_alloc_ctx_tensors_from_buft(ctx, get_small_buft()) == NULL && ggmlc_last_status() == GGMLC_ERR_NOMEM,
           "a tensor larger than the type's maximum buffer fails: %s", ggmlc_last_error());
    ggml_free(ctx);
    ctx = new_ctx();
    tap_ok(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type()) == NULL,
           "a context without tensors gives no buffer");
    ggml_free(ctx);
}

static void test_chain(void) {
    const int64_t n = 1001; /* 4004 bytes, 4032 padded */
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    struct ggml_tensor *cur = x;
    for (int i = 0; i < 40; i++) cur = node(ctx, GGML_OP_CONT, cur, NULL); /* CONT never works in place */
    struct ggml_cgraph *g = graph_of(ctx, cur);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    tap_ok(ga && ggml_gallocr_alloc_graph(ga, g), "a chain of 40 nodes is allocated");
    const size_t peak = ggml_gallocr_get_buffer_size(ga, 0);
    tap_ok(peak == live_peak(g) && peak == 3 * padded(x), "chain peak = input + two live nodes = %zu (got %zu)", 3 * padded(x), peak);
    tap_ok(count_conflicts(g) == 0, "no two live tensors of the chain share bytes");
    ggml_gallocr_free(ga);
    ggml_free(ctx);

    ctx = new_ctx();
    x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    cur = x;
    for (int i = 0; i < 40; i++) cur = node(ctx, GGML_OP_SCALE, cur, NULL); /* SCALE may overwrite its source */
    g = graph_of(ctx, cur);
    ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_alloc_graph(ga, g);
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) == 2 * padded(x), "an in-place chain needs the input and one node (%zu)",
           ggml_gallocr_get_buffer_size(ga, 0));
    tap_ok(ggml_graph_node(g, 5)->data == ggml_graph_node(g, 6)->data && x->data != ggml_graph_node(g, 0)->data,
           "in-place nodes share their source's memory, the leaf is never overwritten");
    tap_ok(count_conflicts(g) == 0, "in-place chain has no conflicts");

    /* an output in the middle keeps its memory: the chain needs one more block */
    ggml_set_output(ggml_graph_node(g, 20));
    ggml_gallocr_alloc_graph(ga, g);
    tap_ok(ggml_graph_node(g, 20)->data != ggml_graph_node(g, 21)->data && count_conflicts(g) == 0,
           "a node flagged as output is not overwritten in place");
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) == 3 * padded(x), "and the buffer grew to three blocks");
    ggml_gallocr_free(ga);
    ggml_free(ctx);
}

/* x -> a (large) -> b, c (small, both read a) -> d(b, c) */
static void test_diamond(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000);
    struct ggml_tensor *a = node_n(ctx, 3000, x, NULL);
    struct ggml_tensor *b = node_n(ctx, 500, a, NULL);
    struct ggml_tensor *c = node_n(ctx, 500, a, NULL);
    struct ggml_tensor *d = node_n(ctx, 500, b, c);
    struct ggml_cgraph *g = graph_of(ctx, d);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    tap_ok(ggml_gallocr_alloc_graph(ga, g), "diamond graph allocated");
    const size_t want = padded(x) + padded(a) + padded(b) + padded(c); /* at c: x, a, b, c live */
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) == want && want == live_peak(g), "diamond peak = x+a+b+c = %zu (got %zu)", want,
           ggml_gallocr_get_buffer_size(ga, 0));
    tap_ok(count_conflicts(g) == 0 && (char *)d->data >= (char *)a->data && (char *)d->data < (char *)a->data + ggml_nbytes(a),
           "d reuses the memory of a, freed after its last consumer c");
    ggml_gallocr_free(ga);
    ggml_free(ctx);

    /* same shapes, in-place add at the end: d overwrites b */
    ctx = new_ctx();
    x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 777);
    a = node(ctx, GGML_OP_CONT, x, NULL);
    b = node(ctx, GGML_OP_CONT, a, NULL);
    c = node(ctx, GGML_OP_CONT, a, NULL);
    d = node(ctx, GGML_OP_ADD, b, c);
    g = graph_of(ctx, d);
    ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_alloc_graph(ga, g);
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) == 4 * padded(x) && d->data == b->data && count_conflicts(g) == 0,
           "equal-size diamond: peak 4 blocks, the add overwrites b in place");
    ggml_gallocr_free(ga);
    ggml_free(ctx);
}

/* The in-place cases ggml's allocator also takes: an add overwriting its second operand when
 * the first is still needed, and a node overwriting the storage of a view that is all that is
 * left of it (sd.cpp's residual adds and reshaped intermediates). */
static void test_inplace_operands(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 640);
    struct ggml_tensor *a = node(ctx, GGML_OP_CONT, x, NULL);
    struct ggml_tensor *b = node(ctx, GGML_OP_CONT, a, NULL);
    struct ggml_tensor *c =
        node(ctx, GGML_OP_ADD, a, b); /* a is read again below: only b is free */
    struct ggml_tensor *d = node(ctx, GGML_OP_MUL, c, a);
    struct ggml_cgraph *g = graph_of(ctx, d);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_alloc_graph(ga, g);
    tap_ok(
        c->data == b->data && d->data == c->data && count_conflicts(g) == 0 &&
            ggml_gallocr_get_buffer_size(ga, 0) == 3 * padded(x),
        "add overwrites its second operand (the first still needed), mul its first: peak 3 blocks (got %zu of %zu)",
        ggml_gallocr_get_buffer_size(ga, 0), padded(x));
    ggml_gallocr_free(ga);
    ggml_free(ctx);

    ctx = new_ctx();
    x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 20);
    a = node(ctx, GGML_OP_CONT, x, NULL);
    struct ggml_tensor *v = ggml_reshape_1d(ctx, a, 640); /* a view at a's start */
    b = node(ctx, GGML_OP_SCALE, v, NULL);
    g = graph_of(ctx, b);
    ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_alloc_graph(ga, g);
    tap_ok(
        b->data == a->data && count_conflicts(g) == 0 &&
            ggml_gallocr_get_buffer_size(ga, 0) == 2 * padded(x),
        "a node overwrites the storage of its source view when nothing else holds it: peak 2 blocks");
    ggml_gallocr_free(ga);
    ggml_free(ctx);
}

/* Random DAGs with views, outputs, in-place and other ops, several sizes. */
static void test_random_graphs(void) {
    test_seed(1234);
    int conflicts = 0, no_reuse = 0, failed = 0;
    for (int rep = 0; rep < 20; rep++) {
        struct ggml_context *ctx = new_ctx();
        struct ggml_tensor *pool[80];
        int n = 0;
        for (int i = 0; i < 4; i++) pool[n++] = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64 + (int)test_uniform(0, 900));
        for (int i = 0; i < 60; i++) {
            struct ggml_tensor *a = pool[n - 1 - (int)test_uniform(0, n < 6 ? n : 6)];
            struct ggml_tensor *b = pool[(int)test_uniform(0, n)];
            struct ggml_tensor *t;
            const int kind = (int)test_uniform(0, 5);
            if (kind == 0) t = node(ctx, GGML_OP_SCALE, a, NULL);
            else if (kind == 1 && ggml_nelements(b) == ggml_nelements(a)) t = node(ctx, GGML_OP_ADD, a, b);
            else if (kind == 2 && ggml_nelements(a) > 8) t = ggml_view_1d(ctx, a, ggml_nelements(a) / 2, 4 * 4);
            else t = node_n(ctx, 64 + (int)test_uniform(0, 900), a, b);
            if (test_uniform(0, 1) < 0.05f) ggml_set_output(t);
            pool[n++] = t;
        }
        struct ggml_cgraph *g = ggml_new_graph(ctx);
        for (int i = n - 5; i < n; i++) ggml_build_forward_expand(g, pool[i]);
        ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
        if (!ggml_gallocr_alloc_graph(ga, g)) failed++;
        conflicts += count_conflicts(g);
        size_t total = 0; /* what placing every tensor apart would take */
        for (int i = 0; i < ggml_graph_n_nodes(g); i++) total += ggml_graph_node(g, i)->view_src ? 0 : padded(ggml_graph_node(g, i));
        if (ggml_gallocr_get_buffer_size(ga, 0) >= total) no_reuse++;
        ggml_gallocr_free(ga);
        ggml_free(ctx);
    }
    tap_ok(failed == 0 && conflicts == 0, "20 random graphs: no live tensors share bytes (%d conflicts)", conflicts);
    tap_ok(no_reuse == 0, "every random graph needs less memory than its tensors' total");
}

/* A leaf and a chain of six CONT nodes of 30 floats. */
static struct ggml_cgraph *chain6(struct ggml_context *ctx, struct ggml_tensor **leaf) {
    struct ggml_tensor *cur = *leaf = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 30);
    for (int i = 0; i < 6; i++) cur = node(ctx, GGML_OP_CONT, cur, NULL);
    return graph_of(ctx, cur);
}

static void test_realloc_and_multi(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100);
    struct ggml_tensor *small = node(ctx, GGML_OP_CONT, node(ctx, GGML_OP_CONT, x, NULL), NULL);
    struct ggml_tensor *y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5000);
    struct ggml_tensor *big = node(ctx, GGML_OP_CONT, node(ctx, GGML_OP_CONT, y, NULL), NULL);
    struct ggml_cgraph *g1 = graph_of(ctx, small), *g2 = graph_of(ctx, big);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    tap_ok(ggml_gallocr_reserve(ga, g1) && ggml_gallocr_get_buffer_size(ga, 0) == 3 * 448 && x->data == NULL,
           "reserve sizes the buffer without placing tensors");
    tap_ok(ggml_gallocr_alloc_graph(ga, g2) && ggml_gallocr_get_buffer_size(ga, 0) == 3 * 20032 && count_conflicts(g2) == 0,
           "a graph needing more memory grows the buffer (%zu)", ggml_gallocr_get_buffer_size(ga, 0));
    tap_ok(ggml_gallocr_alloc_graph(ga, g1) && ggml_gallocr_get_buffer_size(ga, 0) == 3 * 20032 && small->buffer == big->buffer,
           "a smaller graph reuses the grown buffer");
    void *before = small->data;
    tap_ok(ggml_gallocr_alloc_graph(ga, g1) && small->data == before, "allocating the same graph again gives the same places");
    ggml_gallocr_free(ga);

    /* two buffer types: nodes alternate between them */
    ggml_backend_buffer_type_t bufts[3] = {ggml_backend_cpu_buffer_type(), get_small_buft(), ggml_backend_cpu_buffer_type()};
    struct ggml_tensor *z;
    struct ggml_cgraph *g3 = chain6(ctx, &z);
    int node_ids[6], leaf_ids[1] = {1};
    for (int i = 0; i < 6; i++) node_ids[i] = i % 2;
    ga = ggml_gallocr_new_n(bufts, 2);
    tap_ok(!ggml_gallocr_alloc_graph(ga, g3), "with two buffers, alloc_graph before reserve_n is refused: %s", ggmlc_last_error());
    tap_ok(ggml_gallocr_reserve_n(ga, g3, node_ids, leaf_ids) && ggml_gallocr_alloc_graph(ga, g3), "reserve_n then alloc_graph");
    bool right = ggml_backend_buffer_get_type(z->buffer) == bufts[1];
    for (int i = 0; i < 6; i++) right = right && ggml_backend_buffer_get_type(ggml_graph_node(g3, i)->buffer) == bufts[i % 2];
    tap_ok(right, "every node lands in the buffer type its id names");
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) == 128 && ggml_gallocr_get_buffer_size(ga, 1) == 2 * 128,
           "each buffer holds its peak (%zu, %zu)", ggml_gallocr_get_buffer_size(ga, 0), ggml_gallocr_get_buffer_size(ga, 1));
    ggml_gallocr_free(ga);
    ga = ggml_gallocr_new_n(bufts + 1, 2); /* small, host: distinct */
    ggml_gallocr_free(ga);
    ggml_backend_buffer_type_t same[2] = {bufts[0], bufts[2]};
    ga = ggml_gallocr_new_n(same, 2);
    g3 = chain6(ctx, &z); /* fresh tensors: those of g3 pointed into the freed allocator's buffers */
    int ids0[6] = {0, 1, 0, 1, 0, 1}, leaf0[1] = {0};
    tap_ok(ggml_gallocr_reserve_n(ga, g3, ids0, leaf0) && ggml_gallocr_get_buffer_size(ga, 1) == 0 &&
           ggml_gallocr_get_buffer_size(ga, 0) == 3 * 128, "ids of the same type share one buffer, counted once");
    ggml_gallocr_free(ga);
    tap_ok(ggml_gallocr_new_n(NULL, 0) == NULL && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "no buffer types is an error");
    ggml_free(ctx);
}

/* ------------------------------------------ computing with the CPU */

struct mixed {
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    struct ggml_tensor *x, *y, *w, *out1, *out2;
};

/* Element-wise, broadcast, in-place, transposed and reduced nodes, two outputs. */
static struct mixed mixed_graph(void) {
    struct mixed m;
    m.ctx = ggml_init((struct ggml_init_params){.mem_size = 64 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true});
    m.x = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, 37, 9);
    m.y = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, 37, 9);
    m.w = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, 37);
    ggml_set_input(m.x);
    struct ggml_tensor *t1 = ggml_add(m.ctx, m.x, m.y);
    struct ggml_tensor *t2 = ggml_mul(m.ctx, t1, m.w);
    struct ggml_tensor *t3 = ggml_sqr(m.ctx, t2);
    struct ggml_tensor *t4 = ggml_add_inplace(m.ctx, t3, m.x);
    struct ggml_tensor *t5 = ggml_sub(m.ctx, t2, t4);
    struct ggml_tensor *t6 = ggml_cont(m.ctx, ggml_transpose(m.ctx, t5));
    struct ggml_tensor *t7 = ggml_scale(m.ctx, t6, -0.5f);
    struct ggml_tensor *t8 = ggml_neg(m.ctx, ggml_scale_inplace(m.ctx, t7, 3.0f));
    m.out1 = ggml_sum_rows(m.ctx, t8);
    m.out2 = ggml_mul(m.ctx, t8, t7);
    ggml_set_output(m.out1);
    ggml_set_output(m.out2);
    m.graph = ggml_new_graph(m.ctx);
    ggml_build_forward_expand(m.graph, m.out1);
    ggml_build_forward_expand(m.graph, m.out2);
    return m;
}

static void mixed_inputs(struct mixed *m) {
    float x[37 * 9], y[37 * 9], w[37];
    test_seed(77);
    test_fill_uniform(x, 37 * 9, -3.0f, 3.0f);
    test_fill_uniform(y, 37 * 9, -100.0f, 100.0f);
    test_fill_uniform(w, 37, -1.0f, 1.0f);
    tensor_set_f32(m->x, x);
    tensor_set_f32(m->y, y);
    tensor_set_f32(m->w, w);
}

/* Memory reuse changes no result: a liveness-planned run in a NaN-poisoned buffer equals a run
 * where every tensor has memory of its own. */
static void test_poisoned_compute(void) {
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (!cpu) {
        tap_skip("no CPU backend is configured", "poisoned compute");
        return;
    }
    struct mixed ref = mixed_graph();
    ggml_backend_buffer_t all = ggml_backend_alloc_ctx_tensors(ref.ctx, cpu);
    mixed_inputs(&ref);
    const bool ref_ok = ggml_backend_graph_compute(cpu, ref.graph) == GGML_STATUS_SUCCESS;
    float want1[37], want2[9 * 37], got1[37], got2[9 * 37];
    tensor_get_f32(ref.out1, want1);
    tensor_get_f32(ref.out2, want2);

    struct mixed m = mixed_graph();
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu));
    bool ok = ref_ok && ggml_gallocr_alloc_graph(ga, m.graph);
    ggml_backend_buffer_clear(m.out2->buffer, 0xff); /* every byte NaN until written */
    mixed_inputs(&m);
    ok = ok && ggml_backend_graph_compute(cpu, m.graph) == GGML_STATUS_SUCCESS;
    tensor_get_f32(m.out1, got1);
    tensor_get_f32(m.out2, got2);
    tap_ok(ok && max_abs_diff(got1, want1, 37) == 0.0 && max_abs_diff(got2, want2, 9 * 37) == 0.0 && isfinite(want1[0] + want2[0]),
           "a liveness-planned, NaN-poisoned run equals a run without reuse, bit for bit");
    tap_ok(ggml_gallocr_get_buffer_size(ga, 0) < ggml_backend_buffer_get_size(all) && count_conflicts(m.graph) == 0,
           "with less memory: %zu bytes instead of %zu", ggml_gallocr_get_buffer_size(ga, 0), ggml_backend_buffer_get_size(all));
    ggml_gallocr_free(ga);
    ggml_backend_buffer_free(all);
    ggml_free(m.ctx);
    ggml_free(ref.ctx);
    ggml_backend_free(cpu);
}

int main(void) {
    test_tallocr();
    test_alloc_ctx_tensors();
    test_chain();
    test_diamond();
    test_inplace_operands();
    test_random_graphs();
    test_realloc_and_multi();
    test_poisoned_compute();
    return tap_done();
}
