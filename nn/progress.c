/*
 * progress.c - Keras-like progress output of fit: on a terminal a bar
 * updated in place (samples done, ETA, loss and accuracy); otherwise one
 * line per epoch.
 */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "nn-impl.h"

void nn_progress_begin(struct nn_progress *p, const ggmlc_model *m, int verbose, int epoch, int epochs, int64_t total) {
    *p = (struct nn_progress){
        .model = m, .enabled = verbose > 0, .tty = verbose == 1 && isatty(fileno(stdout)), .epoch = epoch, .epochs = epochs,
        .total = total, .t_start = ggml_time_us(),
    };
    if (p->tty) printf("Epoch %d/%d\n", epoch + 1, epochs);
}

static void print_metrics(const ggmlc_model *m, const struct ggmlc_epoch_logs *l, bool with_val);

void nn_progress_update(struct nn_progress *p, int64_t done, const struct ggmlc_epoch_logs *running) {
    if (!p->tty) return;
    const int64_t now = ggml_time_us();
    if (done < p->total && now - p->t_start < 100000 * (p->done > 0)) return; /* at most 10 updates a second */
    p->done = done;
    enum { WIDTH = 30 };
    const int filled = (int)(WIDTH * done / p->total);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '=' : i == filled ? '>' : '.';
    bar[WIDTH] = '\0';
    const double elapsed = (double)(now - p->t_start) / 1e6, eta = done > 0 ? elapsed * (double)(p->total - done) / (double)done : 0;
    printf("\r%lld/%lld [%s] - ETA: %.0fs", (long long)done, (long long)p->total, bar, eta);
    print_metrics(p->model, running, false);
    printf("\033[K"); /* the line may have been longer */
    fflush(stdout);
}

static void print_value(const char *prefix, const char *name, double v) {
    if (!isnan(v)) printf(" - %s%s: %.4f", prefix, name, v);
}

/* Keras's names: loss, accuracy, mae; with several outputs also <output>_loss, <output>_accuracy, ... */
static void print_metrics(const ggmlc_model *m, const struct ggmlc_epoch_logs *l, bool with_val) {
    const bool several = l->n_outputs > 1;
    for (int val = 0; val <= (int)with_val; val++) {
        const char *prefix = val ? "val_" : "";
        print_value(prefix, "loss", val ? l->val_loss : l->loss);
        if (!several) {
            print_value(prefix, "accuracy", val ? l->val_accuracy : l->metric_accuracy);
            print_value(prefix, "mae", val ? l->val_mae : l->metric_mae);
            continue;
        }
        for (int k = 0; k < l->n_outputs && k < GGMLC_MAX_IO; k++) {
            char name[96], key[112];
            nn_output_name(m, k, name, sizeof name);
            snprintf(key, sizeof key, "%s_loss", name);
            print_value(prefix, key, val ? l->val_output_loss[k] : l->output_loss[k]);
            snprintf(key, sizeof key, "%s_accuracy", name);
            print_value(prefix, key, val ? l->val_output_accuracy[k] : l->output_accuracy[k]);
            snprintf(key, sizeof key, "%s_mae", name);
            print_value(prefix, key, val ? l->val_output_mae[k] : l->output_mae[k]);
        }
    }
}

void nn_progress_end(struct nn_progress *p, const struct ggmlc_epoch_logs *logs) {
    if (!p->enabled) return;
    if (p->tty) {
        printf("\r%lld/%lld [==============================] - %.1fs", (long long)p->total, (long long)p->total, logs->seconds);
    } else {
        printf("Epoch %d/%d - %.1fs", p->epoch + 1, p->epochs, logs->seconds);
    }
    print_metrics(p->model, logs, true);
    printf(p->tty ? "\033[K\n" : "\n");
    fflush(stdout);
}
