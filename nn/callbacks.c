/*
 * callbacks.c - training history and the built-in callbacks: early
 * stopping (with best-weight restore), learning-rate schedules, model
 * checkpoints and the CSV log.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "nn-impl.h"

/* ------------------------------------------------------------ history */

enum ggmlc_status ggmlc__nn_history_push(ggmlc_history *h, const struct ggmlc_epoch_logs *logs) {
    if (h->n == h->cap) {
        const int cap = h->cap ? 2 * h->cap : 16;
        struct ggmlc_epoch_logs *e = realloc(h->epochs, sizeof *e * (size_t)cap);
        if (!e) return ggmlc_set_error(GGMLC_ERR_NOMEM, "cannot grow the history");
        h->epochs = e;
        h->cap = cap;
    }
    h->epochs[h->n++] = *logs;
    return GGMLC_OK;
}

int ggmlc_history_epochs(const ggmlc_history *h) { return h ? h->n : 0; }

const struct ggmlc_epoch_logs *ggmlc_history_epoch(const ggmlc_history *h, int epoch) {
    return h && epoch >= 0 && epoch < h->n ? &h->epochs[epoch] : NULL;
}

void ggmlc_history_free(ggmlc_history *h) {
    if (!h) return;
    free(h->epochs);
    free(h);
}

void ggmlc_callback_free(struct ggmlc_callback *cb) {
    if (cb && cb->free) cb->free(cb->user);
    if (cb) *cb = (struct ggmlc_callback){0};
}

/* "<output>_loss", "<output>_accuracy" or "<output>_mae" (after "val_": of the validation data). */
static double output_monitored(const ggmlc_model *m, const struct ggmlc_epoch_logs *l, const char *monitor) {
    const bool val = strncmp(monitor, "val_", 4) == 0;
    const char *rest = monitor + (val ? 4 : 0);
    for (int k = 0; k < l->n_outputs && k < m->n_outputs; k++) {
        char name[96];
        ggmlc__nn_output_name(m, k, name, sizeof name);
        const size_t len = strlen(name);
        if (strncmp(rest, name, len) != 0 || rest[len] != '_') continue;
        const char *what = rest + len + 1;
        if (strcmp(what, "loss") == 0) return val ? l->val_output_loss[k] : l->output_loss[k];
        if (strcmp(what, "accuracy") == 0) return val ? l->val_output_accuracy[k] : l->output_accuracy[k];
        if (strcmp(what, "mae") == 0) return val ? l->val_output_mae[k] : l->output_mae[k];
    }
    return NAN;
}

/* A monitored quantity of the logs and whether bigger is better (accuracies). */
static double monitored(const ggmlc_model *m, const struct ggmlc_epoch_logs *l, const char *monitor, bool *maximize) {
    const size_t len = strlen(monitor);
    *maximize = len >= 8 && strcmp(monitor + len - 8, "accuracy") == 0;
    if (strcmp(monitor, "loss") == 0) return l->loss;
    if (strcmp(monitor, "val_loss") == 0) return l->val_loss;
    if (strcmp(monitor, "accuracy") == 0) return l->metric_accuracy;
    if (strcmp(monitor, "val_accuracy") == 0) return l->val_accuracy;
    if (strcmp(monitor, "mae") == 0) return l->metric_mae;
    if (strcmp(monitor, "val_mae") == 0) return l->val_mae;
    return output_monitored(m, l, monitor);
}

/* Tracks the best value of a monitored quantity. */
struct watch {
    char monitor[96];
    double min_delta, best;
    int patience, wait;
};

static void watch_init(struct watch *w, const char *monitor, double min_delta, int patience) {
    snprintf(w->monitor, sizeof w->monitor, "%s", monitor ? monitor : "val_loss");
    w->min_delta = fabs(min_delta);
    w->patience = patience;
    w->best = NAN;
    w->wait = 0;
}

/* True when the epoch improved on the best value (which it then becomes). */
static bool watch_improved(struct watch *w, const ggmlc_model *m, const struct ggmlc_epoch_logs *l) {
    bool maximize;
    double v = monitored(m, l, w->monitor, &maximize);
    if (isnan(v)) v = monitored(m, l, w->monitor + (strncmp(w->monitor, "val_", 4) == 0 ? 4 : 0), &maximize); /* no validation data */
    if (isnan(v)) return false;
    const bool better = isnan(w->best) || (maximize ? v > w->best + w->min_delta : v < w->best - w->min_delta);
    if (better) {
        w->best = v;
        w->wait = 0;
    } else {
        w->wait++;
    }
    return better;
}

/* ----------------------------------------------------- early stopping */

struct early_stopping {
    struct watch w;
    bool restore;
    float *best_weights;
    int64_t n_weights;
};

static bool early_stopping_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    struct early_stopping *es = user;
    if (watch_improved(&es->w, m, logs)) {
        if (es->restore) {
            const int64_t n = ggmlc_model_get_weights(m, NULL, 0);
            if (n != es->n_weights) {
                free(es->best_weights);
                es->best_weights = malloc(sizeof(float) * (size_t)n);
                es->n_weights = es->best_weights ? n : 0;
            }
            if (es->best_weights) ggmlc_model_get_weights(m, es->best_weights, (size_t)es->n_weights);
        }
        return true;
    }
    return es->w.wait < es->w.patience; /* as Keras: stop after patience epochs without improvement */
}

static void early_stopping_end(ggmlc_model *m, void *user) {
    struct early_stopping *es = user;
    if (es->restore && es->best_weights) ggmlc_model_set_weights(m, es->best_weights, (size_t)es->n_weights);
}

static void early_stopping_free(void *user) {
    struct early_stopping *es = user;
    free(es->best_weights);
    free(es);
}

struct ggmlc_callback ggmlc_early_stopping(const char *monitor, double min_delta, int patience, bool restore_best_weights) {
    struct early_stopping *es = calloc(1, sizeof *es);
    if (!es) return (struct ggmlc_callback){0};
    watch_init(&es->w, monitor, min_delta, patience);
    es->restore = restore_best_weights;
    return (struct ggmlc_callback){.on_epoch_end = early_stopping_epoch, .on_train_end = early_stopping_end,
                                   .free = early_stopping_free, .user = es};
}

/* ------------------------------------------------ learning-rate schedules */

struct lr_schedule {
    int step_epochs, total_epochs;
    double gamma, min_lr, base_lr;
    struct watch w; /* plateau */
};

/* The rate for the next epoch (epoch + 1). */
static bool lr_step_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    struct lr_schedule *s = user;
    if ((logs->epoch + 1) % s->step_epochs == 0) ggmlc_model_set_learning_rate(m, ggmlc_model_get_learning_rate(m) * s->gamma);
    return true;
}

static bool lr_cosine_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    struct lr_schedule *s = user;
    if (s->base_lr == 0) s->base_lr = logs->learning_rate;
    const double t = fmin(1.0, (double)(logs->epoch + 1) / s->total_epochs);
    ggmlc_model_set_learning_rate(m, s->min_lr + 0.5 * (s->base_lr - s->min_lr) * (1 + cos(M_PI * t)));
    return true;
}

static bool lr_plateau_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    struct lr_schedule *s = user;
    if (!watch_improved(&s->w, m, logs) && s->w.wait >= s->w.patience) {
        ggmlc_model_set_learning_rate(m, fmax(s->min_lr, ggmlc_model_get_learning_rate(m) * s->gamma));
        s->w.wait = 0;
    }
    return true;
}

static struct ggmlc_callback lr_callback(bool (*fn)(ggmlc_model *, const struct ggmlc_epoch_logs *, void *), struct lr_schedule init) {
    struct lr_schedule *s = malloc(sizeof *s);
    if (!s) return (struct ggmlc_callback){0};
    *s = init;
    return (struct ggmlc_callback){.on_epoch_end = fn, .free = free, .user = s};
}

struct ggmlc_callback ggmlc_lr_step_decay(int step_epochs, double gamma) {
    return lr_callback(lr_step_epoch, (struct lr_schedule){.step_epochs = step_epochs > 0 ? step_epochs : 1, .gamma = gamma});
}

struct ggmlc_callback ggmlc_lr_cosine(int total_epochs, double min_lr) {
    return lr_callback(lr_cosine_epoch, (struct lr_schedule){.total_epochs = total_epochs > 0 ? total_epochs : 1, .min_lr = min_lr});
}

struct ggmlc_callback ggmlc_reduce_lr_on_plateau(const char *monitor, double factor, int patience, double min_lr) {
    struct lr_schedule s = {.gamma = factor, .min_lr = min_lr};
    watch_init(&s.w, monitor, 0, patience);
    return lr_callback(lr_plateau_epoch, s);
}

/* ---------------------------------------------------------- checkpoints */

struct checkpoint {
    char path[1024];
    bool best_only;
    struct watch w;
};

static bool checkpoint_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    struct checkpoint *c = user;
    if (watch_improved(&c->w, m, logs) || !c->best_only) ggmlc_model_save(m, c->path, false);
    return true;
}

struct ggmlc_callback ggmlc_model_checkpoint(const char *path, const char *monitor, bool save_best_only) {
    struct checkpoint *c = calloc(1, sizeof *c);
    if (!c || !path || ggmlc_check_writable(path) != GGMLC_OK) { /* a bad path fails now, not after the first epoch */
        free(c);
        return (struct ggmlc_callback){0};
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    c->best_only = save_best_only;
    watch_init(&c->w, monitor, 0, 0);
    return (struct ggmlc_callback){.on_epoch_end = checkpoint_epoch, .free = free, .user = c};
}

/* ------------------------------------------------------------ CSV log */

/* The file opened to add to it (created, or emptied when not appending), NULL with the error set. */
static FILE *csv_open(const char *path, bool append) {
    FILE *f = fopen(path, append ? "a" : "w");
    if (!f) ggmlc_set_error(GGMLC_ERR_IO, "ggmlc_csv_logger: cannot write '%s': %s", path, strerror(errno));
    return f;
}

static bool csv_close(FILE *f, const char *path) {
    if (fclose(f) == 0) return true;
    ggmlc_set_error(GGMLC_ERR_IO, "ggmlc_csv_logger: cannot write '%s': %s", path, strerror(errno));
    return false;
}

static bool csv_log_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *l, void *user) {
    (void)m;
    const char *path = user;
    FILE *f = csv_open(path, true);
    if (!f) return false;
    fprintf(f, "%d", l->epoch + 1);
    const double values[] = {l->loss, l->metric_accuracy, l->metric_mae, l->val_loss, l->val_accuracy, l->val_mae, l->learning_rate, l->seconds};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        if (isnan(values[i])) fputc(',', f); /* not measured: an empty field */
        else fprintf(f, ",%.9g", values[i]);
    }
    fputc('\n', f);
    return csv_close(f, path);
}

struct ggmlc_callback ggmlc_csv_logger(const char *path, bool append) {
    if (!path) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_csv_logger: NULL path");
        return (struct ggmlc_callback){0};
    }
    FILE *f = csv_open(path, append);
    if (!f) return (struct ggmlc_callback){0};
    if (ftell(f) == 0) fputs("epoch,loss,accuracy,mae,val_loss,val_accuracy,val_mae,learning_rate,seconds\n", f);
    char *copy = strdup(path);
    if (!csv_close(f, path) || !copy) {
        free(copy);
        if (!copy) ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_csv_logger: out of memory");
        return (struct ggmlc_callback){0};
    }
    return (struct ggmlc_callback){.on_epoch_end = csv_log_epoch, .free = free, .user = copy};
}
