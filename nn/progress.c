/*
 * progress.c - Keras-like progress output of fit: on a terminal a bar
 * updated in place (samples done, ETA, loss and accuracy); otherwise one
 * line per epoch.
 */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "nn-impl.h"

void nn_progress_begin(struct nn_progress *p, int verbose, int epoch, int epochs, int64_t total) {
    *p = (struct nn_progress){
        .enabled = verbose > 0, .tty = verbose == 1 && isatty(fileno(stdout)), .epoch = epoch, .epochs = epochs,
        .total = total, .t_start = ggml_time_us(),
    };
    if (p->tty) printf("Epoch %d/%d\n", epoch + 1, epochs);
}

void nn_progress_update(struct nn_progress *p, int64_t done, double loss, double acc) {
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
    printf("\r%lld/%lld [%s] - ETA: %.0fs - loss: %.4f", (long long)done, (long long)p->total, bar, eta, loss);
    if (!isnan(acc)) printf(" - accuracy: %.4f", acc);
    fflush(stdout);
}

static void print_metrics(const struct ggmlc_epoch_logs *l) {
    printf(" - loss: %.4f", l->loss);
    if (!isnan(l->metric_accuracy)) printf(" - accuracy: %.4f", l->metric_accuracy);
    if (!isnan(l->metric_mae)) printf(" - mae: %.4f", l->metric_mae);
    if (!isnan(l->val_loss)) printf(" - val_loss: %.4f", l->val_loss);
    if (!isnan(l->val_accuracy)) printf(" - val_accuracy: %.4f", l->val_accuracy);
    if (!isnan(l->val_mae)) printf(" - val_mae: %.4f", l->val_mae);
}

void nn_progress_end(struct nn_progress *p, const struct ggmlc_epoch_logs *logs) {
    if (!p->enabled) return;
    if (p->tty) {
        printf("\r%lld/%lld [==============================] - %.1fs", (long long)p->total, (long long)p->total, logs->seconds);
    } else {
        printf("Epoch %d/%d - %.1fs", p->epoch + 1, p->epochs, logs->seconds);
    }
    print_metrics(logs);
    printf("\n");
    fflush(stdout);
}
