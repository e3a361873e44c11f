/*
 * test-train-repro.c - bit-identical training across refactorings: a few steps with fixed seeds
 * through ggml-opt (ggml_opt_fit, AdamW and SGD, MSE and cross-entropy, shuffled, gradient
 * accumulation) and through the model API (AdamW with clipping by norm, SGD with momentum and
 * clipping by value, plain SGD; dropout, shuffling, BCE and cross-entropy).  The trained weights
 * are hashed (FNV-1a over their bytes) and compared with the hashes recorded on the tree before
 * the shared optimizer module (core/optimizer.c) replaced the two training stacks' own code.
 *
 * The recorded values hold for the CPU backend of this build; `test-train-repro --print` prints
 * the hashes of the current build, to record them again after an intended change of results.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "ggmlc-nn.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N_IN = 3, N_HIDDEN = 8, N_OUT = 4, N_DATA = 64, BATCH = 8 };

static bool print_only;

#define FNV_OFFSET 0xcbf29ce484222325ull

static uint64_t fnv1a(uint64_t h, const void *data, size_t size) {
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void check_hash(uint64_t got, uint64_t want, const char *what) {
    if (print_only) {
        printf("%s 0x%016llxull\n", what, (unsigned long long)got);
        return;
    }
    tap_ok(got == want, "%s: weights hash 0x%016llx, recorded 0x%016llx", what,
           (unsigned long long)got, (unsigned long long)want);
}

/* --------------------------------------------------------------- ggml-opt */

struct mlp {
    struct ggml_context *ctx_static, *ctx_compute;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *inputs, *out, *params[4];
};

static void mlp_init(struct mlp *m, ggml_backend_t backend) {
    m->ctx_static = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead(), NULL, true});
    m->inputs = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_IN, BATCH);
    m->params[0] = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_IN, N_HIDDEN);
    m->params[1] = ggml_new_tensor_1d(m->ctx_static, GGML_TYPE_F32, N_HIDDEN);
    m->params[2] = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_HIDDEN, N_OUT);
    m->params[3] = ggml_new_tensor_1d(m->ctx_static, GGML_TYPE_F32, N_OUT);
    ggml_set_input(m->inputs);
    m->buf = ggml_backend_alloc_ctx_tensors(m->ctx_static, backend);
    test_seed(7);
    for (int i = 0; i < 4; i++) {
        const int64_t n = ggml_nelements(m->params[i]);
        float *v = malloc(sizeof(float) * (size_t)n);
        for (int64_t j = 0; j < n; j++) v[j] = test_uniform(-0.5f, 0.5f);
        ggml_backend_tensor_set(m->params[i], v, 0, sizeof(float) * (size_t)n);
        free(v);
        ggml_set_param(m->params[i]);
    }
    const size_t size = 64 * ggml_tensor_overhead() + ggml_graph_overhead();
    m->ctx_compute = ggml_init((struct ggml_init_params){size, NULL, true});
    struct ggml_context *c = m->ctx_compute;
    struct ggml_tensor *h = ggml_mul_mat(c, m->params[0], m->inputs);
    h = ggml_tanh(c, ggml_add(c, h, m->params[1]));
    m->out = ggml_add(c, ggml_mul_mat(c, m->params[2], h), m->params[3]);
}

static uint64_t mlp_hash(struct mlp *m) {
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i < 4; i++) {
        float v[N_HIDDEN * N_OUT];
        ggml_backend_tensor_get(m->params[i], v, 0, ggml_nbytes(m->params[i]));
        h = fnv1a(h, v, ggml_nbytes(m->params[i]));
    }
    return h;
}

static void mlp_free(struct mlp *m) {
    ggml_backend_buffer_free(m->buf);
    ggml_free(m->ctx_static);
    ggml_free(m->ctx_compute);
}

static struct ggml_opt_optimizer_params tuned(void *userdata) {
    struct ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(userdata);
    p.adamw.alpha = 0.01f;
    p.adamw.wd = 0.01f;
    p.sgd.alpha = 0.05f;
    p.sgd.wd = 0.001f;
    return p;
}

struct opt_case {
    const char *what;
    enum ggml_opt_loss_type loss;
    enum ggml_opt_optimizer_type optimizer;
    int64_t nbatch_logical;
    uint64_t want;
};

static void opt_run(ggml_backend_sched_t sched, ggml_backend_t backend, const struct opt_case *k) {
    ggml_opt_dataset_t ds =
        ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_OUT, N_DATA, 1);
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds));
    float *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    test_seed(11);
    for (int i = 0; i < N_DATA; i++) {
        for (int j = 0; j < N_IN; j++) x[N_IN * i + j] = test_uniform(-1, 1);
        for (int c = 0; c < N_OUT; c++) y[N_OUT * i + c] = c == i % N_OUT ? 1.0f : 0.0f;
    }
    struct mlp m;
    mlp_init(&m, backend);
    ggml_opt_fit(sched, m.ctx_compute, m.inputs, m.out, ds, k->loss, k->optimizer, tuned, 3,
                 k->nbatch_logical, 0.25f, true);
    check_hash(mlp_hash(&m), k->want, k->what);
    mlp_free(&m);
    ggml_opt_dataset_free(ds);
}

/* ------------------------------------------------------------ model API */

struct nn_case {
    const char *what;
    enum ggmlc_optimizer optimizer;
    float momentum, clip_norm, clip_value, weight_decay;
    enum ggmlc_loss loss;
    enum ggmlc_activation last;
    uint64_t want;
};

static void nn_run(const struct nn_case *k) {
    const int64_t in_shape[1] = {N_IN};
    ggmlc_model *m = ggmlc_sequential(in_shape, 1);
    const int64_t n_out = k->loss == GGMLC_LOSS_BINARY_CROSSENTROPY ? 1 : N_OUT;
    ggmlc_model_add(m, ggmlc_dense(N_HIDDEN, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dropout(0.25f));
    ggmlc_model_add(m, ggmlc_dense(n_out, k->last));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.optimizer = k->optimizer;
    co.learning_rate = 0.02f;
    co.momentum = k->momentum;
    co.weight_decay = k->weight_decay;
    co.clip_norm = k->clip_norm;
    co.clip_value = k->clip_value;
    co.loss = k->loss;
    co.seed = 1234;
    float x[N_DATA * N_IN], y[N_DATA * N_OUT];
    test_seed(13);
    for (int i = 0; i < N_DATA * N_IN; i++) x[i] = test_uniform(-1, 1);
    for (int i = 0; i < N_DATA; i++) {
        for (int c = 0; c < n_out; c++) {
            y[n_out * i + c] = n_out == 1 ? (float)(x[N_IN * i] > 0) : c == i % N_OUT;
        }
    }
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 3;
    fo.batch_size = BATCH;
    fo.verbose = 0;
    fo.validation_split = 0.25f;
    const bool ok = ggmlc_model_compile(m, &co) == GGMLC_OK &&
                    ggmlc_model_fit(m, x, N_DATA * N_IN, y, (size_t)(N_DATA * n_out), N_DATA, &fo,
                                    NULL) == GGMLC_OK;
    const int64_t n = ggmlc_model_param_count(m, false);
    float *w = malloc(sizeof(float) * (size_t)n);
    const bool got = ok && w && ggmlc_model_get_weights(m, w, (size_t)n) == n;
    if (!got) tap_diag("%s: %s", k->what, ggmlc_last_error());
    const uint64_t hash = got ? fnv1a(FNV_OFFSET, w, sizeof(float) * (size_t)n) : 0;
    check_hash(hash, k->want, k->what);
    free(w);
    ggmlc_model_free(m);
}

int main(int argc, char **argv) {
    print_only = argc > 1 && strcmp(argv[1], "--print") == 0;
    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!backend) return tap_skip_all("no CPU backend");
    ggml_backend_cpu_set_n_threads(backend, 1);
    ggml_backend_sched_t sched =
        ggml_backend_sched_new(&backend, NULL, 1, 16 * GGML_DEFAULT_GRAPH_SIZE, false, true);
    /* recorded again when tanh's backward moved to the vectorized ew_tanhf (the forward's
     * tanh), whose last bits differ from libm's tanhf; the cross-entropy cases again when the
     * loss and its gradient took their exponentials from ew_expf instead of libm's exp in
     * double (and the gradient's softmax from them, exp(x - max) / sum) */
    const struct opt_case opt_cases[] = {
        {"ggml-opt AdamW cross-entropy", GGML_OPT_LOSS_TYPE_CROSS_ENTROPY,
         GGML_OPT_OPTIMIZER_TYPE_ADAMW, BATCH, 0xad3dfdcafc71eec0ull},
        {"ggml-opt SGD MSE, 2 batches accumulated", GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR,
         GGML_OPT_OPTIMIZER_TYPE_SGD, 2 * BATCH, 0x1e5bb28838d15ecaull},
        {"ggml-opt AdamW mean of outputs", GGML_OPT_LOSS_TYPE_MEAN, GGML_OPT_OPTIMIZER_TYPE_ADAMW,
         BATCH, 0x455c8b84dbb33557ull},
        {"ggml-opt SGD sum of outputs", GGML_OPT_LOSS_TYPE_SUM, GGML_OPT_OPTIMIZER_TYPE_SGD, BATCH,
         0xbde7684a3898d644ull},
    };
    for (size_t i = 0; i < sizeof opt_cases / sizeof opt_cases[0]; i++) {
        opt_run(sched, backend, &opt_cases[i]);
    }
    ggml_backend_sched_free(sched);
    ggml_backend_free(backend);

    const struct nn_case cases[] = {
        {"model AdamW, clip_norm, categorical CE", GGMLC_OPT_ADAMW, 0, 0.5f, 0, 0.01f,
         GGMLC_LOSS_CATEGORICAL_CROSSENTROPY, GGMLC_ACT_SOFTMAX, 0x6c9612245f789cdeull},
        {"model SGD momentum, clip_value, BCE on logits", GGMLC_OPT_SGD, 0.9f, 0, 0.1f, 0.001f,
         GGMLC_LOSS_BINARY_CROSSENTROPY, GGMLC_ACT_SIGMOID, 0x88ee0e610e90d477ull},
        {"model SGD, BCE on probabilities", GGMLC_OPT_SGD, 0, 0, 0, 0.001f,
         GGMLC_LOSS_BINARY_CROSSENTROPY, GGMLC_ACT_RELU, 0xbfb05b05d82b505full},
        {"model AdamW, both clips, MSE", GGMLC_OPT_ADAMW, 0, 1.0f, 0.05f, 0, GGMLC_LOSS_MSE,
         GGMLC_ACT_NONE, 0x0864414c9564926full},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) nn_run(&cases[i]);
    return print_only ? 0 : tap_done();
}
