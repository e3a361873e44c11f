/*
 * test-datasets.c - the dataset loaders, split, normalisation and the SVG
 * learning-curve writer of ggmlc-nn.h.
 *
 * Damaged and forged files are generated here (truncated and bit-flipped gzip
 * streams, lying IDX headers, malformed CSV) and must be rejected with
 * GGMLC_ERR_FORMAT, not crash.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "ggmlc-nn.h"
#include "testutil.h"

static char tmpdir[256];

static const char *tmp_path(const char *name) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof(path[0]), "%s/%s", tmpdir, name);
    return p;
}

static void write_file(const char *path, const void *data, size_t len, bool gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        gzwrite(f, data, (unsigned)len);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

static unsigned char *read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = calloc((1 << 20) + 1, 1); /* NUL-terminated */
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

/* ------------------------------------------------------------- digits */

static void test_digits(void) {
    struct ggmlc_dataset d;
    ggmlc_clear_error();
    enum ggmlc_status st = ggmlc_dataset_load_digits(&d);
    if (!tap_ok(st == GGMLC_OK, "digits load (%s)", ggmlc_last_error())) return;
    tap_ok(d.n == 1797 && d.n_dims == 3 && d.shape[0] == 1 && d.shape[1] == 8 && d.shape[2] == 8 && d.n_classes == 10,
           "digits: 1797 samples of {1, 8, 8}, 10 classes (n %lld, classes %d)", (long long)d.n, d.n_classes);
    /* Class counts of the UCI digits as sklearn ships them. */
    const int64_t expected[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
    int64_t counts[10] = {0};
    for (int64_t i = 0; i < d.n; i++) counts[(int)d.y[i]]++;
    tap_ok(memcmp(counts, expected, sizeof(counts)) == 0, "digits: samples per class %lld %lld ... %lld", (long long)counts[0],
           (long long)counts[1], (long long)counts[9]);
    /* First line of the file: 0,0,5,13,9,1,0,0,... label 0; the last image is an 8. */
    tap_ok(d.x[2] == 5 && d.x[3] == 13 && d.x[4] == 9 && d.y[0] == 0 && d.y[d.n - 1] == 8, "digits: first pixels and labels");
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < d.n * 64; i++) lo = fminf(lo, d.x[i]), hi = fmaxf(hi, d.x[i]);
    tap_ok(lo == 0 && hi == 16 && d.value_max == 16, "digits: pixels 0..16 (%g..%g)", lo, hi);
    ggmlc_dataset_normalize(&d);
    tap_ok(d.x[3] == 13.0f / 16 && d.value_max == 1, "normalize: 13 -> %g", d.x[3]);
    ggmlc_dataset_free(&d);
    tap_ok(d.x == NULL && d.n == 0, "free zeroes the dataset");
    ggmlc_dataset_free(&d);

    setenv("GGMLC_DATA_DIR", tmpdir, 1);
    write_file(tmp_path("digits.csv.gz"), "1,2,3\n", 6, true);
    st = ggmlc_dataset_load_digits(&d);
    tap_ok(st == GGMLC_ERR_FORMAT && strstr(ggmlc_last_error(), "8x8"), "a CSV that is not the digits is rejected (%s)",
           ggmlc_last_error());
    unlink(tmp_path("digits.csv.gz"));
}

/* --------------------------------------------------------------- split */

static double checksum(const struct ggmlc_dataset *d) {
    double s = 0;
    for (int64_t i = 0; i < d->n * ggmlc_dataset_sample_size(d); i++) s += d->x[i] * (1 + i % 7);
    return s;
}

static void test_split(void) {
    struct ggmlc_dataset d, tr, te, tr2, te2;
    if (ggmlc_dataset_load_digits(&d) != GGMLC_OK) {
        tap_skip("digits not loaded", "split");
        return;
    }
    ggmlc_clear_error();
    enum ggmlc_status st = ggmlc_dataset_split(&d, 0.25, 7, &tr, &te);
    if (!tap_ok(st == GGMLC_OK, "split 0.25 (%s)", ggmlc_last_error())) return;
    int64_t all[10] = {0}, test[10] = {0};
    for (int64_t i = 0; i < d.n; i++) all[(int)d.y[i]]++;
    for (int64_t i = 0; i < te.n; i++) test[(int)te.y[i]]++;
    bool stratified = true;
    for (int c = 0; c < 10; c++) stratified &= test[c] == llround(0.25 * all[c]);
    tap_ok(stratified && tr.n + te.n == d.n, "split is stratified: %lld test, %lld train", (long long)te.n, (long long)tr.n);
    tap_ok(tr.n_dims == 3 && tr.shape[1] == 8 && te.n_classes == 10, "split keeps the shape and classes");
    /* Every sample lands in exactly one part: the pixel sums add up. */
    double sum_all = 0, sum_parts = 0;
    for (int64_t i = 0; i < d.n * 64; i++) sum_all += d.x[i];
    for (int64_t i = 0; i < tr.n * 64; i++) sum_parts += tr.x[i];
    for (int64_t i = 0; i < te.n * 64; i++) sum_parts += te.x[i];
    tap_ok(sum_all == sum_parts, "split: pixel sums %.0f and %.0f", sum_all, sum_parts);
    /* Each test sample is a row of the original with its own label. */
    bool rows_match = true;
    for (int64_t i = 0; i < te.n && rows_match; i += 37) {
        bool found = false;
        for (int64_t j = 0; j < d.n && !found; j++)
            found = memcmp(te.x + i * 64, d.x + j * 64, 64 * sizeof(float)) == 0 && te.y[i] == d.y[j];
        rows_match = found;
    }
    tap_ok(rows_match, "split: test rows are original rows with their labels");

    ggmlc_dataset_split(&d, 0.25, 7, &tr2, &te2);
    tap_ok(checksum(&tr) == checksum(&tr2) && checksum(&te) == checksum(&te2), "split is deterministic for a seed");
    ggmlc_dataset_free(&tr2), ggmlc_dataset_free(&te2);
    ggmlc_dataset_split(&d, 0.25, 8, &tr2, &te2);
    tap_ok(checksum(&te) != checksum(&te2), "another seed gives another split");
    ggmlc_dataset_free(&tr2), ggmlc_dataset_free(&te2);

    tap_ok(ggmlc_dataset_split(&d, 0, 1, &tr2, &te2) == GGMLC_ERR_INVALID_ARG, "split fraction 0 rejected");
    tap_ok(ggmlc_dataset_split(&d, 1.5, 1, &tr2, &te2) == GGMLC_ERR_INVALID_ARG, "split fraction 1.5 rejected");
    tap_ok(ggmlc_dataset_split(&d, NAN, 1, &tr2, &te2) == GGMLC_ERR_INVALID_ARG, "split fraction NaN rejected");
    d.y[5] = 12;
    tap_ok(ggmlc_dataset_split(&d, 0.5, 1, &tr2, &te2) == GGMLC_ERR_INVALID_ARG, "a label beyond n_classes rejected (%s)",
           ggmlc_last_error());
    ggmlc_dataset_free(&d), ggmlc_dataset_free(&tr), ggmlc_dataset_free(&te);
}

/* ----------------------------------------------------------------- CSV */

static enum ggmlc_status load_csv_text(const char *text, bool gz, struct ggmlc_dataset *d) {
    const char *path = tmp_path(gz ? "t.csv.gz" : "t.csv");
    write_file(path, text, strlen(text), gz);
    return ggmlc_dataset_load_csv(path, d);
}

static void test_csv(void) {
    struct ggmlc_dataset d;
    ggmlc_clear_error();
    enum ggmlc_status st = load_csv_text("0.5,-2,3e2,1\n\n4,5,6,0\r\n7, 8 ,9,2", false, &d);
    tap_ok(st == GGMLC_OK && d.n == 3 && d.n_dims == 1 && d.shape[0] == 3 && d.n_classes == 3 && d.x[0] == 0.5f &&
               d.x[1] == -2 && d.x[2] == 300 && d.x[7] == 8 && d.y[0] == 1 && d.y[2] == 2 && d.value_max == 300,
           "CSV: blank lines, CRLF, spaces, no final newline (%s)", ggmlc_last_error());
    ggmlc_dataset_free(&d);
    st = load_csv_text("1,2,0\n3,4,1\n", true, &d);
    tap_ok(st == GGMLC_OK && d.n == 2 && d.x[3] == 4, "CSV: gzip'd");
    ggmlc_dataset_free(&d);

    const struct {
        const char *text, *what;
    } bad[] = {
        {"", "empty file"},
        {"1,2,0\n3,x,1\n", "a word"},
        {"1,2,0\n3,4\n", "a short line"},
        {"1,2,0\n3,4,5,1\n", "a long line"},
        {"1,,0\n", "an empty field"},
        {"1,2,\n3,4,0\n", "an empty label"},
        {"1,2,0.5\n", "a fractional label"},
        {"1,2,-1\n", "a negative label"},
        {"1,2,70000\n", "a label beyond 65535"},
        {"1,nan,0\n", "NaN"},
        {"1,inf,0\n", "infinity"},
        {"1,1e999,0\n", "an overflowing number"},
        {"7\n", "a label without features"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        st = load_csv_text(bad[i].text, i % 2 == 0, &d);
        tap_ok(st == GGMLC_ERR_FORMAT && d.x == NULL, "CSV with %s rejected (%s)", bad[i].what, ggmlc_last_error());
    }
    ggmlc_clear_error();
    st = load_csv_text("1e-40,-2e-45,0\n1e-50,1,1\n", false, &d);
    tap_ok(st == GGMLC_OK && d.x[0] == 1e-40f && d.x[0] > 0 && d.x[1] < 0 && d.x[2] == 0,
           "CSV: subnormal values are numbers (%g, %g), one below the smallest subnormal is 0 (%s)", st ? 0 : d.x[0], st ? 0 : d.x[1],
           ggmlc_last_error());
    ggmlc_dataset_free(&d);
    /* 65535 fields on the first line, then 4 million one-field lines: the short second line is the
     * error, not the 1 TB the first line's width times the line count would take */
    const size_t wide = 2 * 65535, n_short = 4000000;
    char *big = malloc(wide + 2 * n_short + 1);
    for (size_t i = 0; i < wide; i += 2) memcpy(big + i, i + 2 < wide ? "0," : "0\n", 2);
    for (size_t i = 0; i < n_short; i++) memcpy(big + wide + 2 * i, "1\n", 2);
    big[wide + 2 * n_short] = '\0';
    st = load_csv_text(big, true, &d);
    tap_ok(st == GGMLC_ERR_FORMAT && strstr(ggmlc_last_error(), "t.csv.gz:2: 1 fields, but line 1 has 65535"),
           "CSV whose second line is short after a wide first line: the line named (%s)", ggmlc_last_error());
    free(big);
    write_file(tmp_path("nul.csv"), "1,2\0,0\n", 7, false);
    tap_ok(ggmlc_dataset_load_csv(tmp_path("nul.csv"), &d) == GGMLC_ERR_FORMAT, "CSV with a NUL byte rejected");
    tap_ok(ggmlc_dataset_load_csv(tmp_path("absent.csv"), &d) == GGMLC_ERR_NOT_FOUND, "missing CSV: GGMLC_ERR_NOT_FOUND");
}

/* ----------------------------------------------------------------- IDX */

/* IDX images (n x h x w, pixel i = i * 7 mod 256) and labels (i mod 3). */
static size_t make_idx_images(unsigned char *buf, uint32_t n, uint32_t h, uint32_t w) {
    buf[0] = 0, buf[1] = 0, buf[2] = 8, buf[3] = 3;
    put_be32(buf + 4, n), put_be32(buf + 8, h), put_be32(buf + 12, w);
    for (uint32_t i = 0; i < n * h * w; i++) buf[16 + i] = (unsigned char)(i * 7);
    return 16 + (size_t)n * h * w;
}

static size_t make_idx_labels(unsigned char *buf, uint32_t n) {
    buf[0] = 0, buf[1] = 0, buf[2] = 8, buf[3] = 1;
    put_be32(buf + 4, n);
    for (uint32_t i = 0; i < n; i++) buf[8 + i] = (unsigned char)(i % 3);
    return 8 + n;
}

static enum ggmlc_status load_idx_bytes(const unsigned char *img, size_t img_len, const unsigned char *lab, size_t lab_len,
                                        bool gz, struct ggmlc_dataset *d) {
    write_file(tmp_path("img.idx"), img, img_len, gz);
    write_file(tmp_path("lab.idx"), lab, lab_len, gz);
    return ggmlc_dataset_load_idx(tmp_path("img.idx"), tmp_path("lab.idx"), d);
}

static void test_idx_valid(const unsigned char *img, size_t il, const unsigned char *lab, size_t ll) {
    struct ggmlc_dataset d;
    for (int gz = 0; gz < 2; gz++) {
        ggmlc_clear_error();
        enum ggmlc_status st = load_idx_bytes(img, il, lab, ll, gz, &d);
        tap_ok(st == GGMLC_OK && d.n == 5 && d.n_dims == 3 && d.shape[0] == 1 && d.shape[1] == 3 && d.shape[2] == 4 &&
                   d.n_classes == 3 && d.x[1] == 7 && d.x[59] == (59 * 7) % 256 && d.y[4] == 1 && d.value_max == 255,
               "IDX %s: 5 images of 3 x 4 (%s)", gz ? "gzip'd" : "plain", ggmlc_last_error());
        ggmlc_dataset_free(&d);
    }
}

/* A gzip'd file cut short or with a damaged byte in its compressed data. */
static void test_idx_damaged_gz(const unsigned char *img, size_t il, const unsigned char *lab, size_t ll) {
    struct ggmlc_dataset d;
    write_file(tmp_path("good.gz"), img, il, true);
    write_file(tmp_path("lab.idx"), lab, ll, true);
    size_t len;
    unsigned char *gz = read_file(tmp_path("good.gz"), &len);
    for (size_t cut = 1; cut < len; cut += len / 7 + 1) {
        write_file(tmp_path("cut.gz"), gz, cut, false);
        enum ggmlc_status st = ggmlc_dataset_load_idx(tmp_path("cut.gz"), tmp_path("lab.idx"), &d);
        tap_ok(st == GGMLC_ERR_FORMAT && d.x == NULL, "gzip cut to %zu of %zu bytes rejected (%s)", cut, len, ggmlc_last_error());
    }
    unsigned char *flipped = malloc(len);
    memcpy(flipped, gz, len);
    flipped[len - 6] ^= 0x55; /* in the CRC-32 trailer */
    write_file(tmp_path("flip.gz"), flipped, len, false);
    tap_ok(ggmlc_dataset_load_idx(tmp_path("flip.gz"), tmp_path("lab.idx"), &d) == GGMLC_ERR_FORMAT,
           "gzip with a wrong CRC rejected (%s)", ggmlc_last_error());
    memcpy(flipped, gz, len);
    flipped[len / 2] ^= 0xff; /* in the deflate data */
    write_file(tmp_path("flip.gz"), flipped, len, false);
    tap_ok(ggmlc_dataset_load_idx(tmp_path("flip.gz"), tmp_path("lab.idx"), &d) == GGMLC_ERR_FORMAT,
           "gzip with damaged compressed data rejected (%s)", ggmlc_last_error());
    free(flipped);
    free(gz);
}

static void test_idx(void) {
    unsigned char img[512], lab[64], bad[1024];
    const size_t il = make_idx_images(img, 5, 3, 4), ll = make_idx_labels(lab, 5);
    test_idx_valid(img, il, lab, ll);
    test_idx_damaged_gz(img, il, lab, ll);

    struct ggmlc_dataset d;
    const struct {
        size_t at;
        unsigned char value;
        bool labels;
        const char *what;
    } forged[] = {
        {0, 1, false, "bad magic"},
        {2, 0x0d, false, "float elements"},
        {3, 2, false, "2 dimensions for images"},
        {4, 0xff, false, "4 billion images"},
        {7, 0, false, "0 images"},
        {7, 6, false, "more images than data"},
        {7, 4, false, "fewer images than data"},
        {10, 0x10, false, "4096-pixel-high images"},
        {3, 3, true, "3 dimensions for labels"},
        {7, 4, true, "fewer labels than images"},
        {7, 9, true, "9 labels for 5 images"},
    };
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        const bool l = forged[i].labels;
        memcpy(bad, l ? lab : img, l ? ll : il);
        bad[forged[i].at] = forged[i].value;
        enum ggmlc_status st = l ? load_idx_bytes(img, il, bad, ll, true, &d) : load_idx_bytes(bad, il, lab, ll, true, &d);
        tap_ok(st == GGMLC_ERR_FORMAT && d.x == NULL, "IDX with %s rejected (%s)", forged[i].what, ggmlc_last_error());
    }
    tap_ok(load_idx_bytes(img, 10, lab, ll, true, &d) == GGMLC_ERR_FORMAT, "IDX cut inside the header rejected");
    tap_ok(load_idx_bytes(img, il, lab, ll + 1, true, &d) == GGMLC_ERR_FORMAT, "IDX with trailing data rejected (%s)",
           ggmlc_last_error());
    tap_ok(ggmlc_dataset_load_idx(tmp_path("absent"), tmp_path("lab.idx"), &d) == GGMLC_ERR_NOT_FOUND, "missing IDX file");
    tap_ok(ggmlc_dataset_load_fashion_mnist(tmpdir, true, &d) == GGMLC_ERR_NOT_FOUND &&
               strstr(ggmlc_last_error(), "Fashion-MNIST"),
           "Fashion-MNIST absent from a folder: GGMLC_ERR_NOT_FOUND (%s)", ggmlc_last_error());
}

static void test_fashion_mnist(void) {
    struct ggmlc_dataset d;
    ggmlc_clear_error();
    enum ggmlc_status st = ggmlc_dataset_load_fashion_mnist(NULL, false, &d);
    if (st == GGMLC_ERR_NOT_FOUND) {
        tap_skip("dataset-fashion-mnist not installed", "Fashion-MNIST test part");
        return;
    }
    int64_t counts[10] = {0};
    for (int64_t i = 0; st == GGMLC_OK && i < d.n; i++) counts[(int)d.y[i]]++;
    tap_ok(st == GGMLC_OK && d.n == 10000 && d.shape[1] == 28 && d.shape[2] == 28 && counts[0] == 1000 && counts[9] == 1000,
           "Fashion-MNIST test part: 10000 images of 28 x 28, 1000 per class (%s)", ggmlc_last_error());
    ggmlc_dataset_free(&d);
}

/* --------------------------------------------------------------- plots */

static void test_plot(void) {
    struct ggmlc_epoch_logs logs[6];
    for (int e = 0; e < 6; e++) {
        logs[e] = (struct ggmlc_epoch_logs){.epoch = e, .loss = 2.0 / (e + 1), .metric_accuracy = 0.5 + 0.07 * e,
                                            .val_loss = 2.2 / (e + 1), .val_accuracy = 0.45 + 0.07 * e, .metric_mae = NAN,
                                            .val_mae = NAN, .learning_rate = 1e-3, .seconds = 1};
    }
    logs[2].val_loss = NAN; /* a gap in a curve */
    const char *path = tmp_path("curves.svg");
    enum ggmlc_status st = ggmlc_plot_epochs(logs, 6, "digits <mlp> & \"tests\"", path);
    size_t len = 0;
    unsigned char *svg = read_file(path, &len);
    if (!tap_ok(st == GGMLC_OK && svg, "plot written (%s)", ggmlc_last_error())) return;
    const char *s = (const char *)svg;
    int polylines = 0;
    for (const char *p = s; (p = strstr(p, "<polyline")); p++) polylines++;
    tap_ok(strncmp(s, "<?xml", 5) == 0 && strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\"") && strstr(s, "</svg>\n") &&
               s[len - 1] == '\n',
           "plot is an SVG document");
    tap_ok(strstr(s, "digits &lt;mlp&gt; &amp; &quot;tests&quot;") && !strstr(s, "<mlp>"), "title escaped");
    /* 2 axis frames + train loss + 2 runs of validation loss + train and validation accuracy. */
    tap_ok(polylines == 7, "plot: axes and curves, the NaN a gap (%d polylines)", polylines);
    tap_ok(strstr(s, "validation accuracy") && strstr(s, "train loss") && strstr(s, ">epoch<"), "plot: legends and labels");
    free(svg);

    for (int e = 0; e < 6; e++) logs[e].metric_accuracy = logs[e].val_accuracy = logs[e].val_loss = NAN;
    st = ggmlc_plot_epochs(logs, 1, NULL, path);
    svg = read_file(path, &len);
    tap_ok(st == GGMLC_OK && svg && !strstr((char *)svg, "accuracy"), "plot of one epoch without accuracy: one panel");
    free(svg);
    tap_ok(ggmlc_plot_epochs(logs, 0, "x", path) == GGMLC_ERR_INVALID_ARG, "plot of no epochs rejected");
    tap_ok(ggmlc_plot_epochs(logs, 3, "x", tmp_path("no/such/dir.svg")) == GGMLC_ERR_IO && access(tmp_path("no"), F_OK) != 0,
           "plot into a missing folder: GGMLC_ERR_IO (%s)", ggmlc_last_error());
    unlink(path);
}

/* ------------------------------------------------------ hostile files */

/* A FIFO never opened for writing and /dev/zero: refused at once as not regular files (a FIFO
 * used to block forever, /dev/zero to be read until a size limit); the alarm turns a hang into a
 * failure. */
static void test_special_files(void) {
    struct ggmlc_dataset d;
    const char *fifo = tmp_path("fifo.csv");
    if (mkfifo(fifo, 0600) != 0) {
        tap_skip("mkfifo failed", "datasets from a FIFO");
    } else {
        alarm(30);
        tap_ok(ggmlc_dataset_load_csv(fifo, &d) == GGMLC_ERR_IO && strstr(ggmlc_last_error(), "not a regular file") && d.x == NULL,
               "a FIFO as CSV file: refused without waiting for a writer (%s)", ggmlc_last_error());
        tap_ok(ggmlc_dataset_load_idx(fifo, fifo, &d) == GGMLC_ERR_IO && strstr(ggmlc_last_error(), "not a regular file"),
               "a FIFO as IDX file: refused (%s)", ggmlc_last_error());
        const char *images = tmp_path("train-images-idx3-ubyte.gz");
        tap_ok(rename(fifo, images) == 0 && ggmlc_dataset_load_fashion_mnist(tmpdir, true, &d) == GGMLC_ERR_IO &&
                   strstr(ggmlc_last_error(), "not a regular file"),
               "a FIFO among the Fashion-MNIST files: refused (%s)", ggmlc_last_error());
        setenv("GGMLC_DATA_DIR", tmpdir, 1);
        tap_ok(rename(images, tmp_path("digits.csv.gz")) == 0 && ggmlc_dataset_load_digits(&d) == GGMLC_ERR_IO,
               "a FIFO as the digits file: refused (%s)", ggmlc_last_error());
        unlink(tmp_path("digits.csv.gz"));
        alarm(0);
    }
    const int64_t t0 = ggml_time_us();
    tap_ok(ggmlc_dataset_load_csv("/dev/zero", &d) == GGMLC_ERR_IO && strstr(ggmlc_last_error(), "not a regular file") &&
               ggml_time_us() - t0 < 1000000,
           "/dev/zero as CSV file: refused without reading it (%s)", ggmlc_last_error());
    tap_ok(ggmlc_dataset_load_idx("/dev/zero", tmp_path("lab.idx"), &d) == GGMLC_ERR_IO, "/dev/zero as IDX file: refused");
    tap_ok(ggmlc_dataset_load_csv(tmpdir, &d) == GGMLC_ERR_IO, "a folder as CSV file: refused (%s)", ggmlc_last_error());
}

/* A gzip'd IDX pair of n blank images of side x side pixels (a few hundred bytes that expand to n * side^2). */
static void write_blank_idx(const char *images, const char *labels, uint32_t n, uint32_t side) {
    unsigned char head[16];
    head[0] = 0, head[1] = 0, head[2] = 8, head[3] = 3;
    put_be32(head + 4, n), put_be32(head + 8, side), put_be32(head + 12, side);
    unsigned char *zeros = calloc((size_t)n * side * side + 8, 1);
    gzFile f = gzopen(images, "wb9");
    gzwrite(f, head, 16);
    gzwrite(f, zeros, n * side * side);
    gzclose(f);
    zeros[2] = 8, zeros[3] = 1;
    put_be32(zeros + 4, n);
    write_file(labels, zeros, 8 + n, true);
    free(zeros);
}

/* The dataset limit: a small file that expands beyond it is refused before its floats are
 * allocated; the API, then the environment, set it. */
static void test_limits(void) {
    struct ggmlc_dataset d;
    tap_ok(ggmlc_dataset_max_bytes() == GGMLC_DATASET_DEFAULT_MAX_BYTES && GGMLC_DATASET_DEFAULT_MAX_BYTES == (size_t)1 << 30,
           "the default dataset limit is 1 GiB");
    const char *images = tmp_path("big-images.gz"), *labels = tmp_path("big-labels.gz");
    write_blank_idx(images, labels, 2000, 28); /* 1.5 MB of pixels, 6.3 MB of floats */
    size_t gz_len;
    free(read_file(images, &gz_len));
    tap_ok(ggmlc_dataset_load_idx(images, labels, &d) == GGMLC_OK && d.n == 2000, "%zu gzip'd bytes of IDX within the limit load", gz_len);
    ggmlc_dataset_free(&d);
    ggmlc_dataset_set_max_bytes(4 << 20);
    tap_ok(ggmlc_dataset_max_bytes() == 4 << 20 && ggmlc_dataset_load_idx(images, labels, &d) == GGMLC_ERR_NOMEM && d.x == NULL &&
               strstr(ggmlc_last_error(), "would take 6280000 bytes, more than the dataset limit of 4194304 bytes"),
           "IDX expanding beyond a limit of 4 MiB set by the API: refused (%s)", ggmlc_last_error());
    ggmlc_dataset_set_max_bytes(0);
    setenv("GGMLC_DATASET_MAX_BYTES", "4M", 1);
    tap_ok(ggmlc_dataset_load_idx(images, labels, &d) == GGMLC_ERR_NOMEM && strstr(ggmlc_last_error(), "limit of 4194304 bytes"),
           "the same with GGMLC_DATASET_MAX_BYTES=4M");
    setenv("GGMLC_DATASET_MAX_BYTES", "lots", 1);
    tap_ok(ggmlc_dataset_max_bytes() == GGMLC_DATASET_DEFAULT_MAX_BYTES, "GGMLC_DATASET_MAX_BYTES=lots is ignored (with a warning)");
    setenv("GGMLC_DATASET_MAX_BYTES", "64k", 1);

    /* CSV: the text beyond the limit, then text and floats together beyond it */
    char *text = malloc(200001);
    for (int i = 0; i < 100000; i++) memcpy(text + 2 * i, i % 2 ? "0\n" : "1,", 2);
    text[200000] = '\0';
    tap_ok(load_csv_text(text, true, &d) == GGMLC_ERR_NOMEM && strstr(ggmlc_last_error(), "decompressed text is larger than the dataset limit of 65536"),
           "gzip'd CSV text beyond a limit of 64k: refused (%s)", ggmlc_last_error());
    text[40000] = '\0'; /* 40000 bytes of text and 10000 lines of 2 floats */
    tap_ok(load_csv_text(text, true, &d) == GGMLC_ERR_NOMEM && strstr(ggmlc_last_error(), "the text and its floats would take 120000 bytes"),
           "CSV whose text fits but not its floats: refused (%s)", ggmlc_last_error());
    text[20000] = '\0';
    tap_ok(load_csv_text(text, true, &d) == GGMLC_OK && d.n == 5000, "CSV within the limit loads (%s)", ggmlc_last_error());
    ggmlc_dataset_free(&d);
    unsetenv("GGMLC_DATASET_MAX_BYTES");
    free(text);
}

int main(void) {
    snprintf(tmpdir, sizeof(tmpdir), "%s/ggmlc-datasets-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) return tap_skip_all("cannot create a temporary folder");
    const char *src = getenv("GGMLC_TEST_DATA");
    char data_dir[512];
    if (src) { /* the digits of this source tree, not an installed copy */
        snprintf(data_dir, sizeof(data_dir), "%s/../data", src);
        setenv("GGMLC_DATA_DIR", data_dir, 1);
    }
    test_digits();
    if (src) setenv("GGMLC_DATA_DIR", data_dir, 1);
    test_split();
    test_csv();
    test_idx();
    test_fashion_mnist();
    test_plot();
    test_special_files();
    test_limits();
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) tap_diag("could not remove %s", tmpdir);
    return tap_done();
}
