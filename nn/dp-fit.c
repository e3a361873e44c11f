/*
 * dp-fit.c - ggmlc_model_fit_dp: replicas of a model trained data-parallel, one thread per
 * replica, over a thread group (on top of another communicator when processes join in).
 *
 * Every replica runs the same loop: agree on the model, take global replica 0's state, agree on
 * the batch shares, then per epoch the same seeded permutation, per global batch its own slice
 * of it (ggmlc__dp_hook_step sums the gradients), and per epoch the summed statistics.  Global
 * replica 0 alone prints, keeps the history and runs the callbacks; what they decide (stop, the
 * learning rate) goes to everyone with the epoch's last collective call.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "ggml-cpu.h"
#include "nn-dp.h"

/* Of the calling thread's last fit: several fits may run at once (one per "process"). */
static _Thread_local struct ggmlc_dp_stats last_stats;

struct ggmlc_dp_stats ggmlc_dp_last_stats(void) {
    return last_stats;
}

struct ggmlc_dp_options ggmlc_dp_defaults(void) {
    return (struct ggmlc_dp_options){.warmup_batches = 3};
}

/* What every replica's thread shares. */
struct dp_job {
    ggmlc_model *const *replicas;
    int n_replicas;
    const struct ggmlc_dp_options *dp;
    struct nn_data train, val;
    const struct ggmlc_fit_options *fo;
    ggmlc_history *history;
    struct ggmlc_dp_stats stats; /* replica 0's */
};

/* One replica's thread. */
struct dp_replica {
    struct dp_job *job;
    int index;
    ggmlc_model *m;
    ggmlc_comm *comm;
    struct dp_hook *hook;
    float *weights; /* of every global replica */
    double weight_sum;
    int64_t steps;
    uint64_t seed; /* of the epochs' permutations: global replica 0's compile seed */
    enum ggmlc_status status;
    char error[512];
};

/* ----------------------------------------------------- agreement */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

/* Parameter names and shapes, and the replica count per process, as a hash. */
static uint64_t model_fingerprint(const ggmlc_model *m, int n_local) {
    uint64_t h = mix(0, (uint64_t)n_local);
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            const struct nn_param *p = &m->layers[i]->params[j];
            char name[160];
            ggmlc__nn_param_name(m->layers[i], p, name, sizeof name);
            for (const char *c = name; *c; c++) h = mix(h, (uint64_t)(unsigned char)*c);
            for (int d = 0; d < 4; d++) h = mix(h, (uint64_t)p->ne[d]);
        }
    }
    return h;
}

/* Every replica's model is the same: the largest of each 20-bit piece equals the smallest. */
static enum ggmlc_status agree_on_model(struct dp_replica *r) {
    const uint64_t h = model_fingerprint(r->m, r->job->n_replicas);
    float v[6];
    for (int k = 0; k < 3; k++) v[k] = (float)((h >> (20 * k)) & 0xFFFFF), v[3 + k] = -v[k];
    const enum ggmlc_status st = ggmlc_comm_allreduce(r->comm, v, 6, GGMLC_REDUCE_MAX);
    if (st != GGMLC_OK) return st;
    for (int k = 0; k < 3; k++) {
        if (v[k] != -v[3 + k])
            return ggmlc_set_error(
                GGMLC_ERR_INVALID_ARG,
                "ggmlc_model_fit_dp: the replicas' models differ (layers, parameter "
                "names or shapes, or replicas per process)");
    }
    return GGMLC_OK;
}

/* Every parameter and optimizer state tensor of the model, in layer order. */
static int state_tensors(ggmlc_model *m, struct ggml_tensor **out, int cap) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            const struct nn_param *p = &m->layers[i]->params[j];
            struct ggml_tensor *ts[3] = {p->t, p->m, p->v};
            for (int k = 0; k < 3; k++)
                if (ts[k] && n < cap) out[n++] = ts[k];
        }
    }
    return n;
}

/* Global replica 0's weights, optimizer state, step and learning rate to all (a sum where
 * everyone else gives zeros). */
static enum ggmlc_status take_replica0_state(struct dp_replica *r) {
    struct ggml_tensor *ts[NN_MAX_NODES * NN_MAX_PARAMS];
    const int n = state_tensors(r->m, ts, (int)(sizeof ts / sizeof ts[0]));
    const bool root = ggmlc_comm_rank(r->comm) == 0;
    if (!root) { /* 0 * NaN would stay NaN: zero the state instead of scaling it */
        for (int i = 0; i < n; i++) ggml_backend_tensor_memset(ts[i], 0, 0, ggml_nbytes(ts[i]));
    }
    enum ggmlc_status st =
        ggmlc_dp_allreduce_tensors(r->comm, ts, n, 1.0f, r->job->dp->bucket_bytes);
    float v[4] = {0};
    if (root) {
        v[0] = (float)(r->m->step >> 20), v[1] = (float)(r->m->step & 0xFFFFF);
        v[2] = (float)r->m->lr, v[3] = (float)(r->m->opt.seed & 0xFFFFFF);
    }
    if (st == GGMLC_OK) st = ggmlc_comm_allreduce(r->comm, v, 4, GGMLC_REDUCE_SUM);
    if (st != GGMLC_OK) return st;
    r->m->step = ((int64_t)v[0] << 20) + (int64_t)v[1];
    r->m->lr = v[2];          /* as a float, which is what the optimizer takes anyway */
    r->seed = (uint64_t)v[3]; /* the permutation of every epoch comes from it */
    return GGMLC_OK;
}

/* ------------------------------------------------------- shares */

static double seconds_of_forward(ggmlc_model *m, const struct nn_data *d, int64_t count) {
    double loss;
    const int64_t t0 = ggml_time_us();
    const size_t xl = (size_t)(count * ggmlc__nn_input_elems(m, 0)),
                 yl = (size_t)(count * ggmlc__nn_target_elems(m, 0));
    if (ggmlc_model_test_on_batch(m, d->x[0], xl, d->y[0], yl, count, &loss, NULL) != GGMLC_OK)
        return -1;
    return (double)(ggml_time_us() - t0) / 1e6;
}

/* This replica's weight: given, measured (the best of a few forward passes), or 1. */
static float own_weight(struct dp_replica *r, int64_t batch) {
    const struct ggmlc_dp_options *dp = r->job->dp;
    if (dp->weights) return dp->weights[r->index];
    if (!dp->measure) return 1.0f;
    const int64_t count = batch < r->job->train.n ? batch : r->job->train.n;
    double best = INFINITY;
    for (int k = 0; k < (dp->warmup_batches > 0 ? dp->warmup_batches : 3); k++) {
        const double s = seconds_of_forward(r->m, &r->job->train, count);
        if (s > 0 && s < best) best = s;
    }
    return isfinite(best) ? (float)(1.0 / best) : 1.0f;
}

/* Every global replica's weight (each gives its own at its rank, zeros elsewhere). */
static enum ggmlc_status agree_on_weights(struct dp_replica *r, int64_t batch) {
    const int size = ggmlc_comm_size(r->comm), rank = ggmlc_comm_rank(r->comm);
    r->weights = calloc((size_t)size, sizeof(float));
    if (!r->weights) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_fit_dp: out of memory");
    const float w = own_weight(r, batch);
    r->weights[rank] = w > 0 && isfinite(w) ? w : 1.0f;
    const enum ggmlc_status st =
        ggmlc_comm_allreduce(r->comm, r->weights, (size_t)size, GGMLC_REDUCE_SUM);
    r->weight_sum = 0;
    for (int i = 0; i < size; i++) r->weight_sum += r->weights[i];
    return st;
}

/* This replica's slice [*lo, *hi) of count samples: one each, the rest by weight. */
static void my_slice(const struct dp_replica *r, int64_t count, int64_t *lo, int64_t *hi) {
    const int size = ggmlc_comm_size(r->comm), rank = ggmlc_comm_rank(r->comm);
    double before = 0;
    for (int i = 0; i < rank; i++) before += r->weights[i];
    const double spare = (double)(count - size);
    *lo = rank + (int64_t)floor(spare * before / r->weight_sum + 1e-9);
    *hi =
        rank + 1 == size
            ? count
            : rank + 1 + (int64_t)floor(spare * (before + r->weights[rank]) / r->weight_sum + 1e-9);
}

/* ------------------------------------------------------- epochs */

#define STATS_FLOATS (2 + 3 * GGMLC_MAX_IO)

/* The pass statistics summed over all replicas (as floats: counts stay exact below 2^24). */
static enum ggmlc_status sum_stats(ggmlc_comm *comm, struct pass_stats *st) {
    float v[STATS_FLOATS];
    v[0] = (float)st->loss_sum, v[1] = (float)st->n;
    for (int k = 0; k < GGMLC_MAX_IO; k++)
        v[2 + 3 * k] = (float)st->head_loss_sum[k], v[3 + 3 * k] = (float)st->correct[k],
                  v[4 + 3 * k] = (float)st->abs_err[k];
    const enum ggmlc_status s = ggmlc_comm_allreduce(comm, v, STATS_FLOATS, GGMLC_REDUCE_SUM);
    st->loss_sum = v[0], st->n = (int64_t)v[1];
    for (int k = 0; k < GGMLC_MAX_IO; k++)
        st->head_loss_sum[k] = v[2 + 3 * k], st->correct[k] = (int64_t)v[3 + 3 * k],
        st->abs_err[k] = v[4 + 3 * k];
    return s;
}

/* One global batch: this replica's slice trained, the batch's mean loss summed over replicas. */
static enum ggmlc_status train_batch(struct dp_replica *r, const int64_t *order, int64_t count,
                                     struct pass_stats *st, double *batch_loss) {
    int64_t lo, hi;
    my_slice(r, count, &lo, &hi);
    struct pass_stats mine = {0};
    const float share = (float)(hi - lo) / (float)count;
    enum ggmlc_status s = ggmlc__dp_hook_step(r->hook, &r->job->train, hi - lo, order + lo, share,
                                              r->job->fo->class_weights, &mine);
    if (s != GGMLC_OK) return s;
    r->steps++;
    float loss = (float)(mine.loss_sum / (double)count);
    s = ggmlc_comm_allreduce(r->comm, &loss, 1, GGMLC_REDUCE_SUM);
    *batch_loss = loss;
    st->loss_sum += mine.loss_sum, st->n += mine.n;
    for (int k = 0; k < GGMLC_MAX_IO; k++)
        st->head_loss_sum[k] += mine.head_loss_sum[k], st->correct[k] += mine.correct[k],
            st->abs_err[k] += mine.abs_err[k];
    return s;
}

/* This replica's slice of the validation data, scored; the statistics summed over replicas. */
static enum ggmlc_status validate(struct dp_replica *r, struct pass_stats *st) {
    const struct nn_data *val = &r->job->val;
    int64_t lo = 0, hi = 0;
    if (val->n >= ggmlc_comm_size(r->comm)) my_slice(r, val->n, &lo, &hi);
    struct nn_data part = {.n = hi - lo};
    part.x[0] = val->x[0] + lo * ggmlc__nn_input_elems(r->m, 0);
    part.y[0] = val->y[0] + lo * ggmlc__nn_target_elems(r->m, 0);
    enum ggmlc_status s = GGMLC_OK;
    if (part.n > 0)
        s = ggmlc__nn_run_pass(r->m, &part, r->job->fo->batch_size, NULL, false, NULL, st, NULL,
                               NULL, 0, NULL);
    if (s != GGMLC_OK) return s;
    return sum_stats(r->comm, st);
}

static bool is_leader(const struct dp_replica *r) { return ggmlc_comm_rank(r->comm) == 0; }

static enum ggmlc_status train_epoch(struct dp_replica *r, int epoch, int64_t *order,
                                     struct pass_stats *st) {
    const struct ggmlc_fit_options *fo = r->job->fo;
    const int64_t n = r->job->train.n, size = ggmlc_comm_size(r->comm);
    struct ggmlc_rng rng;
    ggmlc__rng_seed(&rng, r->seed * 1000003ULL + (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++) order[i] = i;
    if (fo->shuffle) ggmlc__rng_shuffle(&rng, order, n);
    struct nn_progress progress;
    ggmlc__nn_progress_begin(&progress, r->m, is_leader(r) ? fo->verbose : 0, epoch, fo->epochs, n);
    double loss_sum = 0;
    int64_t seen = 0;
    enum ggmlc_status s = GGMLC_OK;
    for (int64_t first = 0, ib = 0; s == GGMLC_OK && first < n; first += fo->batch_size, ib++) {
        const int64_t count = n - first < fo->batch_size ? n - first : fo->batch_size;
        if (count < size) break; /* too few samples to give every replica one */
        double loss = 0;
        s = train_batch(r, order + first, count, st, &loss);
        if (s == GGMLC_OK && fo->stop_on_nan && !isfinite(loss))
            s = ggmlc_set_error(
                GGMLC_ERR_INVALID_ARG,
                "training stopped in epoch %d, batch %lld: the loss is %g (a learning rate "
                "too high, or data with huge or broken values?)",
                epoch + 1, (long long)ib + 1, loss);
        loss_sum += loss * (double)count, seen += count;
        struct ggmlc_epoch_logs running = {.epoch = epoch,
                                           .loss = loss_sum / (double)seen,
                                           .metric_accuracy = NAN,
                                           .metric_mae = NAN,
                                           .n_outputs = r->m->n_outputs};
        if (s == GGMLC_OK) ggmlc__nn_progress_update(&progress, first + count, &running);
    }
    return s;
}

/* The callbacks on the leader; their verdict (go_on) and learning rate to all. */
static enum ggmlc_status after_epoch(struct dp_replica *r, struct ggmlc_epoch_logs *logs,
                                     bool *go_on) {
    const struct ggmlc_fit_options *fo = r->job->fo;
    float v[2] = {0, 0};
    if (is_leader(r)) {
        enum ggmlc_status s = ggmlc__nn_history_push(r->job->history, logs);
        if (s != GGMLC_OK) return s;
        bool on = !r->m->stop_training;
        for (int c = 0; c < fo->n_callbacks; c++) {
            const struct ggmlc_callback *cb = &fo->callbacks[c];
            if (cb->on_epoch_end && !cb->on_epoch_end(r->m, logs, cb->user)) on = false;
        }
        v[0] = on ? 0.0f : 1.0f;
        v[1] = (float)r->m->lr;
    }
    const enum ggmlc_status s = ggmlc_comm_allreduce(r->comm, v, 2, GGMLC_REDUCE_SUM);
    *go_on = v[0] == 0;
    r->m->lr = v[1];
    return s;
}

static enum ggmlc_status run_epoch(struct dp_replica *r, int epoch, int64_t *order, bool *go_on) {
    const int64_t t0 = ggml_time_us();
    struct ggmlc_epoch_logs logs = {.epoch = epoch, .learning_rate = r->m->lr};
    struct pass_stats train = {0}, val = {0};
    enum ggmlc_status s = train_epoch(r, epoch, order, &train);
    if (s == GGMLC_OK) s = sum_stats(r->comm, &train);
    if (s == GGMLC_OK && r->job->val.n > 0) s = validate(r, &val);
    if (s != GGMLC_OK) return s;
    ggmlc__nn_fill_logs(r->m, &train, false, &logs);
    if (r->job->val.n > 0) {
        ggmlc__nn_fill_logs(r->m, &val, true, &logs);
    } else {
        logs.val_loss = logs.val_accuracy = logs.val_mae = NAN;
        for (int k = 0; k < GGMLC_MAX_IO; k++)
            logs.val_output_loss[k] = logs.val_output_accuracy[k] = logs.val_output_mae[k] = NAN;
    }
    logs.seconds = (double)(ggml_time_us() - t0) / 1e6;
    if (is_leader(r)) {
        struct nn_progress progress;
        ggmlc__nn_progress_begin(&progress, r->m, r->job->fo->verbose, epoch, r->job->fo->epochs,
                                 r->job->train.n);
        ggmlc__nn_progress_end(&progress, &logs);
    }
    return after_epoch(r, &logs, go_on);
}

/* ------------------------------------------------------- threads */

static int cpu_replicas(const struct dp_job *job) {
    int n = 0;
    for (int i = 0; i < job->n_replicas; i++)
        n += ggml_backend_is_cpu(job->replicas[i]->backends[0]);
    return n;
}

/* Processes of this job on this machine, as MPI launchers say (Open MPI, MPICH); 1 alone. */
static long local_processes(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atol(v) > 0) return atol(v);
    }
    return 1;
}

/* The machine's cores divided among the replicas computing on its CPU, those of the other
 * processes on it included (a GPU replica's fallback CPU backend keeps its threads). */
static void share_cores(struct dp_replica *r) {
    ggml_backend_t b = r->m->backends[0];
    if (!ggml_backend_is_cpu(b)) return;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const long sharing = (long)cpu_replicas(r->job) * local_processes();
    const int per = r->job->dp->cpu_threads > 0 ? r->job->dp->cpu_threads : (int)(cores / sharing);
    ggml_backend_cpu_set_n_threads(b, per > 0 ? per : 1);
}

static enum ggmlc_status replica_loop(struct dp_replica *r) {
    const struct ggmlc_fit_options *fo = r->job->fo;
    share_cores(r);
    if (r->job->dp->timeout_s > 0) ggmlc_comm_set_timeout(r->comm, r->job->dp->timeout_s);
    enum ggmlc_status s = agree_on_model(r);
    if (s == GGMLC_OK) s = take_replica0_state(r);
    if (s == GGMLC_OK) s = agree_on_weights(r, fo->batch_size);
    if (s != GGMLC_OK) return s;
    r->hook = ggmlc__dp_hook_new(r->m, r->comm, r->job->dp->bucket_bytes);
    int64_t *order = malloc(sizeof(int64_t) * (size_t)r->job->train.n);
    if (!r->hook || !order) {
        free(order);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_fit_dp: out of memory");
    }
    r->m->stop_training = false;
    bool go_on = true;
    for (int epoch = fo->initial_epoch; epoch < fo->epochs && go_on && s == GGMLC_OK; epoch++)
        s = run_epoch(r, epoch, order, &go_on);
    free(order);
    if (is_leader(r)) {
        for (int c = 0; c < fo->n_callbacks; c++)
            if (fo->callbacks[c].on_train_end)
                fo->callbacks[c].on_train_end(r->m, fo->callbacks[c].user);
    }
    return s;
}

static void *replica_main(void *arg) {
    struct dp_replica *r = arg;
    r->status = replica_loop(r);
    if (r->status != GGMLC_OK) {
        snprintf(r->error, sizeof r->error, "%s", ggmlc_last_error());
        ggmlc_comm_abort(r->comm, r->error); /* the others stop waiting for this one */
    }
    if (r->hook && r->index == 0 && r->steps > 0) {
        struct ggmlc_dp_stats *s = &r->job->stats;
        ggmlc__dp_hook_times(r->hook, &s->allreduce_us, &s->overhead_us);
        s->steps = r->steps;
        s->allreduce_us /= (double)r->steps, s->overhead_us /= (double)r->steps;
    }
    ggmlc__dp_hook_free(r->hook);
    free(r->weights);
    return NULL;
}

/* The first failure; a replica's own error before one that only says the group stopped. */
static enum ggmlc_status first_failure(struct dp_replica *rs, int n) {
    int pick = -1;
    for (int i = 0; i < n; i++) {
        if (rs[i].status == GGMLC_OK) continue;
        const bool echo = strstr(rs[i].error, "data-parallel group stopped") != NULL;
        if (pick < 0 || (!echo && strstr(rs[pick].error, "data-parallel group stopped"))) pick = i;
    }
    return pick < 0 ? GGMLC_OK : ggmlc_set_error(rs[pick].status, "%s", rs[pick].error);
}

static enum ggmlc_status run_replicas(struct dp_job *job, ggmlc_comm *outer) {
    ggmlc_comm *members[64];
    struct dp_replica rs[64];
    pthread_t threads[64];
    enum ggmlc_status s = ggmlc_comm_threads(job->n_replicas, outer, members);
    if (s != GGMLC_OK) return s;
    int started = 0;
    for (int i = 0; i < job->n_replicas; i++) {
        rs[i] =
            (struct dp_replica){.job = job, .index = i, .m = job->replicas[i], .comm = members[i]};
        if (pthread_create(&threads[i], NULL, replica_main, &rs[i]) != 0) {
            rs[i].status =
                ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_fit_dp: cannot start a thread");
            snprintf(rs[i].error, sizeof rs[i].error, "%s", ggmlc_last_error());
            ggmlc_comm_abort(members[i], rs[i].error);
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < job->n_replicas; i++) ggmlc_comm_free(members[i]);
    return first_failure(rs, started < job->n_replicas ? started + 1 : started);
}

/* --------------------------------------------------------- checks */

static enum ggmlc_status check_replica(ggmlc_model *m, int i) {
    if (!m)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_fit_dp: replica %d is NULL", i);
    const enum ggmlc_status s = ggmlc__nn_model_usable(m, "ggmlc_model_fit_dp");
    if (s != GGMLC_OK) return s;
    if (!m->compiled)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ggmlc_model_fit_dp: compile replica %d first", i);
    if (m->n_inputs != 1 || m->n_outputs != 1)
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "ggmlc_model_fit_dp: replica %d has %d inputs and %d outputs; one of each is "
            "supported",
            i, m->n_inputs, m->n_outputs);
    return GGMLC_OK;
}

/* The arrays' lengths against the model, and sparse labels against its classes. */
static enum ggmlc_status check_data(ggmlc_model *m, const char *what, const float *x, size_t x_len,
                                    const float *y, size_t y_len, int64_t n) {
    const int64_t xe = ggmlc__nn_input_elems(m, 0), ye = ggmlc__nn_target_elems(m, 0);
    if (!x || !y || n <= 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_model_fit_dp: %s: no data", what);
    if ((uint64_t)x_len != (uint64_t)(n * xe) || (uint64_t)y_len != (uint64_t)(n * ye))
        return ggmlc_set_error(
            GGMLC_ERR_SHAPE,
            "ggmlc_model_fit_dp: %s: %lld samples take %lld input and %lld target floats, "
            "got %zu and %zu",
            what, (long long)n, (long long)(n * xe), (long long)(n * ye), x_len, y_len);
    if (m->heads[0].loss != GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) return GGMLC_OK;
    const double classes = (double)ggmlc__nn_output_elems(m, 0);
    for (int64_t s = 0; s < n; s++) {
        if (!(y[s] >= 0 && y[s] < classes && y[s] == floorf(y[s])))
            return ggmlc_set_error(
                GGMLC_ERR_INVALID_ARG,
                "ggmlc_model_fit_dp: %s: label %g of sample %lld is not a class index "
                "below %.0f",
                what, (double)y[s], (long long)s, classes);
    }
    return GGMLC_OK;
}

static enum ggmlc_status check_options(const struct ggmlc_fit_options *fo,
                                       const struct ggmlc_dp_options *dp, int n_replicas) {
    if (fo->epochs <= 0 || fo->batch_size <= 0 || fo->initial_epoch < 0 ||
        fo->initial_epoch >= fo->epochs)
        return ggmlc_set_error(
            GGMLC_ERR_INVALID_ARG,
            "ggmlc_model_fit_dp: epochs %d (from %d) and batch size %lld are not valid", fo->epochs,
            fo->initial_epoch, (long long)fo->batch_size);
    if (!(fo->validation_split >= 0 && fo->validation_split < 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ggmlc_model_fit_dp: validation_split %g is not in [0, 1)",
                               (double)fo->validation_split);
    for (int i = 0; dp->weights && i < n_replicas; i++) {
        if (!(dp->weights[i] > 0 && isfinite(dp->weights[i])))
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                   "ggmlc_model_fit_dp: weight %d is %g, not a finite number > 0",
                                   i, (double)dp->weights[i]);
    }
    return GGMLC_OK;
}

static enum ggmlc_status prepare_job(struct dp_job *job, const float *x, size_t x_len,
                                     const float *y, size_t y_len, int64_t n) {
    ggmlc_model *m = job->replicas[0];
    const struct ggmlc_fit_options *fo = job->fo;
    enum ggmlc_status s = check_data(m, "training data", x, x_len, y, y_len, n);
    if (s != GGMLC_OK) return s;
    const int64_t xe = ggmlc__nn_input_elems(m, 0), ye = ggmlc__nn_target_elems(m, 0);
    job->train = (struct nn_data){.x = {x}, .y = {y}, .n = n};
    if (fo->val_x) {
        s = check_data(m, "validation data", fo->val_x, fo->val_x_len, fo->val_y, fo->val_y_len,
                       fo->n_val);
        job->val = (struct nn_data){.x = {fo->val_x}, .y = {fo->val_y}, .n = fo->n_val};
        return s;
    }
    const int64_t n_val = (int64_t)((double)n * (double)fo->validation_split);
    job->train.n = n - n_val;
    job->val =
        (struct nn_data){.x = {x + (n - n_val) * xe}, .y = {y + (n - n_val) * ye}, .n = n_val};
    return job->train.n > 0 ? GGMLC_OK
                            : ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                              "ggmlc_model_fit_dp: no training data left");
}

enum ggmlc_status ggmlc_model_fit_dp(ggmlc_model *const *replicas, int n_replicas,
                                     ggmlc_comm *outer, const struct ggmlc_dp_options *dp,
                                     const float *x, size_t x_len, const float *y, size_t y_len,
                                     int64_t n, const struct ggmlc_fit_options *options,
                                     ggmlc_history **history) {
    if (!replicas || n_replicas <= 0 || n_replicas > 64)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ggmlc_model_fit_dp: %d replicas (1 to 64 per process)", n_replicas);
    const struct ggmlc_fit_options fo = options ? *options : ggmlc_fit_defaults();
    const struct ggmlc_dp_options dpo = dp ? *dp : ggmlc_dp_defaults();
    enum ggmlc_status s = check_options(&fo, &dpo, n_replicas);
    for (int i = 0; i < n_replicas && s == GGMLC_OK; i++) s = check_replica(replicas[i], i);
    for (int i = 0; i < n_replicas && s == GGMLC_OK; i++)
        for (int j = 0; j < i && s == GGMLC_OK; j++)
            if (replicas[i] == replicas[j])
                s = ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                    "ggmlc_model_fit_dp: replicas %d and %d are the same model", j,
                                    i);
    struct dp_job job = {.replicas = replicas, .n_replicas = n_replicas, .dp = &dpo, .fo = &fo};
    if (s == GGMLC_OK) s = prepare_job(&job, x, x_len, y, y_len, n);
    if (s == GGMLC_OK && !(job.history = calloc(1, sizeof *job.history)))
        s = ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_model_fit_dp: out of memory");
    if (s != GGMLC_OK) {
        if (outer)
            ggmlc_comm_abort(outer, ggmlc_last_error()); /* the other processes must not wait */
        return s;
    }
    s = run_replicas(&job, outer);
    last_stats = job.stats;
    if (history)
        *history = job.history;
    else
        ggmlc_history_free(job.history);
    return s;
}
