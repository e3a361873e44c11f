/*
 * progress.c - Keras-like progress output of fit: on a terminal a bar
 * updated in place (samples done, ETA, loss and metrics, per output when
 * there are several), cut to the terminal's width so that the carriage
 * return can rewrite it; otherwise one line per epoch.  The same terminal logic draws the
 * progress of other long work (ggmlc_progress_*: quantizing, loading a model) on stderr.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "nn-impl.h"

/* A line being composed (silently cut at its capacity). */
struct line {
    char text[4096];
    size_t len;
    size_t max_len;    /* the width metrics must fit in (see append_value); 0: no limit */
    bool wrap;         /* metrics beyond max_len go on a continuation line, else are left out */
    size_t line_start; /* where the current line of text begins */
};

static void append(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(struct line *l, const char *fmt, ...) {
    if (l->len + 1 >= sizeof l->text) return;
    va_list args;
    va_start(args, fmt);
    const int n = vsnprintf(l->text + l->len, sizeof l->text - l->len, fmt, args);
    va_end(args);
    if (n > 0) l->len = l->len + (size_t)n < sizeof l->text ? l->len + (size_t)n : sizeof l->text - 1;
}

/* " - name: value" when measured.  With a width (max_len), a field that does not fit whole on the
 * line is never cut mid-number: left out on the line updated in place (wrap false), moved to a
 * continuation line otherwise. */
static void append_value(struct line *l, const char *prefix, const char *name, double v) {
    if (isnan(v)) return;
    char field[256];
    const int n = snprintf(field, sizeof field, " - %s%s: %.4f", prefix, name, v);
    if (n <= 0) return;
    if (l->max_len > 0 && l->len - l->line_start + (size_t)n > l->max_len) {
        if (!l->wrap) return;
        append(l, "\033[K\n"); /* the rest of the line updated in place erased */
        l->line_start = l->len;
        append(l, "  %s", field + 3);
        return;
    }
    append(l, "%s", field);
}

/* Keras's names: loss, accuracy, mae; with several outputs also <output>_loss, <output>_accuracy, ... */
static void append_metrics(struct line *line, const ggmlc_model *m, const struct ggmlc_epoch_logs *l, bool with_val) {
    const bool several = l->n_outputs > 1;
    for (int val = 0; val <= (int)with_val; val++) {
        const char *prefix = val ? "val_" : "";
        append_value(line, prefix, "loss", val ? l->val_loss : l->loss);
        if (!several) {
            append_value(line, prefix, "accuracy", val ? l->val_accuracy : l->metric_accuracy);
            append_value(line, prefix, "mae", val ? l->val_mae : l->metric_mae);
            continue;
        }
        for (int k = 0; k < l->n_outputs && k < GGMLC_MAX_IO; k++) {
            char name[96], key[112];
            ggmlc__nn_output_name(m, k, name, sizeof name);
            snprintf(key, sizeof key, "%s_loss", name);
            append_value(line, prefix, key, val ? l->val_output_loss[k] : l->output_loss[k]);
            snprintf(key, sizeof key, "%s_accuracy", name);
            append_value(line, prefix, key, val ? l->val_output_accuracy[k] : l->output_accuracy[k]);
            snprintf(key, sizeof key, "%s_mae", name);
            append_value(line, prefix, key, val ? l->val_output_mae[k] : l->output_mae[k]);
        }
    }
}

/* Columns of the terminal on stream, else $COLUMNS, else 80; at least 40. */
static size_t terminal_width(FILE *stream) {
    struct winsize ws;
    if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col < 40 ? 40 : ws.ws_col;
    const char *env = getenv("COLUMNS");
    const long columns = env ? strtol(env, NULL, 10) : 0;
    return columns >= 40 && columns <= 4000 ? (size_t)columns : columns > 4000 ? 4000 : 80;
}

/* bar_w characters and a NUL: '=' for the part done, '>' at its head, '.' for the rest. */
static void draw_bar(char *bar, int bar_w, int64_t done, int64_t total) {
    const int filled = total > 0 ? (int)(bar_w * done / total) : bar_w;
    for (int i = 0; i < bar_w; i++) bar[i] = i < filled ? '=' : i == filled ? '>' : '.';
    bar[bar_w] = '\0';
}

void ggmlc__nn_progress_begin(struct nn_progress *p, const ggmlc_model *m, int verbose, int epoch, int epochs, int64_t total) {
    *p = (struct nn_progress){
        .model = m, .enabled = verbose > 0, .tty = verbose == 1 && isatty(fileno(stdout)), .epoch = epoch, .epochs = epochs,
        .total = total, .t_start = ggml_time_us(),
    };
    if (p->tty) printf("Epoch %d/%d\n", epoch + 1, epochs);
}

bool ggmlc__nn_progress_due(const struct nn_progress *p, int64_t done) {
    /* at most 10 updates a second */
    if (!p || !p->tty) return false;
    return done >= p->total || p->done == 0 || ggml_time_us() - p->t_last >= 100000;
}

void ggmlc__nn_progress_update(struct nn_progress *p, int64_t done, const struct ggmlc_epoch_logs *running) {
    if (!ggmlc__nn_progress_due(p, done)) return;
    const int64_t now = ggml_time_us();
    p->done = done;
    p->t_last = now;
    /* a line that wrapped could not be rewritten in place: one column less than the terminal's */
    const size_t width = terminal_width(stdout) - 1;
    const double elapsed = (double)(now - p->t_start) / 1e6, eta = done > 0 ? elapsed * (double)(p->total - done) / (double)done : 0;
    char counts[64], bar[31];
    const int head = snprintf(counts, sizeof counts, "%lld/%lld [] - ETA: %.0fs", (long long)done, (long long)p->total, eta);
    /* the bar takes 30 columns, fewer when the counts leave less room (at least 10) */
    int bar_w = (int)width - head;
    bar_w = bar_w > 30 ? 30 : bar_w < 10 ? 10 : bar_w;
    draw_bar(bar, bar_w, done, p->total);
    struct line line = {.len = 0};
    append(&line, "%lld/%lld [%s] - ETA: %.0fs", (long long)done, (long long)p->total, bar, eta);
    line.max_len = width;
    append_metrics(&line, p->model, running, false);
    if (line.len > width) line.text[width] = '\0'; /* only the counts of a terminal under 40 columns */
    printf("\r%s\033[K", line.text);
    fflush(stdout);
}

void ggmlc__nn_progress_end(struct nn_progress *p, const struct ggmlc_epoch_logs *logs) {
    if (!p->enabled) return;
    struct line line = {.len = 0};
    if (p->tty) {
        append(&line, "\r%lld/%lld [==============================] - %.1fs", (long long)p->total, (long long)p->total, logs->seconds);
        line.line_start = 1; /* after the carriage return */
        line.max_len = terminal_width(stdout) - 1;
        line.wrap = true;
    } else {
        append(&line, "Epoch %d/%d - %.1fs", p->epoch + 1, p->epochs, logs->seconds);
    }
    append_metrics(&line, p->model, logs, true);
    printf(p->tty ? "%s\033[K\n" : "%s\n", line.text);
    fflush(stdout);
}

/* ------------------------------------------- progress of other long work */

void ggmlc_progress_begin(struct ggmlc_progress *p, const char *label, int64_t total_bytes) {
    *p = (struct ggmlc_progress){.label = label ? label : "",
                                 .total = total_bytes > 0 ? total_bytes : 0,
                                 .t_start = ggml_time_us(),
                                 .tty = isatty(fileno(stderr))};
}

static void progress_draw(struct ggmlc_progress *p, int64_t now) {
    const size_t width = terminal_width(stderr) - 1; /* a wrapped line could not be rewritten */
    const double elapsed = (double)(now - p->t_start) / 1e6;
    const double eta = p->done > 0 ? elapsed * (double)(p->total - p->done) / (double)p->done : 0;
    char head[256], tail[64], bar[31];
    const int n_head = snprintf(head, sizeof head, "%s  %.1f/%.1f MiB ", p->label,
                                (double)p->done / 1048576.0, (double)p->total / 1048576.0);
    const int n_tail = snprintf(tail, sizeof tail, " ETA %.0fs", eta);
    int bar_w = (int)width - n_head - n_tail - 2;
    bar_w = bar_w > 30 ? 30 : bar_w;
    char line[512];
    if (bar_w >= 10) {
        draw_bar(bar, bar_w, p->done, p->total);
        snprintf(line, sizeof line, "%s[%s]%s", head, bar, tail);
    } else {
        snprintf(line, sizeof line, "%s%s", head, tail);
    }
    if (strlen(line) > width) line[width] = '\0';
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    p->drawn = true;
}

void ggmlc_progress_update(struct ggmlc_progress *p, int64_t done_bytes) {
    if (!p || !p->tty) return;
    const int64_t now = ggml_time_us();
    p->done = done_bytes < 0 ? 0 : done_bytes > p->total ? p->total : done_bytes;
    if (p->drawn && p->done < p->total && now - p->t_last < 100000)
        return; /* at most 10 a second */
    p->t_last = now;
    progress_draw(p, now);
}

void ggmlc_progress_clear(struct ggmlc_progress *p) {
    if (!p || !p->tty || !p->drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = false;
}

void ggmlc_progress_end(struct ggmlc_progress *p) { ggmlc_progress_clear(p); }
