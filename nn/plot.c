/*
 * plot.c - learning curves as a standalone SVG file: a loss panel and, when
 * accuracy was measured, an accuracy panel; training curves solid, validation
 * dashed; axes with rounded ticks, grid lines and a legend.
 *
 * The file is written through file-replace.h (a temporary name beside the
 * destination, renamed into place), so a reader never sees half a plot.
 */
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc-internal.h" /* file-replace.h */
#include "ggmlc-nn.h"

#define PANEL_W  440.0
#define PANEL_H  300.0
#define MARGIN_L 64.0
#define MARGIN_R 20.0
#define MARGIN_T 56.0
#define MARGIN_B 48.0

#define COLOR_TRAIN "#1f77b4"
#define COLOR_VAL   "#d62728"

/* A value axis: from lo to hi in steps of step (a 1, 2 or 5 times a power of ten). */
struct axis {
    double lo, hi, step;
    int decimals;
};

static double nice_step(double span, int wanted_ticks) {
    const double raw = span / wanted_ticks;
    const double power = pow(10.0, floor(log10(raw)));
    const double f = raw / power;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
}

static struct axis make_axis(double lo, double hi, int wanted_ticks, bool integer) {
    if (!(hi > lo)) {
        const double pad = lo != 0 ? fabs(lo) * 0.1 : 0.5;
        lo -= pad, hi += pad;
    }
    struct axis a;
    a.step = nice_step(hi - lo, wanted_ticks);
    if (integer && a.step < 1) a.step = 1;
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    a.decimals = a.step >= 1 ? 0 : (int)ceil(-log10(a.step) - 1e-9);
    return a;
}

/* One curve: the field at offset in every epoch's logs. */
struct series {
    const char *label;
    const char *color;
    bool dashed;
    size_t offset;
};

static double logs_value(const struct ggmlc_epoch_logs *logs, int epoch, size_t offset) {
    return *(const double *)((const char *)&logs[epoch] + offset);
}

static bool series_present(const struct ggmlc_epoch_logs *logs, int n, size_t offset) {
    for (int e = 0; e < n; e++)
        if (isfinite(logs_value(logs, e, offset))) return true;
    return false;
}

static void xml_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f); /* control characters are not XML */
        }
    }
}

struct panel {
    double x0, y0; /* top-left corner of the panel */
    struct axis xa, ya;
};

static double px(const struct panel *p, double x) {
    return p->x0 + MARGIN_L + (x - p->xa.lo) / (p->xa.hi - p->xa.lo) * (PANEL_W - MARGIN_L - MARGIN_R);
}
static double py(const struct panel *p, double y) {
    return p->y0 + PANEL_H - MARGIN_B - (y - p->ya.lo) / (p->ya.hi - p->ya.lo) * (PANEL_H - MARGIN_T - MARGIN_B);
}

static void draw_axes(FILE *f, const struct panel *p, const char *name) {
    const double left = px(p, p->xa.lo), right = px(p, p->xa.hi), top = py(p, p->ya.hi), bottom = py(p, p->ya.lo);
    fprintf(f, "<g font-family=\"sans-serif\" font-size=\"11\" fill=\"#333\">\n");
    for (double v = p->ya.lo; v <= p->ya.hi + p->ya.step * 1e-6; v += p->ya.step) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", left, py(p, v), right, py(p, v));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", left - 6, py(p, v) + 4, p->ya.decimals,
                fabs(v) < p->ya.step * 1e-6 ? 0.0 : v);
    }
    for (double v = p->xa.lo; v <= p->xa.hi + p->xa.step * 1e-6; v += p->xa.step) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px(p, v), bottom, px(p, v),
                bottom + 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", px(p, v), bottom + 18, v);
    }
    fprintf(f, "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"none\" stroke=\"#333\"/>\n", left, top, left,
            bottom, right, bottom);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n", (left + right) / 2,
            bottom + 36);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">%s</text>\n",
            (left + right) / 2, p->y0 + 40, name);
    fprintf(f, "</g>\n");
}

/* A polyline per run of finite values, a dot per value. */
static void draw_series(FILE *f, const struct panel *p, const struct ggmlc_epoch_logs *logs, int n, const struct series *s) {
    const char *dash = s->dashed ? " stroke-dasharray=\"6 4\"" : "";
    bool open = false;
    for (int e = 0; e < n; e++) {
        const double v = logs_value(logs, e, s->offset);
        if (!isfinite(v)) {
            if (open) fputs("\"/>\n", f);
            open = false;
            continue;
        }
        if (!open) fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", s->color, dash);
        fprintf(f, "%s%.1f,%.1f", open ? " " : "", px(p, e + 1), py(p, v));
        open = true;
    }
    if (open) fputs("\"/>\n", f);
    for (int e = 0; e < n; e++) {
        const double v = logs_value(logs, e, s->offset);
        if (isfinite(v)) fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", px(p, e + 1), py(p, v), s->color);
    }
}

#define LEGEND_FONT    11.0 /* px */
#define LEGEND_TEXT_X  36.0 /* the label's start within the box, after the line sample */
/* Width of a label in the legend's font: at most 0.62 em per character in common sans-serif fonts
 * (DejaVu Sans, Liberation Sans, Helvetica; lower-case and digits), so the box holds the text. */
static double legend_text_width(const char *label) { return 0.62 * LEGEND_FONT * (double)strlen(label); }

/* In the top right corner, or the bottom right one where rising curves (accuracy) leave room; as wide
 * as its longest label. */
static void draw_legend(FILE *f, const struct panel *p, const struct series *s, int n_series, bool bottom) {
    double box_w = 0;
    for (int i = 0; i < n_series; i++) box_w = fmax(box_w, LEGEND_TEXT_X + legend_text_width(s[i].label) + 8);
    const double x = p->x0 + PANEL_W - MARGIN_R - 2 - box_w;
    const double y = bottom ? p->y0 + PANEL_H - MARGIN_B - 10 - 16 * n_series : p->y0 + MARGIN_T + 4;
    fprintf(f, "<g font-family=\"sans-serif\" font-size=\"%.0f\" fill=\"#333\">\n", LEGEND_FONT);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n",
            x, y, box_w, 6 + 16 * n_series);
    for (int i = 0; i < n_series; i++) {
        const double ly = y + 14 + 16 * i;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x + 6, ly - 4,
                x + 30, ly - 4, s[i].color, s[i].dashed ? " stroke-dasharray=\"6 4\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + LEGEND_TEXT_X, ly, s[i].label);
    }
    fprintf(f, "</g>\n");
}

/* A panel of the series that were measured; false when none was. */
static bool draw_panel(FILE *f, double x0, const struct ggmlc_epoch_logs *logs, int n, const char *name,
                       const struct series *all, int n_all, bool legend_bottom) {
    struct series s[2];
    int n_series = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n_all; i++) {
        if (!series_present(logs, n, all[i].offset)) continue;
        s[n_series++] = all[i];
        for (int e = 0; e < n; e++) {
            const double v = logs_value(logs, e, all[i].offset);
            if (isfinite(v)) lo = fmin(lo, v), hi = fmax(hi, v);
        }
    }
    if (n_series == 0) return false;
    struct panel p = {.x0 = x0, .y0 = 0, .xa = make_axis(n > 1 ? 1 : 0, n > 1 ? n : 2, 8, true), .ya = make_axis(lo, hi, 5, false)};
    draw_axes(f, &p, name);
    for (int i = 0; i < n_series; i++) draw_series(f, &p, logs, n, &s[i]);
    draw_legend(f, &p, s, n_series, legend_bottom);
    return true;
}

static void write_svg(FILE *f, const struct ggmlc_epoch_logs *logs, int n, const char *title) {
    const struct series loss[2] = {
        {"train loss", COLOR_TRAIN, false, offsetof(struct ggmlc_epoch_logs, loss)},
        {"validation loss", COLOR_VAL, true, offsetof(struct ggmlc_epoch_logs, val_loss)},
    };
    const struct series acc[2] = {
        {"train accuracy", COLOR_TRAIN, false, offsetof(struct ggmlc_epoch_logs, metric_accuracy)},
        {"validation accuracy", COLOR_VAL, true, offsetof(struct ggmlc_epoch_logs, val_accuracy)},
    };
    const bool has_acc = series_present(logs, n, acc[0].offset) || series_present(logs, n, acc[1].offset);
    const double width = PANEL_W * (has_acc ? 2 : 1);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
            width, PANEL_H, width, PANEL_H);
    fprintf(f, "<title>");
    xml_escaped(f, title);
    fprintf(f, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.1f\" y=\"20\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"15\">", width / 2);
    xml_escaped(f, title);
    fprintf(f, "</text>\n");
    if (!draw_panel(f, 0, logs, n, "loss", loss, 2, false))
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-family=\"sans-serif\">no loss recorded</text>\n",
                PANEL_W / 2, PANEL_H / 2);
    if (has_acc) draw_panel(f, PANEL_W, logs, n, "accuracy", acc, 2, true);
    fprintf(f, "</svg>\n");
}

enum ggmlc_status ggmlc_plot_epochs(const struct ggmlc_epoch_logs *logs, int n_epochs, const char *title, const char *path) {
    if (!logs || n_epochs < 1 || !path || !*path)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_plot_epochs: %s", !path || !*path ? "no file name" : "no epochs to plot");
    struct ggmlc_file_replace out;
    const enum ggmlc_status status = ggmlc__file_replace_open(&out, path, "ggmlc_plot_epochs");
    if (status != GGMLC_OK) return status;
    write_svg(out.f, logs, n_epochs, title ? title : "learning curves");
    return ggmlc__file_replace_commit(&out, true);
}

enum ggmlc_status ggmlc_plot_history(const ggmlc_history *history, const char *title, const char *path) {
    const int n = history ? ggmlc_history_epochs(history) : 0;
    if (n < 1) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_plot_history: %s", history ? "no epochs in the history" : "NULL history");
    struct ggmlc_epoch_logs *logs = malloc((size_t)n * sizeof(*logs));
    if (!logs) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_plot_history: out of memory");
    for (int e = 0; e < n; e++) logs[e] = *ggmlc_history_epoch(history, e);
    const enum ggmlc_status st = ggmlc_plot_epochs(logs, n, title, path);
    free(logs);
    return st;
}
