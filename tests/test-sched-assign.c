/*
 * test-sched-assign.c - where the scheduler puts the nodes of a llama-like graph
 * (get_rows of token embeddings, then per layer rms_norm, norm weight, q/k/v products,
 * rope, soft_max attention, output product, residual, SiLU-gated feed-forward), with
 * ggml's rules (core/sched-plan.c):
 *   (a) every weight in CPU memory: every node on the CPU, no copies;
 *   (b) some layers' weights on the GPU: each layer's nodes with its weights, the nodes
 *       between a CPU layer and a GPU layer on the GPU, as ggml puts the boundary;
 *   (c) no weights (parameters in plain host buffers): every node on the GPU, as before;
 *   (d) op_offload and a batch of 40 tokens: the products with host weights on the GPU;
 *   (e) the CPU's weights in the GPU device's host buffer type (where llama.cpp puts them
 *       when a GPU is present): computed by the CPU as in (a) and (d);
 *   a pinned node where it was pinned; an op the GPU refuses on the CPU, alone.
 * Each case's logits are compared with a CPU-only run of the same model. The "GPU" is an
 * in-process device ("acc": its own buffers the CPU cannot use, its kernels run by the
 * CPU backend on that memory) and, when the Vulkan plugin finds a device, Vulkan too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc-plugin.h"
#include "host-buffer.h"
#include "testutil.h"

/* ----------------------------------------------------- the acc device */

static ggml_backend_t cpu_backend, acc_backend;
static ggml_backend_buffer_type_t acc_buft;
static int acc_misplaced; /* tensors an acc kernel found outside acc memory */

/* Each acc buffer with a CPU buffer over the same memory, for the CPU kernels that stand
 * in for acc's. Newest last: a new buffer may reuse a freed one's address. */
static struct {
    ggml_backend_buffer_t acc, alias;
} acc_bufs[256];
static int n_acc_bufs;

static ggml_backend_buffer_t acc_alloc(ggml_backend_buffer_type_t t, size_t size) {
    ggml_backend_buffer_t b = host_buffer_new(t, size, 64, 0xff); /* NaN-poisoned */
    if (!b || n_acc_bufs == 256) return b;
    acc_bufs[n_acc_bufs].acc = b;
    acc_bufs[n_acc_bufs++].alias = ggml_backend_cpu_buffer_from_ptr(ggml_backend_buffer_get_base(b), size ? size : 1);
    return b;
}

static ggml_backend_buffer_t alias_of(const struct ggml_tensor *t) {
    const struct ggml_tensor *st = t->view_src ? t->view_src : t;
    if (!st->buffer || ggml_backend_buffer_get_type(st->buffer) != acc_buft) return NULL;
    for (int i = n_acc_bufs - 1; i >= 0; i--) {
        if (acc_bufs[i].acc == st->buffer) return acc_bufs[i].alias;
    }
    return NULL;
}

/* A tensor of ctx on the same bytes as t, in t's CPU alias buffer; NULL if t is not in acc memory. */
static struct ggml_tensor *host_twin(struct ggml_context *ctx, const struct ggml_tensor *t) {
    ggml_backend_buffer_t alias = alias_of(t);
    if (!alias) return NULL;
    struct ggml_tensor *r = ggml_new_tensor(ctx, t->type, GGML_MAX_DIMS, t->ne);
    memcpy(r->nb, t->nb, sizeof r->nb);
    return ggml_backend_tensor_alloc(alias, r, t->data) == GGML_STATUS_SUCCESS ? r : NULL;
}

/* acc's kernel for every op: the CPU backend computes the node on acc's memory. */
static enum ggml_status acc_run(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    (void)call;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){
        .mem_size = (GGML_MAX_SRC + 2) * ggml_tensor_overhead() + ggml_graph_overhead_custom(16, false), .no_alloc = true});
    struct ggml_tensor *twin = host_twin(ctx, dst);
    bool placed = twin != NULL;
    for (int s = 0; placed && s < GGML_MAX_SRC; s++) {
        if (dst->src[s]) placed = (twin->src[s] = host_twin(ctx, dst->src[s])) != NULL;
    }
    enum ggml_status st = GGML_STATUS_FAILED;
    if (placed) {
        twin->op = dst->op;
        memcpy(twin->op_params, dst->op_params, sizeof dst->op_params);
        struct ggml_cgraph *g = ggml_new_graph_custom(ctx, 16, false);
        ggml_build_forward_expand(g, twin);
        st = ggml_backend_graph_compute(cpu_backend, g);
    } else {
        acc_misplaced++;
    }
    ggml_free(ctx);
    return st;
}

static ggmlc_op_fn acc_ops[GGML_OP_COUNT];
static enum ggml_op acc_refused = GGML_OP_COUNT; /* an op acc's supports_op refuses */

static bool acc_supports(ggml_backend_dev_t dev, const struct ggml_tensor *op) { return op->op != acc_refused; }

static const char *acc_name(ggml_backend_dev_t dev) { return "acc"; }
static const char *acc_backend_name(ggml_backend_t b) { return "acc"; }
static void acc_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total) { *free_mem = *total = 1u << 30; }
static enum ggml_backend_dev_type acc_type(ggml_backend_dev_t dev) { return GGML_BACKEND_DEVICE_TYPE_GPU; }
static ggml_backend_t acc_init(ggml_backend_dev_t dev, const char *params) {
    static const struct ggmlc_backend_iface iface = {.struct_size = sizeof iface, .get_name = acc_backend_name};
    return ggmlc_backend_new(dev, &iface, NULL);
}
static ggml_backend_buffer_type_t acc_dev_buft(ggml_backend_dev_t dev) { return acc_buft; }
static bool acc_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) { return buft == acc_buft; }
/* like Vulkan's: host weights are worth copying over for batched products only */
static bool acc_offload(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    return op->op == GGML_OP_MUL_MAT && op->ne[1] >= 32;
}
static const char *acc_buft_name(ggml_backend_buffer_type_t t) { return "acc"; }
static size_t acc_align(ggml_backend_buffer_type_t t) { return 64; }

/* acc's host buffer type: plain host memory the CPU computes on (ggmlc_host_buffer_new). */
static ggml_backend_buffer_type_t acc_host_buft;
static const char *acc_host_name(ggml_backend_buffer_type_t t) { return "acc_Host"; }
static bool acc_host_is_host(ggml_backend_buffer_type_t t) { return true; }
static ggml_backend_buffer_type_t acc_dev_host_buft(ggml_backend_dev_t dev) { return acc_host_buft; }

static ggml_backend_t make_acc(void) {
    static const enum ggml_op ops[] = {GGML_OP_GET_ROWS, GGML_OP_RMS_NORM, GGML_OP_MUL, GGML_OP_ADD,  GGML_OP_MUL_MAT,
                                       GGML_OP_ROPE,     GGML_OP_SOFT_MAX, GGML_OP_CONT, GGML_OP_UNARY, GGML_OP_CPY};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) acc_ops[ops[i]] = acc_run;
    static const struct ggmlc_reg_iface reg_iface = {.struct_size = sizeof reg_iface};
    ggml_backend_reg_t reg = ggmlc_reg_new("schedassign", &reg_iface, NULL);
    const struct ggmlc_device_iface iface = {
        .struct_size = sizeof iface, .get_name = acc_name, .get_description = acc_name, .get_memory = acc_memory,
        .get_type = acc_type, .init_backend = acc_init, .get_buffer_type = acc_dev_buft,
        .get_host_buffer_type = acc_dev_host_buft, .ops = acc_ops,
        .n_ops = GGML_OP_COUNT, .supports_op = acc_supports, .supports_buft = acc_supports_buft, .offload_op = acc_offload,
    };
    ggml_backend_dev_t dev = ggmlc_device_new(reg, &iface, NULL);
    static const struct ggmlc_buft_iface biface = {
        .struct_size = sizeof biface, .get_name = acc_buft_name, .alloc_buffer = acc_alloc, .get_alignment = acc_align,
    };
    acc_buft = ggmlc_buft_new(dev, &biface, NULL);
    static const struct ggmlc_buft_iface hiface = {
        .struct_size = sizeof hiface, .get_name = acc_host_name, .alloc_buffer = ggmlc_host_buffer_new,
        .get_alignment = acc_align, .is_host = acc_host_is_host,
    };
    acc_host_buft = ggmlc_buft_new(dev, &hiface, NULL);
    return ggml_backend_dev_init(dev, NULL);
}

/* ---------------------------------------------------------- the model */

enum { EMBD = 64, HEADS = 4, HEAD_DIM = 16, FF = 96, VOCAB = 40, LAYERS = 4, MAX_WEIGHTS = 64 };
enum { ON_GPU, ON_CPU };

struct layer {
    struct ggml_tensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
};

struct model {
    struct ggml_context *wctx[2]; /* weights on the GPU, on the CPU */
    ggml_backend_buffer_t wbuf[2];
    struct ggml_tensor *tok_embd, *rope_freqs, *out_norm, *output;
    struct layer layers[LAYERS];
    struct ggml_tensor *weights[MAX_WEIGHTS];
    int weight_dev[MAX_WEIGHTS], n_weights;
};

/* A weight of the context of device dev, named. */
static struct ggml_tensor *weight(struct model *m, int dev, int64_t ne0, int64_t ne1, const char *name, int il) {
    struct ggml_tensor *t = ne1 ? ggml_new_tensor_2d(m->wctx[dev], GGML_TYPE_F32, ne0, ne1)
                                : ggml_new_tensor_1d(m->wctx[dev], GGML_TYPE_F32, ne0);
    if (il >= 0) ggml_format_name(t, "%s.%d", name, il);
    else ggml_set_name(t, name);
    m->weights[m->n_weights] = t;
    m->weight_dev[m->n_weights++] = dev;
    return t;
}

/* layer_dev[l]: where layer l's weights live; the token embeddings and rope frequencies stay
 * on the CPU (as llama.cpp keeps them), the output goes with the last layer. usage: of the
 * weights' buffers (ANY: they are no weights to the scheduler). gpu_host: the CPU's weights
 * in gpu's host buffer type rather than the CPU's. */
static struct model model_new(ggml_backend_t gpu, const int *layer_dev, enum ggml_backend_buffer_usage usage,
                              bool gpu_host) {
    struct model m = {0};
    for (int d = 0; d < 2; d++)
        m.wctx[d] = ggml_init((struct ggml_init_params){.mem_size = MAX_WEIGHTS * ggml_tensor_overhead(), .no_alloc = true});
    m.tok_embd = weight(&m, ON_CPU, EMBD, VOCAB, "token_embd", -1);
    m.rope_freqs = weight(&m, ON_CPU, HEAD_DIM / 2, 0, "rope_freqs", -1);
    for (int l = 0; l < LAYERS; l++) {
        const int d = layer_dev[l];
        struct layer *L = &m.layers[l];
        L->attn_norm = weight(&m, d, EMBD, 0, "attn_norm", l);
        L->wq = weight(&m, d, EMBD, EMBD, "wq", l);
        L->wk = weight(&m, d, EMBD, EMBD, "wk", l);
        L->wv = weight(&m, d, EMBD, EMBD, "wv", l);
        L->wo = weight(&m, d, EMBD, EMBD, "wo", l);
        L->ffn_norm = weight(&m, d, EMBD, 0, "ffn_norm", l);
        L->gate = weight(&m, d, EMBD, FF, "ffn_gate", l);
        L->up = weight(&m, d, EMBD, FF, "ffn_up", l);
        L->down = weight(&m, d, FF, EMBD, "ffn_down", l);
    }
    m.out_norm = weight(&m, layer_dev[LAYERS - 1], EMBD, 0, "output_norm", -1);
    m.output = weight(&m, layer_dev[LAYERS - 1], EMBD, VOCAB, "output", -1);
    ggml_backend_t owner[2] = {gpu, cpu_backend};
    for (int d = 0; d < 2; d++) {
        if (!ggml_get_first_tensor(m.wctx[d])) continue;
        ggml_backend_buffer_type_t host = ggml_backend_dev_host_buffer_type(ggml_backend_get_device(gpu));
        m.wbuf[d] = d == ON_CPU && gpu_host ? ggml_backend_alloc_ctx_tensors_from_buft(m.wctx[d], host)
                                            : ggml_backend_alloc_ctx_tensors(m.wctx[d], owner[d]);
        ggml_backend_buffer_set_usage(m.wbuf[d], usage);
    }
    /* the same values wherever a weight lives: a function of its index and element */
    for (int w = 0; w < m.n_weights; w++) {
        const int64_t n = ggml_nelements(m.weights[w]);
        float *v = malloc((size_t)n * sizeof *v);
        const bool norm = m.weights[w]->ne[1] == 1;
        for (int64_t i = 0; i < n; i++) {
            const float u = (float)((i * 7919 + w * 104729) % 2003) / 2003.0f - 0.5f;
            v[i] = norm ? 1.0f + 0.5f * u : 0.25f * u;
        }
        if (m.weights[w] == m.rope_freqs)
            for (int64_t i = 0; i < n; i++) v[i] = 1.0f + 0.25f * (float)i;
        ggml_backend_tensor_set(m.weights[w], v, 0, (size_t)n * sizeof *v);
        free(v);
    }
    return m;
}

static void model_free(struct model *m) {
    for (int d = 0; d < 2; d++) {
        ggml_backend_buffer_free(m->wbuf[d]);
        ggml_free(m->wctx[d]);
    }
}

/* The device of w if it is one of m's weights, else -1. */
static int weight_device(const struct model *m, const struct ggml_tensor *t) {
    const struct ggml_tensor *st = t->view_src ? t->view_src : t;
    for (int w = 0; w < m->n_weights; w++) {
        if (m->weights[w] == st) return m->weight_dev[w];
    }
    return -1;
}

struct graph {
    struct ggml_context *ctx;
    struct ggml_cgraph *g;
    struct ggml_tensor *tokens, *pos, *logits;
    int n_tokens;
};

static struct ggml_tensor *named(struct ggml_tensor *t, const char *name, int il) {
    ggml_format_name(t, "%s-%d", name, il);
    return t;
}

/* Self-attention of layer l over the batch (no mask, no cache: every token sees every other). */
static struct ggml_tensor *attention(struct ggml_context *ctx, const struct model *m, const struct graph *gr,
                                     struct ggml_tensor *h, int l) {
    const struct layer *L = &m->layers[l];
    const int T = gr->n_tokens;
    struct ggml_tensor *q = ggml_reshape_3d(ctx, named(ggml_mul_mat(ctx, L->wq, h), "Qcur", l), HEAD_DIM, HEADS, T);
    struct ggml_tensor *k = ggml_reshape_3d(ctx, named(ggml_mul_mat(ctx, L->wk, h), "Kcur", l), HEAD_DIM, HEADS, T);
    struct ggml_tensor *v = ggml_reshape_3d(ctx, named(ggml_mul_mat(ctx, L->wv, h), "Vcur", l), HEAD_DIM, HEADS, T);
    q = named(ggml_rope_ext(ctx, q, gr->pos, m->rope_freqs, HEAD_DIM, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
              "Qrope", l);
    k = named(ggml_rope_ext(ctx, k, gr->pos, m->rope_freqs, HEAD_DIM, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
              "Krope", l);
    k = ggml_permute(ctx, k, 0, 2, 1, 3); /* [hd, T, heads] */
    q = ggml_permute(ctx, q, 0, 2, 1, 3);
    struct ggml_tensor *kq = named(ggml_mul_mat(ctx, k, q), "kq", l);
    kq = named(ggml_soft_max_ext(ctx, kq, NULL, 1.0f / sqrtf((float)HEAD_DIM), 0.0f), "kq_soft_max", l);
    struct ggml_tensor *vt = named(ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3)), "v_t", l); /* [T, hd, heads] */
    struct ggml_tensor *kqv = named(ggml_mul_mat(ctx, vt, kq), "kqv", l);                    /* [hd, T, heads] */
    struct ggml_tensor *o = named(ggml_cont_2d(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3), EMBD, T), "kqv_merged", l);
    return named(ggml_mul_mat(ctx, L->wo, o), "attn_out", l);
}

static struct graph graph_new(const struct model *m, int n_tokens) {
    struct graph gr = {.n_tokens = n_tokens};
    const size_t mem = 1024 * ggml_tensor_overhead() + ggml_graph_overhead();
    gr.ctx = ggml_init((struct ggml_init_params){.mem_size = mem, .no_alloc = true});
    struct ggml_context *ctx = gr.ctx;
    gr.tokens = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_tokens);
    gr.pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_tokens);
    ggml_set_name(gr.tokens, "inp_tokens");
    ggml_set_name(gr.pos, "inp_pos");
    ggml_set_input(gr.tokens);
    ggml_set_input(gr.pos);
    struct ggml_tensor *x = named(ggml_get_rows(ctx, m->tok_embd, gr.tokens), "inp_embd", 0);
    for (int l = 0; l < LAYERS; l++) {
        const struct layer *L = &m->layers[l];
        struct ggml_tensor *h = named(ggml_rms_norm(ctx, x, 1e-5f), "norm", l);
        h = named(ggml_mul(ctx, h, L->attn_norm), "attn_norm", l);
        x = named(ggml_add(ctx, attention(ctx, m, &gr, h, l), x), "ffn_inp", l);
        h = named(ggml_mul(ctx, named(ggml_rms_norm(ctx, x, 1e-5f), "ffn_norm_raw", l), L->ffn_norm), "ffn_norm", l);
        struct ggml_tensor *g = named(ggml_silu(ctx, named(ggml_mul_mat(ctx, L->gate, h), "ffn_gate", l)), "ffn_silu", l);
        g = named(ggml_mul(ctx, g, named(ggml_mul_mat(ctx, L->up, h), "ffn_up", l)), "ffn_gate_par", l);
        x = named(ggml_add(ctx, named(ggml_mul_mat(ctx, L->down, g), "ffn_out", l), x), "l_out", l);
    }
    x = named(ggml_mul(ctx, named(ggml_rms_norm(ctx, x, 1e-5f), "result_norm_raw", 0), m->out_norm), "result_norm", 0);
    gr.logits = named(ggml_mul_mat(ctx, m->output, x), "result_output", 0);
    ggml_set_output(gr.logits);
    gr.g = ggml_new_graph(ctx);
    ggml_build_forward_expand(gr.g, gr.logits);
    return gr;
}

static void set_tokens(struct graph *gr) {
    int32_t tok[64], pos[64];
    for (int i = 0; i < gr->n_tokens; i++) {
        tok[i] = (i * 17 + 3) % VOCAB;
        pos[i] = i;
    }
    ggml_backend_tensor_set(gr->tokens, tok, 0, (size_t)gr->n_tokens * sizeof(int32_t));
    ggml_backend_tensor_set(gr->pos, pos, 0, (size_t)gr->n_tokens * sizeof(int32_t));
}

/* Compute gr with sched; the logits into out. */
static bool run(ggml_backend_sched_t sched, struct graph *gr, float *out) {
    if (!ggml_backend_sched_alloc_graph(sched, gr->g)) return false;
    set_tokens(gr);
    if (ggml_backend_sched_graph_compute(sched, gr->g) != GGML_STATUS_SUCCESS) return false;
    ggml_backend_tensor_get(gr->logits, out, 0, ggml_nbytes(gr->logits));
    return true;
}

/* The logits of the model with every weight on the CPU, computed by the CPU alone. */
static void reference(ggml_backend_t gpu, int n_tokens, float *out) {
    static const int all_cpu[LAYERS] = {ON_CPU, ON_CPU, ON_CPU, ON_CPU};
    struct model m = model_new(gpu, all_cpu, GGML_BACKEND_BUFFER_USAGE_WEIGHTS, false);
    struct graph gr = graph_new(&m, n_tokens);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu_backend, NULL, 1, 2048, false, false);
    if (!run(sched, &gr, out)) tap_diag("the CPU-only reference failed: %s", ggmlc_last_error());
    ggml_backend_sched_free(sched);
    ggml_free(gr.ctx);
    model_free(&m);
}

/* ------------------------------------------------------ expectations */

/* Where ggml's rules put each computing node when both backends compute every op: a node
 * reading a weight (ROPE aside) goes with it, or to the GPU when it asks for the op
 * (op_offload: products of 32 columns or more, weight in host memory); every other node
 * goes to the GPU when the nearest such node before or after it is on the GPU, else to
 * the CPU; in a graph without weights everything goes to the GPU. */
static int fixed_device(const struct model *m, const struct ggml_tensor *node, bool weights, bool offload) {
    if (!weights || node->op == GGML_OP_ROPE) return -1;
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        const int d = node->src[s] ? weight_device(m, node->src[s]) : -1;
        if (d < 0) continue;
        return d == ON_CPU && offload && node->op == GGML_OP_MUL_MAT && node->ne[1] >= 32 ? ON_GPU : d;
    }
    return -1;
}

static void expected_devices(const struct model *m, struct ggml_cgraph *g, bool weights, bool offload, int *want) {
    const int n = ggml_graph_n_nodes(g);
    int *fixed = malloc((size_t)n * sizeof *fixed); /* -2: a view */
    bool any = false;
    for (int i = 0; i < n; i++) {
        const struct ggml_tensor *node = ggml_graph_node(g, i);
        fixed[i] = ggmlc_op_is_view(node->op) ? -2 : fixed_device(m, node, weights, offload);
        any = any || fixed[i] >= 0;
    }
    for (int i = 0; i < n; i++) {
        int before = -1, after = -1;
        for (int j = i - 1; j >= 0 && before < 0; j--) before = fixed[j] >= 0 ? fixed[j] : -1;
        for (int j = i + 1; j < n && after < 0; j++) after = fixed[j] >= 0 ? fixed[j] : -1;
        if (fixed[i] != -1) want[i] = fixed[i];
        else want[i] = !any || before == ON_GPU || after == ON_GPU ? ON_GPU : ON_CPU;
    }
    free(fixed);
}

/* Every computing node where expected_devices puts it; views with the tensor they view. */
static bool placed_as_expected(ggml_backend_sched_t sched, const struct model *m, struct ggml_cgraph *g, bool weights,
                               bool offload, ggml_backend_t gpu, char *first_wrong, size_t len) {
    const int n = ggml_graph_n_nodes(g);
    int *want = malloc((size_t)n * sizeof *want);
    expected_devices(m, g, weights, offload, want);
    ggml_backend_t devs[2] = {gpu, cpu_backend};
    bool all = true;
    for (int i = 0; i < n && all; i++) {
        struct ggml_tensor *node = ggml_graph_node(g, i);
        ggml_backend_t got = ggml_backend_sched_get_tensor_backend(sched, node);
        ggml_backend_t should = want[i] >= 0 ? devs[want[i]] : NULL;
        if (want[i] == -2 && node->view_src && node->view_src->op != GGML_OP_NONE)
            should = ggml_backend_sched_get_tensor_backend(sched, node->view_src);
        if (should && got != should) {
            snprintf(first_wrong, len, "'%s' (%s) on %s, not %s", node->name, ggml_op_desc(node),
                     got ? ggml_backend_name(got) : "none", ggml_backend_name(should));
            all = false;
        }
    }
    free(want);
    return all;
}

static ggml_backend_t backend_of_node(ggml_backend_sched_t sched, struct ggml_cgraph *g, const char *name) {
    struct ggml_tensor *t = ggml_graph_get_tensor(g, name);
    return t ? ggml_backend_sched_get_tensor_backend(sched, t) : NULL;
}

/* Every computing node on a backend that computes it. */
static bool all_supported(ggml_backend_sched_t sched, struct ggml_cgraph *g, char *first_wrong, size_t len) {
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        struct ggml_tensor *node = ggml_graph_node(g, i);
        ggml_backend_t b = ggml_backend_sched_get_tensor_backend(sched, node);
        if (!ggmlc_op_is_view(node->op) && !(b && ggml_backend_supports_op(b, node))) {
            snprintf(first_wrong, len, "'%s' (%s) on %s", node->name, ggml_op_desc(node), b ? ggml_backend_name(b) : "none");
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------- cases */

struct scenario {
    const char *what;
    int layer_dev[LAYERS];
    enum ggml_backend_buffer_usage usage;
    int n_tokens;
    bool offload;
    int n_splits;   /* expected; -1: not checked */
    const char *pin; /* a node pinned to the GPU, or NULL */
    enum ggml_op refuse; /* an op the GPU refuses (acc only), or GGML_OP_COUNT */
    bool gpu_host;       /* the CPU's weights in the GPU's host buffer type */
};

static void check_scenario(ggml_backend_t gpu, const struct scenario *sc) {
    const char *gname = ggml_backend_name(gpu);
    float *ref = malloc(VOCAB * 64 * sizeof(float)), *out = malloc(VOCAB * 64 * sizeof(float));
    reference(gpu, sc->n_tokens, ref);
    struct model m = model_new(gpu, sc->layer_dev, sc->usage, sc->gpu_host);
    struct graph gr = graph_new(&m, sc->n_tokens);
    ggml_backend_t bk[2] = {gpu, cpu_backend};
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 2048, false, sc->offload);
    if (sc->pin) ggml_backend_sched_set_tensor_backend(sched, ggml_graph_get_tensor(gr.g, sc->pin), gpu);
    acc_misplaced = 0;
    acc_refused = sc->refuse;
    const bool ok = run(sched, &gr, out);
    acc_refused = GGML_OP_COUNT;
    const size_t n = (size_t)VOCAB * (size_t)sc->n_tokens;
    tap_ok(ok && acc_misplaced == 0 && nmse(out, ref, n) < 1e-6, "%s, %s: logits equal the CPU-only run's (nmse %.2g)%s%s",
           gname, sc->what, ok ? nmse(out, ref, n) : -1.0, ok ? "" : ": ", ok ? "" : ggmlc_last_error());
    const bool weights = sc->usage == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
    char wrong[256] = "";
    if (sc->pin) {
        tap_ok(backend_of_node(sched, gr.g, sc->pin) == gpu, "%s, %s: the pinned node '%s' runs on %s", gname, sc->what,
               sc->pin, gname);
    } else if (sc->refuse != GGML_OP_COUNT) {
        /* in the GPU layers, soft_max alone goes to the CPU (the backend reading most of its
         * sources among those computing it); its neighbours stay */
        tap_ok(all_supported(sched, gr.g, wrong, sizeof wrong) && backend_of_node(sched, gr.g, "kq_soft_max-1") == cpu_backend &&
                   backend_of_node(sched, gr.g, "kq-1") == gpu && backend_of_node(sched, gr.g, "kqv-1") == gpu,
               "%s, %s: every node on a backend that computes it, only soft_max on the CPU in GPU layers%s%s", gname,
               sc->what, wrong[0] ? ": " : "", wrong);
    } else {
        tap_ok(placed_as_expected(sched, &m, gr.g, weights, sc->offload, gpu, wrong, sizeof wrong),
               "%s, %s: every node where ggml puts it%s%s", gname, sc->what, wrong[0] ? ": " : "", wrong);
    }
    if (sc->n_splits >= 0)
        tap_ok(ggml_backend_sched_get_n_splits(sched) == sc->n_splits, "%s, %s: %d splits (got %d, %d copies)", gname, sc->what,
               sc->n_splits, ggml_backend_sched_get_n_splits(sched), ggml_backend_sched_get_n_copies(sched));
    if (sc->n_splits == 1 && sc->layer_dev[0] == ON_CPU && weights)
        tap_ok(ggml_backend_sched_get_n_copies(sched) == 0, "%s, %s: no copies (got %d)", gname, sc->what,
               ggml_backend_sched_get_n_copies(sched));
    ggml_backend_sched_free(sched);
    ggml_free(gr.ctx);
    model_free(&m);
    free(ref);
    free(out);
}

/* The boundary between a CPU layer and a GPU layer lies where ggml puts it: the nodes
 * without weights between them go to the GPU. */
static void check_boundaries(ggml_backend_t gpu) {
    const char *gname = ggml_backend_name(gpu);
    static const int gpu_first[LAYERS] = {ON_GPU, ON_GPU, ON_CPU, ON_CPU};
    static const int cpu_first[LAYERS] = {ON_CPU, ON_CPU, ON_GPU, ON_GPU};
    const int *arrangements[2] = {gpu_first, cpu_first};
    for (int a = 0; a < 2; a++) {
        struct model m = model_new(gpu, arrangements[a], GGML_BACKEND_BUFFER_USAGE_WEIGHTS, false);
        struct graph gr = graph_new(&m, 3);
        ggml_backend_t bk[2] = {gpu, cpu_backend};
        ggml_backend_sched_t sched = ggml_backend_sched_new(bk, NULL, 2, 2048, false, true);
        float out[VOCAB * 3];
        run(sched, &gr, out);
        if (a == 0) {
            tap_ok(backend_of_node(sched, gr.g, "l_out-1") == gpu && backend_of_node(sched, gr.g, "norm-2") == gpu &&
                       backend_of_node(sched, gr.g, "attn_norm-2") == cpu_backend,
                   "%s: after GPU layers 0-1, layer 2's rms_norm still runs on the GPU, its norm weight's mul on the CPU",
                   gname);
        } else {
            tap_ok(backend_of_node(sched, gr.g, "ffn_out-1") == cpu_backend && backend_of_node(sched, gr.g, "l_out-1") == gpu &&
                       backend_of_node(sched, gr.g, "norm-2") == gpu,
                   "%s: before GPU layers 2-3, layer 1's last residual add runs on the GPU already", gname);
        }
        tap_ok(backend_of_node(sched, gr.g, a == 0 ? "Qrope-0" : "Qrope-3") == gpu &&
                   backend_of_node(sched, gr.g, a == 0 ? "Qrope-3" : "Qrope-0") == cpu_backend,
               "%s: rope stays in its layer although its frequency factors are CPU weights", gname);
        ggml_backend_sched_free(sched);
        ggml_free(gr.ctx);
        model_free(&m);
    }
}

/* The GPU device's host buffer type: host memory, the CPU's to compute on, not the GPU's. */
static void check_host_buffer_type(ggml_backend_t gpu) {
    ggml_backend_dev_t dev = ggml_backend_get_device(gpu), cpu = ggml_backend_get_device(cpu_backend);
    ggml_backend_buffer_type_t host = ggml_backend_dev_host_buffer_type(dev);
    struct ggml_backend_dev_props props;
    ggml_backend_dev_get_props(dev, &props);
    const char *name = host ? ggml_backend_buft_name(host) : "";
    tap_ok(host && props.caps.host_buffer && ggml_backend_buft_is_host(host) && strstr(name, "_Host") &&
               ggml_backend_buft_get_device(host) == dev && !ggml_backend_dev_supports_buft(dev, host) &&
               ggml_backend_dev_supports_buft(cpu, host),
           "%s: a host buffer type (%s): host memory, the CPU's to compute on, not the device's", ggml_backend_name(gpu),
           name);
    ggml_backend_buffer_t empty = host ? ggml_backend_buft_alloc_buffer(host, 0) : NULL;
    tap_ok(empty && ggml_backend_buffer_get_size(empty) == 0, "%s: its empty buffer (llama.cpp's probe of a buffer type)",
           ggml_backend_name(gpu));
    ggml_backend_buffer_free(empty);
}

static void check_gpu(ggml_backend_t gpu) {
    const enum ggml_backend_buffer_usage W = GGML_BACKEND_BUFFER_USAGE_WEIGHTS, ANY = GGML_BACKEND_BUFFER_USAGE_ANY;
    const enum ggml_op NONE = GGML_OP_COUNT;
    const struct scenario scenarios[] = {
        /* what, layers' weights, usage, tokens, op_offload, splits, pinned, refused */
        {"(a) all weights on the CPU", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, W, 3, true, 1, NULL, NONE},
        {"(b) layers 0-1 on the GPU", {ON_GPU, ON_GPU, ON_CPU, ON_CPU}, W, 3, true, 3, NULL, NONE},
        {"(b) layers 2-3 on the GPU", {ON_CPU, ON_CPU, ON_GPU, ON_GPU}, W, 3, true, 2, NULL, NONE},
        {"(b) layers 1 and 3 on the GPU", {ON_CPU, ON_GPU, ON_CPU, ON_GPU}, W, 3, true, -1, NULL, NONE},
        {"(c) no weights", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, ANY, 3, true, 1, NULL, NONE},
        {"(d) op_offload, 40 tokens", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, W, 40, true, -1, NULL, NONE},
        {"(d) no op_offload, 40 tokens", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, W, 40, false, 1, NULL, NONE},
        {"(a) with a pinned node", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, W, 3, true, -1, "kq_soft_max-1", NONE},
        {"(e) weights in its host buffer type", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, W, 3, true, 1, NULL, NONE, true},
        {"(e) weights in its host buffer type, op_offload, 40 tokens", {ON_CPU, ON_CPU, ON_CPU, ON_CPU}, W, 40, true, -1,
         NULL, NONE, true},
    };
    check_host_buffer_type(gpu);
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) check_scenario(gpu, &scenarios[i]);
    if (ggml_backend_get_device(gpu) == ggml_backend_get_device(acc_backend)) {
        const struct scenario refusing = {"(b) layers 1 and 3 on the GPU, which refuses SOFT_MAX",
                                          {ON_CPU, ON_GPU, ON_CPU, ON_GPU}, GGML_BACKEND_BUFFER_USAGE_WEIGHTS, 3, true, -1,
                                          NULL, GGML_OP_SOFT_MAX};
        check_scenario(gpu, &refusing);
    }
    check_boundaries(gpu);
}

/* The Vulkan device, when the plugin is built and finds one; every op of the graph must be
 * supported for the placement rules above to hold. */
static ggml_backend_t vulkan_backend(void) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return NULL;
    return ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
}

int main(void) {
    const char *build_dir = getenv("GGMLC_BUILDDIR");
    char ini[1024];
    snprintf(ini, sizeof ini, "%s/tests/ggmlc-test-vulkan.ini", build_dir ? build_dir : ".");
    if (build_dir && access(ini, R_OK) == 0) test_vulkan_env();
    cpu_backend = ggml_backend_cpu_init();
    if (!cpu_backend) return tap_skip_all(ggmlc_last_error());
    ggml_backend_t acc = acc_backend = make_acc();
    check_gpu(acc);
    ggml_backend_t vk = vulkan_backend();
    if (vk) check_gpu(vk);
    else tap_diag("no Vulkan device: the Vulkan cases are skipped");
    ggml_backend_free(vk);
    ggml_backend_free(acc);
    for (int i = 0; i < n_acc_bufs; i++) ggml_backend_buffer_free(acc_bufs[i].alias); /* they own no memory */
    ggml_backend_free(cpu_backend);
    return tap_done();
}
