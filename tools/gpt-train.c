/*
 * gpt-train.c - the training loop of ggmlc-gpt (see gpt-train.h): each step trains on batch
 * windows of n_ctx + 1 bytes drawn at random from the text's head, the targets being the inputs
 * shifted by one byte; an epoch is eval_every steps, closed by the loss on fixed windows of the
 * held-out tail and a Keras-style line.
 */
#include "gpt-train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-opt.h"
#include "ggmlc-nn.h"
#include "ggmlc.h"

#define VAL_WINDOWS 64 /* windows of the held-out text scored after each epoch */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The learning rate of each optimizer step: linear warm-up over the first 5% of the steps,
 * then a cosine decay to a tenth. */
struct lr_schedule {
    double peak;
    int64_t steps, step;
    struct ggml_opt_optimizer_params pars;
};

static struct ggml_opt_optimizer_params scheduled_params(void *user) {
    struct lr_schedule *s = user;
    const int64_t warm = s->steps / 20 > 0 ? s->steps / 20 : 1;
    const double t = (double)s->step, lr_min = s->peak / 10;
    double lr = t < (double)warm ? s->peak * (t + 1) / (double)warm
                                 : lr_min + 0.5 * (s->peak - lr_min) *
                                                (1 + cos(M_PI * (t - (double)warm) / (double)(s->steps - warm + 1)));
    s->step++;
    s->pars.adamw.alpha = (float)lr;
    return s->pars;
}

/* GGMLC_DEBUG=gpt-nodes: the training graph's time per kind of node (operation and shapes),
 * summed over the steps and printed at the end, to see where a step's time goes.  The scheduler
 * then computes one node at a time (its evaluation callback), so the total is a little more
 * than a step without it: each node pays its own start of the backend's threads. */
#define PROFILE_KINDS 256

struct node_kind_time {
    char what[112];
    double seconds;
    long count;
};

struct node_profile {
    double last; /* when the previous node finished (set before each graph) */
    int n;
    struct node_kind_time kind[PROFILE_KINDS];
};

static void node_kind(const struct ggml_tensor *t, char *out, size_t size) {
    const struct ggml_tensor *a = t->src[0], *b = t->src[1];
    snprintf(out, size, "%-14s %lldx%lldx%lldx%lld <- %lldx%lldx%lldx%lld, %lldx%lldx%lldx%lld", ggml_op_desc(t),
             (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
             a ? (long long)a->ne[0] : 0, a ? (long long)a->ne[1] : 0, a ? (long long)a->ne[2] : 0, a ? (long long)a->ne[3] : 0,
             b ? (long long)b->ne[0] : 0, b ? (long long)b->ne[1] : 0, b ? (long long)b->ne[2] : 0, b ? (long long)b->ne[3] : 0);
}

static bool profile_node(struct ggml_tensor *t, bool ask, void *user) {
    struct node_profile *p = user;
    if (ask) return !ggml_is_empty(t) && t->op != GGML_OP_NONE && t->op != GGML_OP_VIEW && t->op != GGML_OP_RESHAPE &&
                    t->op != GGML_OP_PERMUTE && t->op != GGML_OP_TRANSPOSE;
    const double now = now_seconds();
    char what[sizeof p->kind[0].what];
    node_kind(t, what, sizeof what);
    int i = 0;
    while (i < p->n && strcmp(p->kind[i].what, what) != 0) i++;
    if (i == p->n && p->n < PROFILE_KINDS) snprintf(p->kind[p->n++].what, sizeof what, "%s", what);
    if (i < p->n) p->kind[i].seconds += now - p->last, p->kind[i].count++;
    p->last = now_seconds();
    return true;
}

static int by_seconds(const void *x, const void *y) {
    const double a = ((const struct node_kind_time *)x)->seconds, b = ((const struct node_kind_time *)y)->seconds;
    return (a < b) - (a > b);
}

static void profile_print(struct node_profile *p, FILE *out) {
    double total = 0;
    for (int i = 0; i < p->n; i++) total += p->kind[i].seconds;
    qsort(p->kind, (size_t)p->n, sizeof p->kind[0], by_seconds);
    fprintf(out, "gpt-nodes: %.1f ms in all\n", 1e3 * total);
    for (int i = 0; i < p->n; i++)
        fprintf(out, "%8.2f ms %5.1f%% %6ld  %s\n", 1e3 * p->kind[i].seconds, 100 * p->kind[i].seconds / total,
                p->kind[i].count, p->kind[i].what);
}

/* A training or validation graph over batch windows: tokens in, one-hot next bytes as labels. */
struct batch_graph {
    struct ggml_context *ctx;
    ggml_backend_sched_t sched;
    ggml_opt_context_t opt;
    int64_t t, b;
    int32_t *tokens;
    float *labels;
    struct node_profile *profile; /* GGMLC_DEBUG=gpt-nodes; NULL: none */
};

static void batch_graph_free(struct batch_graph *g) {
    if (g->opt) ggml_opt_free(g->opt);
    if (g->sched) ggml_backend_sched_free(g->sched);
    if (g->ctx) ggml_free(g->ctx);
    free(g->tokens);
    free(g->labels);
    free(g->profile);
    memset(g, 0, sizeof *g);
}

static bool batch_graph_init(struct batch_graph *g, struct gpt_model *m, ggml_backend_t *backends, int n,
                             int64_t batch, bool train, struct lr_schedule *lr) {
    memset(g, 0, sizeof *g);
    g->t = m->hp.n_ctx, g->b = batch;
    const size_t meta = 8192 * ggml_tensor_overhead();
    g->ctx = ggml_init((struct ggml_init_params){meta, NULL, true});
    g->tokens = malloc((size_t)(g->t * g->b) * sizeof *g->tokens);
    g->labels = calloc((size_t)(g->t * g->b) * GPT_VOCAB, sizeof *g->labels);
    g->sched = ggml_backend_sched_new(backends, NULL, n, 65536, false, true);
    if (!g->ctx || !g->tokens || !g->labels || !g->sched) {
        batch_graph_free(g);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for the training graph"), false;
    }
    struct ggml_tensor *in = ggml_new_tensor_2d(g->ctx, GGML_TYPE_I32, g->t, g->b);
    ggml_set_name(in, "tokens");
    ggml_set_input(in);
    struct ggml_tensor *logits = gpt_forward_train(g->ctx, m, in, train);
    struct ggml_tensor *out = ggml_reshape_2d(g->ctx, logits, GPT_VOCAB, g->t * g->b);
    struct ggml_opt_params p = ggml_opt_default_params(g->sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    p.ctx_compute = g->ctx, p.inputs = in, p.outputs = out;
    p.build_type = train ? GGML_OPT_BUILD_TYPE_OPT : GGML_OPT_BUILD_TYPE_FORWARD;
    if (lr) p.get_opt_pars = scheduled_params, p.get_opt_pars_ud = lr;
    g->opt = ggml_opt_init(p);
    if (!g->opt) batch_graph_free(g);
    return g->opt != NULL;
}

/* Fill the batch from windows starting at starts[0..b) and run it (training: one step). */
static void batch_graph_run(struct batch_graph *g, const unsigned char *text, const size_t *starts,
                            bool train, ggml_opt_result_t result) {
    const size_t rows = (size_t)(g->t * g->b);
    memset(g->labels, 0, rows * GPT_VOCAB * sizeof *g->labels);
    for (int64_t j = 0; j < g->b; j++) {
        const unsigned char *w = text + starts[j];
        for (int64_t i = 0; i < g->t; i++) {
            const size_t row = (size_t)(j * g->t + i);
            g->tokens[row] = w[i];
            g->labels[row * GPT_VOCAB + w[i + 1]] = 1.0f;
        }
    }
    ggml_opt_alloc(g->opt, train);
    ggml_backend_tensor_set(ggml_opt_inputs(g->opt), g->tokens, 0, rows * sizeof *g->tokens);
    ggml_backend_tensor_set(ggml_opt_labels(g->opt), g->labels, 0, rows * GPT_VOCAB * sizeof *g->labels);
    if (g->profile) g->profile->last = now_seconds();
    ggml_opt_eval(g->opt, result);
}

/* Windows of t + 1 bytes spread evenly over [from, to), n of them (fewer if the text is short). */
static int64_t even_windows(size_t from, size_t to, int64_t t, int64_t n, size_t *starts) {
    if (to < from + (size_t)t + 1) return 0;
    const size_t span = to - from - (size_t)t - 1;
    for (int64_t i = 0; i < n; i++) starts[i] = from + (n > 1 ? span * (size_t)i / (size_t)(n - 1) : 0);
    return n;
}

/* Mean loss over the windows, in batches of g->b (the last batch filled by repeating). */
static double windows_loss(struct batch_graph *g, const unsigned char *text, const size_t *starts, int64_t n) {
    ggml_opt_result_t r = ggml_opt_result_init();
    size_t *batch = malloc((size_t)g->b * sizeof *batch);
    double loss = NAN;
    if (r && batch) {
        for (int64_t i = 0; i < n; i += g->b) {
            for (int64_t j = 0; j < g->b; j++) batch[j] = starts[(i + j) % n];
            batch_graph_run(g, text, batch, false, r);
        }
        ggml_opt_result_loss(r, &loss, NULL);
    }
    free(batch);
    ggml_opt_result_free(r);
    return loss;
}

double gpt_text_loss(struct gpt_model *m, ggml_backend_t *backends, int n_backends,
                     const unsigned char *text, size_t len, int n_windows) {
    struct batch_graph g;
    size_t *starts = malloc((size_t)n_windows * sizeof *starts);
    double loss = NAN;
    if (starts && batch_graph_init(&g, m, backends, n_backends, 8, false, NULL)) {
        const int64_t n = even_windows(0, len, m->hp.n_ctx, n_windows, starts);
        if (n > 0) loss = windows_loss(&g, text, starts, n);
        batch_graph_free(&g);
    }
    free(starts);
    return loss;
}

static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state ? *state : 88172645463325252ULL;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *state = x;
}

/* What one epoch reports, in Keras's words. */
static void print_epoch(FILE *out, const struct gpt_train_options *o, int epoch, int epochs,
                        int64_t steps, const struct ggmlc_epoch_logs *l, double tokens_per_s) {
    fprintf(out, "Epoch %d/%d\n%lld/%lld - %.0fs - loss: %.4f - val_loss: %.4f - lr: %.2e - %.0f tokens/s\n",
            epoch + 1, epochs, (long long)steps, (long long)steps, l->seconds, l->loss, l->val_loss,
            l->learning_rate, tokens_per_s);
    (void)o;
    fflush(out);
}

struct train_state {
    struct batch_graph train, val;
    struct lr_schedule lr;
    size_t *starts, *val_starts;
    int64_t n_val;
    size_t split;
    struct ggmlc_epoch_logs *logs;
};

static void train_state_free(struct train_state *s) {
    batch_graph_free(&s->train);
    batch_graph_free(&s->val);
    free(s->starts);
    free(s->val_starts);
    free(s->logs);
}

/* One epoch: eval_every steps (fewer for the last), then the validation loss. */
static bool train_epoch(struct train_state *s, const unsigned char *text, const struct gpt_train_options *o,
                        int epoch, int64_t steps, uint64_t *rng, double *busy, int64_t *timed) {
    ggml_opt_result_t r = ggml_opt_result_init();
    if (!r) return false;
    const int64_t t = s->train.t, b = s->train.b;
    struct ggmlc_progress bar;
    if (!o->quiet) ggmlc_progress_begin(&bar, "train", steps * t * b);
    const double t0 = now_seconds();
    double t_timed = t0; /* the speed leaves out the very first step (placing the graphs) */
    for (int64_t i = 0; i < steps; i++) {
        for (int64_t j = 0; j < b; j++) s->starts[j] = next_random(rng) % (s->split - (size_t)t);
        batch_graph_run(&s->train, text, s->starts, true, r);
        if (!o->quiet) ggmlc_progress_update(&bar, (i + 1) * t * b);
        if (i == 0 && epoch == 0 && steps > 1) t_timed = now_seconds();
        else *timed += 1;
    }
    *busy += now_seconds() - t_timed;
    if (!o->quiet) ggmlc_progress_end(&bar);
    struct ggmlc_epoch_logs *l = &s->logs[epoch];
    *l = (struct ggmlc_epoch_logs){.epoch = epoch, .metric_accuracy = NAN, .metric_mae = NAN,
                                   .val_accuracy = NAN, .val_mae = NAN, .n_outputs = 1};
    ggml_opt_result_loss(r, &l->loss, NULL);
    ggml_opt_result_free(r);
    l->val_loss = s->n_val > 0 ? windows_loss(&s->val, text, s->val_starts, s->n_val) : NAN;
    l->learning_rate = s->lr.pars.adamw.alpha;
    l->seconds = now_seconds() - t0;
    l->output_loss[0] = l->loss, l->val_output_loss[0] = l->val_loss;
    return isfinite(l->loss);
}

bool gpt_train(struct gpt_model *m, ggml_backend_t *backends, int n_backends,
               const unsigned char *text, size_t len, const struct gpt_train_options *o, FILE *out,
               struct gpt_train_result *res) {
    struct train_state s = {0};
    const int64_t t = m->hp.n_ctx;
    s.split = (size_t)((double)len * (1 - o->val_split));
    if (s.split < (size_t)t + 2 || (o->val_split > 0 && len - s.split < (size_t)t + 1)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "the text (%zu bytes) is too short for a context of %lld "
                        "bytes in both its training and validation parts", len, (long long)t);
        return false;
    }
    const int epochs = (int)((o->steps + o->eval_every - 1) / o->eval_every);
    s.lr = (struct lr_schedule){.peak = o->lr, .steps = o->steps,
                                .pars = ggml_opt_get_default_optimizer_params(NULL)};
    s.lr.pars.adamw.wd = 0.01f;
    s.starts = malloc((size_t)o->batch * sizeof *s.starts);
    s.val_starts = malloc(VAL_WINDOWS * sizeof *s.val_starts);
    s.logs = calloc((size_t)epochs, sizeof *s.logs);
    bool ok = s.starts && s.val_starts && s.logs &&
              batch_graph_init(&s.train, m, backends, n_backends, o->batch, true, &s.lr) &&
              batch_graph_init(&s.val, m, backends, n_backends, o->batch < 16 ? o->batch : 16, false, NULL);
    if (ok && ggmlc_debug_enabled("gpt-nodes") && (s.train.profile = calloc(1, sizeof *s.train.profile)))
        ggml_backend_sched_set_eval_callback(s.train.sched, profile_node, s.train.profile);
    if (ok) s.n_val = even_windows(s.split, len, t, VAL_WINDOWS, s.val_starts);
    uint64_t rng = o->seed * 0x9e3779b97f4a7c15ULL + 1;
    double busy = 0;
    int64_t timed = 0;
    int done = 0;
    for (int e = 0; ok && e < epochs; e++, done++) {
        const int64_t steps = e == epochs - 1 ? o->steps - (int64_t)e * o->eval_every : o->eval_every;
        ok = train_epoch(&s, text, o, e, steps, &rng, &busy, &timed);
        if (!ok) ggmlc_set_error(GGMLC_ERR_BACKEND, "training diverged or failed in epoch %d", e + 1);
        if (!o->quiet) print_epoch(out, o, e, epochs, steps, &s.logs[e], (double)(steps * t * o->batch) / s.logs[e].seconds);
    }
    if (s.train.profile) profile_print(s.train.profile, stderr);
    if (ok && o->plot) ok = ggmlc_plot_epochs(s.logs, done, "ggmlc-gpt", o->plot) == GGMLC_OK;
    if (done > 0) {
        res->train_loss = s.logs[done - 1].loss, res->val_loss = s.logs[done - 1].val_loss;
        res->tokens_per_second = (double)(timed * t * o->batch) / busy;
        res->steps = o->steps;
    }
    if (!s.starts || !s.val_starts || !s.logs) ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for training");
    train_state_free(&s);
    return ok;
}
