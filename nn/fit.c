/*
 * fit.c - the public training calls: fit, evaluate and predict for models
 * of one input and one output (plain float arrays with their lengths) and
 * of several (one ggmlc_array per input and per output); every array is
 * checked against the model's shapes before its data are read; validation
 * data and split, shuffling, history and callbacks.
 * The batches themselves run in engine.c.
 */
#include <math.h>
#include <stdlib.h>

#include "nn-impl.h"

/* ------------------------------------------------------------- checks */

static enum ggmlc_status check_compiled(const ggmlc_model *m, const char *func) {
    if (!m) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: NULL model", func);
    const enum ggmlc_status st = ggmlc__nn_model_usable(m, func);
    if (st != GGMLC_OK) return st;
    return m->compiled ? GGMLC_OK : ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: compile the model first", func);
}

/* The float-array calls take one input and one output. */
static enum ggmlc_status check_single(const ggmlc_model *m, const char *func) {
    enum ggmlc_status st = check_compiled(m, func);
    if (st == GGMLC_OK && (m->n_inputs != 1 || m->n_outputs != 1))
        st = ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: the model has %d inputs and %d outputs: use %s_multi", func, m->n_inputs, m->n_outputs,
                             func);
    return st;
}

static void shape_text(char *buf, size_t size, const int64_t *shape, int n_dims) {
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < n_dims && k < size; i++) k += (size_t)snprintf(buf + k, size - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < size) snprintf(buf + k, size - k, ")");
}

static bool same_shape(const struct ggmlc_array *a, const ggmlc_node *n) {
    return a->n_dims == n->n_dims && memcmp(a->shape, n->shape, sizeof(int64_t) * (size_t)n->n_dims) == 0;
}

/* Floats one sample of what the node takes: its shape's, or for class indices one per position
 * (the shape without its last, class axis: 1 for an output of one axis). */
static int64_t sample_floats(const ggmlc_node *node, bool sparse_labels) {
    const int64_t elems = ggmlc__nn_shape_elems(node->shape, node->n_dims);
    return sparse_labels ? elems / node->shape[node->n_dims - 1] : elems;
}

/* The shape of class-index labels for an output node: {1} for one axis, else its shape less the
 * last axis; returns the number of dimensions. */
static int label_shape_of(const ggmlc_node *node, int64_t shape[3]) {
    if (node->n_dims == 1) {
        shape[0] = 1;
        return 1;
    }
    memcpy(shape, node->shape, sizeof(int64_t) * (size_t)(node->n_dims - 1));
    return node->n_dims - 1;
}

/* Whether a labels array has the shape label_shape_of gives (an output of one axis also takes none). */
static bool label_shape_ok(const struct ggmlc_array *a, const ggmlc_node *node) {
    int64_t want[3];
    const int dims = label_shape_of(node, want);
    if (node->n_dims == 1) return a->n_dims == 0 || (a->n_dims == 1 && a->shape[0] == 1);
    return a->n_dims == dims && memcmp(a->shape, want, sizeof(int64_t) * (size_t)dims) == 0;
}

/* Array `index` of what ("input" or "target") against the node it feeds; n0 is the sample count all
 * share.  The shape is checked first (the clearer message), then the length the shape implies. */
static enum ggmlc_status check_array(const char *func, const char *what, int index, const struct ggmlc_array *a, const ggmlc_node *node,
                                     bool sparse_labels, int64_t n0) {
    if (!a->data || a->n <= 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: %s %d has no data (%lld samples)", func, what, index, (long long)a->n);
    if (a->n != n0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %s %d has %lld samples, input 0 has %lld", func, what, index, (long long)a->n, (long long)n0);
    char got[96], want[96];
    int64_t labels[3];
    const int label_dims = label_shape_of(node, labels);
    if (!(sparse_labels ? label_shape_ok(a, node) : same_shape(a, node))) {
        shape_text(got, sizeof got, a->shape, a->n_dims < 0 ? 0 : a->n_dims > 3 ? 3 : a->n_dims);
        shape_text(want, sizeof want, sparse_labels ? labels : node->shape, sparse_labels ? label_dims : node->n_dims);
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %s %d has samples of shape %s, the model's %s %d takes %s%s", func, what, index,
                               got, what[0] == 'i' ? "input" : "output", index, want, sparse_labels ? " (class indices)" : "");
    }
    int64_t need;
    if (!__builtin_mul_overflow(a->n, sample_floats(node, sparse_labels), &need) && (uint64_t)need == (uint64_t)a->len) return GGMLC_OK;
    shape_text(want, sizeof want, sparse_labels ? labels : node->shape, sparse_labels ? label_dims : node->n_dims);
    return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %s %d holds %zu floats, but its %lld samples of shape %s take %lld", func, what, index,
                           a->len, (long long)a->n, want, (long long)need);
}

/* A plain array of len floats for n samples as a ggmlc_array: of the shape the node takes when its
 * samples have that many floats, else of their actual, flat shape, which check_array then refuses
 * with both shapes in its message.  A length that n does not divide is refused here. */
static enum ggmlc_status flat_array(const char *func, const char *what, const float *data, size_t len, int64_t n, const ggmlc_node *node,
                                    bool sparse_labels, struct ggmlc_array *out) {
    *out = (struct ggmlc_array){.data = data, .n = n, .len = len};
    if (!data || n <= 0) return GGMLC_OK; /* check_array names it */
    if (len % (uint64_t)n != 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %s holds %zu floats, not the same number for each of its %lld samples", func, what, len,
                               (long long)n);
    const int64_t per_sample = (int64_t)(len / (uint64_t)n);
    if (per_sample != sample_floats(node, sparse_labels)) {
        out->shape[0] = per_sample;
        out->n_dims = 1;
    } else if (sparse_labels) {
        out->n_dims = label_shape_of(node, out->shape);
    } else {
        memcpy(out->shape, node->shape, sizeof(int64_t) * (size_t)node->n_dims);
        out->n_dims = node->n_dims;
    }
    return GGMLC_OK;
}

static bool sparse_head(const ggmlc_model *m, int k) { return m->heads[k].loss == GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY; }

/* Arrays (targets may be absent: y NULL and n_y 0) checked against the model, as a pass's data. */
static enum ggmlc_status arrays_to_data(const ggmlc_model *m, const char *func, const struct ggmlc_array *x, int n_x,
                                        const struct ggmlc_array *y, int n_y, bool need_targets, struct nn_data *d) {
    *d = (struct nn_data){0};
    if (n_x != m->n_inputs || (n_x > 0 && !x))
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: the model has %d inputs, got %d input arrays", func, m->n_inputs, x ? n_x : 0);
    if (need_targets && (n_y != m->n_outputs || (n_y > 0 && !y)))
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: the model has %d outputs, got %d target arrays", func, m->n_outputs, y ? n_y : 0);
    d->n = x[0].n;
    for (int i = 0; i < n_x; i++) {
        enum ggmlc_status st = check_array(func, "input", i, &x[i], m->inputs[i], false, d->n);
        if (st != GGMLC_OK) return st;
        d->x[i] = x[i].data;
    }
    for (int k = 0; need_targets && k < n_y; k++) {
        enum ggmlc_status st = check_array(func, "target", k, &y[k], m->outputs[k], sparse_head(m, k), d->n);
        if (st != GGMLC_OK) return st;
        d->y[k] = y[k].data;
    }
    return GGMLC_OK;
}

/* The plain arrays of the single-input calls (y may be NULL: predictions) as checked data. */
static enum ggmlc_status plain_to_data(const ggmlc_model *m, const char *func, const float *x, size_t x_len, const float *y, size_t y_len,
                                       int64_t n, struct nn_data *d) {
    struct ggmlc_array xa, ya;
    enum ggmlc_status st = flat_array(func, "x", x, x_len, n, m->inputs[0], false, &xa);
    if (st == GGMLC_OK && y) st = flat_array(func, "y", y, y_len, n, m->outputs[0], sparse_head(m, 0), &ya);
    return st != GGMLC_OK ? st : arrays_to_data(m, func, &xa, 1, y ? &ya : NULL, y ? 1 : 0, y != NULL, d);
}

/* Token ids must index the embedding's rows: the backend would refuse the batch with no useful message. */
static enum ggmlc_status check_ids(const ggmlc_model *m, const struct nn_data *d, const char *func) {
    for (int i = 0; i < m->n_inputs; i++) {
        const int64_t vocab = ggmlc__nn_input_vocab(m, i), count = d->n * ggmlc__nn_input_elems(m, i);
        for (int64_t e = 0; vocab > 0 && e < count; e++) {
            const double v = d->x[i][e];
            if (!(v >= 0 && v < (double)vocab && v == floor(v)))
                return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: input %d: token id %g of sample %lld is not an index below the vocabulary size %lld",
                                       func, i, v, (long long)(e / ggmlc__nn_input_elems(m, i)), (long long)vocab);
        }
    }
    return GGMLC_OK;
}

/* Sparse labels must be class indices of the output: another value would train on an all-zero target;
 * token ids are checked with them. */
static enum ggmlc_status check_labels(const ggmlc_model *m, const struct nn_data *d, const char *func) {
    enum ggmlc_status st = check_ids(m, d, func);
    if (st != GGMLC_OK) return st;
    for (int k = 0; k < m->n_outputs; k++) {
        if (m->heads[k].loss != GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY || !d->y[k]) continue;
        const double classes = (double)ggmlc__nn_output_classes(m, k);
        const int64_t per_sample = ggmlc__nn_target_elems(m, k);
        for (int64_t i = 0; i < d->n * per_sample; i++) {
            const double v = d->y[k][i];
            if (!(v >= 0 && v < classes && v == floor(v)))
                return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: target %d: label %g of sample %lld is not a class index below %.0f", func, k, v,
                                       (long long)(i / per_sample), classes);
        }
    }
    return GGMLC_OK;
}

/* --------------------------------------------------------- evaluate */

/* A pass over the data in batches (training steps when training) and its mean loss and metrics. */
static enum ggmlc_status evaluate_data(ggmlc_model *m, const struct nn_data *d, int64_t batch, bool training, double *loss,
                                       double *head_losses, double *head_metrics, const char *func) {
    if (batch <= 0) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: the batch size must be positive", func);
    enum ggmlc_status status = check_labels(m, d, func);
    if (status != GGMLC_OK) return status;
    struct pass_stats st = {0};
    status = ggmlc__nn_run_pass(m, d, batch, NULL, training, NULL, &st, NULL, NULL, 0, NULL);
    struct ggmlc_epoch_logs logs = {0};
    ggmlc__nn_fill_logs(m, &st, false, &logs);
    if (loss) *loss = logs.loss;
    for (int k = 0; k < m->n_outputs; k++) {
        if (head_losses) head_losses[k] = logs.output_loss[k];
        if (head_metrics) {
            head_metrics[2 * k] = logs.output_accuracy[k];
            head_metrics[2 * k + 1] = logs.output_mae[k];
        }
    }
    return status;
}

/* The checked samples and targets of a call on a model of one input and one output. */
static enum ggmlc_status single_with_targets(const ggmlc_model *m, const char *func, const float *x, size_t x_len, const float *y,
                                             size_t y_len, int64_t n, struct nn_data *d) {
    enum ggmlc_status status = check_single(m, func);
    if (status == GGMLC_OK && !y) status = ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: the targets y are required", func);
    return status != GGMLC_OK ? status : plain_to_data(m, func, x, x_len, y, y_len, n, d);
}

enum ggmlc_status ggmlc_model_evaluate(ggmlc_model *m, const float *x, size_t x_len, const float *y, size_t y_len, int64_t n, int64_t batch,
                                       double *loss, double metrics[2]) {
    static const char func[] = "ggmlc_model_evaluate";
    struct nn_data d;
    const enum ggmlc_status status = single_with_targets(m, func, x, x_len, y, y_len, n, &d);
    return status != GGMLC_OK ? status : evaluate_data(m, &d, batch, false, loss, NULL, metrics, func);
}

enum ggmlc_status ggmlc_model_train_on_batch(ggmlc_model *m, const float *x, size_t x_len, const float *y, size_t y_len, int64_t n,
                                             double *loss, double metrics[2]) {
    static const char func[] = "ggmlc_model_train_on_batch";
    struct nn_data d;
    const enum ggmlc_status status = single_with_targets(m, func, x, x_len, y, y_len, n, &d);
    return status != GGMLC_OK ? status : evaluate_data(m, &d, n, true, loss, NULL, metrics, func); /* the n samples: one step */
}

enum ggmlc_status ggmlc_model_test_on_batch(ggmlc_model *m, const float *x, size_t x_len, const float *y, size_t y_len, int64_t n,
                                            double *loss, double metrics[2]) {
    static const char func[] = "ggmlc_model_test_on_batch";
    struct nn_data d;
    const enum ggmlc_status status = single_with_targets(m, func, x, x_len, y, y_len, n, &d);
    return status != GGMLC_OK ? status : evaluate_data(m, &d, n, false, loss, NULL, metrics, func);
}

enum ggmlc_status ggmlc_model_evaluate_multi(ggmlc_model *m, const struct ggmlc_array *x, int n_x, const struct ggmlc_array *y, int n_y,
                                             int64_t batch, double *loss, double *output_losses, double *output_metrics) {
    enum ggmlc_status status = check_compiled(m, "ggmlc_model_evaluate_multi");
    struct nn_data d;
    if (status == GGMLC_OK) status = arrays_to_data(m, "ggmlc_model_evaluate_multi", x, n_x, y, n_y, true, &d);
    if (status != GGMLC_OK) return status;
    return evaluate_data(m, &d, batch, false, loss, output_losses, output_metrics, "ggmlc_model_evaluate_multi");
}

/* ---------------------------------------------------------- predict */

/* Output array k, which receives n samples of output k, against its length. */
static enum ggmlc_status check_output(const ggmlc_model *m, const char *func, int k, const float *out, size_t len, int64_t n) {
    if (!out) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: output array %d is NULL", func, k);
    const ggmlc_node *o = m->outputs[k];
    int64_t need;
    if (!__builtin_mul_overflow(n, ggmlc__nn_output_elems(m, k), &need) && (uint64_t)need == (uint64_t)len) return GGMLC_OK;
    char shape[96];
    shape_text(shape, sizeof shape, o->shape, o->n_dims);
    return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: output array %d holds %zu floats, but %lld samples of the model's output %d, shape %s, take %lld",
                           func, k, len, (long long)n, k, shape, (long long)need);
}

static enum ggmlc_status predict_data(ggmlc_model *m, const char *func, const struct nn_data *d, int64_t batch, float *const *out,
                                      const size_t *out_lens, int n_out) {
    if (!out || !out_lens || n_out != m->n_outputs)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: the model has %d outputs, got %d output arrays (and their lengths)", func, m->n_outputs,
                               out && out_lens ? n_out : 0);
    for (int k = 0; k < n_out; k++) {
        enum ggmlc_status status = check_output(m, func, k, out[k], out_lens[k], d->n);
        if (status != GGMLC_OK) return status;
    }
    if (batch <= 0) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: the batch size must be positive", func);
    enum ggmlc_status status = check_ids(m, d, func);
    return status != GGMLC_OK ? status : ggmlc__nn_run_pass(m, d, batch, NULL, false, NULL, NULL, out, NULL, 0, NULL);
}

enum ggmlc_status ggmlc_model_predict(ggmlc_model *m, const float *x, size_t x_len, int64_t n, int64_t batch, float *out, size_t out_len) {
    static const char func[] = "ggmlc_model_predict";
    enum ggmlc_status status = check_single(m, func);
    struct nn_data d;
    if (status == GGMLC_OK) status = plain_to_data(m, func, x, x_len, NULL, 0, n, &d);
    return status != GGMLC_OK ? status : predict_data(m, func, &d, batch, &out, &out_len, 1);
}

enum ggmlc_status ggmlc_model_predict_multi(ggmlc_model *m, const struct ggmlc_array *x, int n_x, int64_t batch, float *const *out,
                                            const size_t *out_lens, int n_out) {
    static const char func[] = "ggmlc_model_predict_multi";
    enum ggmlc_status status = check_compiled(m, func);
    struct nn_data d;
    if (status == GGMLC_OK) status = arrays_to_data(m, func, x, n_x, NULL, 0, false, &d);
    return status != GGMLC_OK ? status : predict_data(m, func, &d, batch, out, out_lens, n_out);
}

/* -------------------------------------------------------------- fit */

struct ggmlc_fit_options ggmlc_fit_defaults(void) {
    return (struct ggmlc_fit_options){.epochs = 10, .batch_size = 32, .shuffle = true, .verbose = 1, .stop_on_nan = true};
}


static bool run_epoch_callbacks(ggmlc_model *m, const struct ggmlc_fit_options *fo, const struct ggmlc_epoch_logs *logs) {
    bool go_on = !m->stop_training;
    for (int c = 0; c < fo->n_callbacks; c++) {
        const struct ggmlc_callback *cb = &fo->callbacks[c];
        if (cb->on_epoch_end && !cb->on_epoch_end(m, logs, cb->user)) go_on = false;
    }
    return go_on;
}

/* The last n_val samples of every input and target, the same samples for all. */
static struct nn_data tail_of(const ggmlc_model *m, const struct nn_data *d, int64_t n_val) {
    const int64_t first = d->n - n_val;
    struct nn_data t = {.n = n_val};
    for (int i = 0; i < m->n_inputs; i++) t.x[i] = d->x[i] + first * ggmlc__nn_input_elems(m, i);
    for (int k = 0; k < m->n_outputs; k++) t.y[k] = d->y[k] + first * ggmlc__nn_target_elems(m, k);
    return t;
}

static void set_nan(double *v, int n) {
    for (int i = 0; i < n; i++) v[i] = NAN;
}

/* One epoch: a shuffled training pass, then the validation pass; logs filled. */
static enum ggmlc_status run_epoch(ggmlc_model *m, const struct nn_data *train, const struct nn_data *val, int64_t *order,
                                   const struct ggmlc_fit_options *fo, int epoch, struct ggmlc_epoch_logs *logs) {
    const int64_t t0 = ggml_time_us();
    if (fo->shuffle) ggmlc__rng_shuffle(&m->rng, order, train->n);
    struct nn_progress progress;
    ggmlc__nn_progress_begin(&progress, m, fo->verbose, epoch, fo->epochs, train->n);
    *logs = (struct ggmlc_epoch_logs){.epoch = epoch, .learning_rate = m->lr};
    struct pass_stats train_stats = {0}, val_stats = {0};
    enum ggmlc_status status = ggmlc__nn_run_pass(m, train, fo->batch_size, order, true, fo->class_weights, &train_stats, NULL, fo, epoch, &progress);
    if (status == GGMLC_OK && val->n > 0)
        status = ggmlc__nn_run_pass(m, val, fo->batch_size, NULL, false, NULL, &val_stats, NULL, NULL, epoch, NULL);
    ggmlc__nn_fill_logs(m, &train_stats, false, logs);
    if (val->n > 0) {
        ggmlc__nn_fill_logs(m, &val_stats, true, logs);
    } else {
        logs->val_loss = logs->val_accuracy = logs->val_mae = NAN;
        set_nan(logs->val_output_loss, GGMLC_MAX_IO);
        set_nan(logs->val_output_accuracy, GGMLC_MAX_IO);
        set_nan(logs->val_output_mae, GGMLC_MAX_IO);
    }
    logs->seconds = (double)(ggml_time_us() - t0) / 1e6;
    ggmlc__nn_progress_end(&progress, logs);
    return status;
}

/* One finite weight >= 0 per class of the one output. */
static enum ggmlc_status check_class_weights(const ggmlc_model *m, const struct ggmlc_fit_options *fo, const char *func) {
    if (!fo->class_weights) return GGMLC_OK;
    if (m->n_outputs > 1)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: class weights need a model with one output (this one has %d)", func, m->n_outputs);
    const int64_t classes = ggmlc__nn_output_classes(m, 0);
    if ((uint64_t)fo->n_class_weights != (uint64_t)classes)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %zu class weights for an output of %lld classes", func, fo->n_class_weights,
                               (long long)classes);
    for (int64_t c = 0; c < classes; c++) {
        if (!(fo->class_weights[c] >= 0 && fo->class_weights[c] < INFINITY))
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: class weight %lld is %g, not a finite number >= 0", func, (long long)c,
                                   (double)fo->class_weights[c]);
    }
    return GGMLC_OK;
}

/* Training on all (less the validation split when no explicit validation data are given). */
static enum ggmlc_status fit_data(ggmlc_model *m, const struct nn_data *all, const struct nn_data *explicit_val,
                                  const struct ggmlc_fit_options *fo, ggmlc_history **history, const char *func) {
    if (fo->epochs <= 0 || fo->batch_size <= 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: a positive epoch count and batch size are required", func);
    if (fo->initial_epoch < 0 || fo->initial_epoch >= fo->epochs)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: initial_epoch %d is not in [0, epochs = %d)", func, fo->initial_epoch, fo->epochs);
    if (!(fo->validation_split >= 0 && fo->validation_split < 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: validation_split %g is not in [0, 1)", func, (double)fo->validation_split);
    enum ggmlc_status status = check_class_weights(m, fo, func);
    if (status != GGMLC_OK) return status;
    struct nn_data train = *all, val = {0};
    if (explicit_val) {
        val = *explicit_val;
    } else {
        const int64_t n_val = (int64_t)((double)all->n * (double)fo->validation_split);
        if (n_val > 0) val = tail_of(m, all, n_val);
        train.n = all->n - n_val;
    }
    if (train.n <= 0) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: the validation split leaves no training data", func);
    status = check_labels(m, &train, func);
    if (status == GGMLC_OK && val.n > 0) status = check_labels(m, &val, func);
    if (status != GGMLC_OK) return status;
    ggmlc_history *h = calloc(1, sizeof *h);
    int64_t *order = malloc(sizeof(int64_t) * (size_t)train.n);
    if (!h || !order) {
        free(h);
        free(order);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", func);
    }
    for (int64_t i = 0; i < train.n; i++) order[i] = i; /* one permutation of the samples, applied to every input and target */
    m->stop_training = false;
    for (int epoch = fo->initial_epoch; epoch < fo->epochs && status == GGMLC_OK; epoch++) {
        struct ggmlc_epoch_logs logs;
        status = run_epoch(m, &train, &val, order, fo, epoch, &logs);
        if (status == GGMLC_OK) status = ggmlc__nn_history_push(h, &logs);
        if (status == GGMLC_OK && !run_epoch_callbacks(m, fo, &logs)) break;
    }
    for (int c = 0; c < fo->n_callbacks; c++) {
        if (fo->callbacks[c].on_train_end) fo->callbacks[c].on_train_end(m, fo->callbacks[c].user);
    }
    free(order);
    if (history) *history = h;
    else ggmlc_history_free(h);
    return status;
}

/* The plain validation arrays of the options (val_x, val_y, their lengths, n_val) as checked data. */
static enum ggmlc_status plain_validation(const ggmlc_model *m, const struct ggmlc_fit_options *fo, const char *func, struct nn_data *val) {
    char what[96];
    snprintf(what, sizeof what, "%s (validation data)", func);
    if (!fo->val_y || fo->n_val <= 0)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: validation data need val_y and n_val > 0", what);
    return plain_to_data(m, what, fo->val_x, fo->val_x_len, fo->val_y, fo->val_y_len, fo->n_val, val);
}

enum ggmlc_status ggmlc_model_fit(ggmlc_model *m, const float *x, size_t x_len, const float *y, size_t y_len, int64_t n,
                                  const struct ggmlc_fit_options *options, ggmlc_history **history) {
    static const char func[] = "ggmlc_model_fit";
    const struct ggmlc_fit_options fo = options ? *options : ggmlc_fit_defaults();
    struct nn_data all, val;
    enum ggmlc_status status = single_with_targets(m, func, x, x_len, y, y_len, n, &all);
    if (status == GGMLC_OK && fo.val_x) status = plain_validation(m, &fo, func, &val);
    return status != GGMLC_OK ? status : fit_data(m, &all, fo.val_x ? &val : NULL, &fo, history, func);
}

enum ggmlc_status ggmlc_model_fit_multi(ggmlc_model *m, const struct ggmlc_array *x, int n_x, const struct ggmlc_array *y, int n_y,
                                        const struct ggmlc_fit_options *options, ggmlc_history **history) {
    static const char func[] = "ggmlc_model_fit_multi";
    const struct ggmlc_fit_options fo = options ? *options : ggmlc_fit_defaults();
    enum ggmlc_status status = check_compiled(m, func);
    struct nn_data all, val;
    if (status == GGMLC_OK) status = arrays_to_data(m, func, x, n_x, y, n_y, true, &all);
    if (status != GGMLC_OK) return status;
    if (fo.val_inputs || fo.val_targets) {
        if (!fo.val_inputs || !fo.val_targets)
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: validation data need both val_inputs and val_targets", func);
        status = arrays_to_data(m, "ggmlc_model_fit_multi (validation data)", fo.val_inputs, m->n_inputs, fo.val_targets, m->n_outputs, true, &val);
        if (status != GGMLC_OK) return status;
        return fit_data(m, &all, &val, &fo, history, func);
    }
    if (fo.val_x) {
        if (m->n_inputs != 1 || m->n_outputs != 1)
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: give validation data as val_inputs and val_targets", func);
        status = plain_validation(m, &fo, func, &val);
        return status != GGMLC_OK ? status : fit_data(m, &all, &val, &fo, history, func);
    }
    return fit_data(m, &all, NULL, &fo, history, func);
}
