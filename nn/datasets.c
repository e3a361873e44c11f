/*
 * datasets.c - labelled datasets for the model API: the embedded 8x8 digits
 * (CSV), MNIST-style IDX files (Fashion-MNIST), a stratified split and
 * normalisation.
 *
 * Files are read through zlib, which reads gzip'd and plain files alike.
 * Every file is treated as hostile: sizes come from headers only after they
 * have been checked against limits and against the data actually present, so
 * a truncated or forged file ends in GGMLC_ERR_FORMAT, never in a crash or a
 * huge allocation.  Only regular files are opened (a FIFO or a device would
 * block or never end), and what a dataset may take in memory is bounded by
 * the dataset limit, so a small gzip'd file cannot expand into gigabytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "ggmlc-internal.h"
#include "ggmlc-nn.h"
#include "ggmlc-plugin.h" /* ggmlc_getenv */

#define CSV_MAX_FIELDS  65536
#define LABEL_MAX       65535
#define IDX_MAX_SAMPLES ((uint32_t)1 << 24)
#define IDX_MAX_PIXELS  ((uint32_t)1 << 16) /* per image: up to 256 x 256 */

#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

void ggmlc_dataset_free(struct ggmlc_dataset *d) {
    if (!d) return;
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof(*d));
}

int64_t ggmlc_dataset_sample_size(const struct ggmlc_dataset *d) {
    int64_t size = 1;
    for (int i = 0; i < d->n_dims; i++) size *= d->shape[i];
    return size;
}

struct ggmlc_array ggmlc_dataset_features(const struct ggmlc_dataset *d) {
    struct ggmlc_array a = {d->x, d->n, {0}, d->n_dims, (size_t)(d->n * ggmlc_dataset_sample_size(d))};
    memcpy(a.shape, d->shape, sizeof a.shape);
    return a;
}

struct ggmlc_array ggmlc_dataset_labels(const struct ggmlc_dataset *d) { return (struct ggmlc_array){d->y, d->n, {1}, 1, (size_t)d->n}; }

/* -------------------------------------------------------------- limit */

#define LIMIT_HINT "(raise it with ggmlc_dataset_set_max_bytes, $GGMLC_DATASET_MAX_BYTES or ggmlc-train --max-data)"

static atomic_size_t max_bytes_set; /* by ggmlc_dataset_set_max_bytes; 0: none */

void ggmlc_dataset_set_max_bytes(size_t max_bytes) { atomic_store(&max_bytes_set, max_bytes); }

/* "1048576", "512K", "64M", "2G" (powers of 1024); false when malformed, 0 or too large. */
static bool parse_size(const char *text, size_t *out) {
    char *end;
    errno = 0;
    const unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *text == '-' || errno) return false;
    const char *units = "KMG", *unit = *end ? strchr(units, *end & ~0x20) : NULL;
    if (*end && (!unit || end[1])) return false;
    const unsigned shift = unit ? 10 * (unsigned)(unit - units + 1) : 0;
    if (v == 0 || v > (SIZE_MAX >> shift)) return false;
    *out = (size_t)v << shift;
    return true;
}

size_t ggmlc_dataset_max_bytes(void) {
    const size_t set = atomic_load(&max_bytes_set);
    if (set) return set;
    const char *env = ggmlc_getenv("GGMLC_DATASET_MAX_BYTES");
    size_t parsed;
    if (env && *env) {
        if (parse_size(env, &parsed)) return parsed;
        ggmlc_log(GGML_LOG_LEVEL_WARN,
                  "ggmlc: GGMLC_DATASET_MAX_BYTES='%s' is not a size (bytes, or with a K, M or G "
                  "suffix): ignored\n", env);
    }
    return GGMLC_DATASET_DEFAULT_MAX_BYTES;
}

/* The dataset limit against what a file would take in memory: GGMLC_ERR_NOMEM beyond it. */
static enum ggmlc_status check_limit(const char *path, const char *what, uint64_t bytes) {
    const size_t limit = ggmlc_dataset_max_bytes();
    if (bytes <= limit) return GGMLC_OK;
    return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: %s would take %llu bytes, more than the dataset limit of %zu bytes %s", path, what,
                           (unsigned long long)bytes, limit, LIMIT_HINT);
}

/* ------------------------------------------------------------ gz files */

/* Regular files only: a FIFO would block (O_NONBLOCK keeps the open itself from waiting for a
 * writer), a device such as /dev/zero would never end. */
static enum ggmlc_status gz_open(const char *path, gzFile *out) {
    if (!path) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "dataset: NULL file name");
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ggmlc_set_error(errno == ENOENT ? GGMLC_ERR_NOT_FOUND : GGMLC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ggmlc_set_error(GGMLC_ERR_IO, "%s: not a regular file (a device, FIFO or socket is not read)", path);
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    gzFile f = gzdopen(fd, "rb");
    if (!f) {
        close(fd);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", path);
    }
    *out = f;
    return GGMLC_OK;
}

/* Whether a data file exists, without opening it (a FIFO would block). */
static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* zlib's description of the stream's error, without the stream name it puts first (the file is
 * opened by descriptor: "<fd:3>"); our messages name the file. */
static const char *gz_reason(gzFile f, int *zerr) {
    const char *msg = gzerror(f, zerr), *sep = strncmp(msg, "<fd:", 4) == 0 ? strstr(msg, ">: ") : NULL;
    return sep ? sep + 3 : msg;
}

/* Read exactly len bytes, of which `after` more follow (for the message); a short read is a
 * truncated or damaged file. */
static enum ggmlc_status gz_read_part(gzFile f, const char *path, void *dst, size_t len, size_t after, const char *what) {
    unsigned char *p = dst;
    while (len > 0) {
        const unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;
        const int got = gzread(f, p, chunk);
        if (got <= 0) {
            int zerr = Z_OK;
            const char *msg = gz_reason(f, &zerr);
            if (got < 0 || zerr != Z_OK)
                return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: damaged while reading %s: %s", path, what, msg);
            return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: truncated: %zu bytes of %s missing", path, len + after, what);
        }
        p += got;
        len -= (size_t)got;
    }
    return GGMLC_OK;
}

static enum ggmlc_status gz_read_exact(gzFile f, const char *path, void *dst, size_t len, const char *what) {
    return gz_read_part(f, path, dst, len, 0, what);
}

/* count bytes of the stream as floats 0..255, read through a small buffer (no second copy). */
static enum ggmlc_status gz_read_bytes_as_floats(gzFile f, const char *path, float *dst, size_t count, const char *what) {
    unsigned char chunk[1 << 16];
    for (size_t done = 0; done < count;) {
        const size_t len = count - done < sizeof chunk ? count - done : sizeof chunk;
        enum ggmlc_status st = gz_read_part(f, path, chunk, len, count - done - len, what);
        if (st != GGMLC_OK) return st;
        for (size_t i = 0; i < len; i++) dst[done + i] = chunk[i];
        done += len;
    }
    return GGMLC_OK;
}

/* After the expected data: the stream must end here, intact (zlib checks the CRC at the end). */
static enum ggmlc_status gz_expect_end(gzFile f, const char *path) {
    unsigned char extra;
    const int got = gzread(f, &extra, 1);
    int zerr = Z_OK;
    const char *msg = gz_reason(f, &zerr);
    if (got < 0 || zerr != Z_OK) return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: damaged: %s", path, msg);
    if (got > 0) return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: unexpected data after the last record", path);
    return GGMLC_OK;
}

/* The whole (decompressed) file as a NUL-terminated string of at most max bytes. */
static enum ggmlc_status gz_read_text(const char *path, size_t max, char **out, size_t *out_len) {
    gzFile f;
    enum ggmlc_status st = gz_open(path, &f);
    if (st != GGMLC_OK) return st;
    const size_t hard = (max < SIZE_MAX / 2 ? max : SIZE_MAX / 2) + 1; /* one byte more than allowed: over the limit */
    size_t cap = hard < (1 << 16) ? hard : 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    st = buf ? GGMLC_OK : ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", path);
    while (st == GGMLC_OK) {
        if (len == cap) {
            if (cap == hard) {
                st = ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: the decompressed text is larger than the dataset limit of %zu bytes %s", path,
                                     max, LIMIT_HINT);
                break;
            }
            cap = cap > hard / 2 ? hard : cap * 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown) {
                st = ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            buf = grown;
        }
        const int got = gzread(f, buf + len, (unsigned)(cap - len > (1u << 30) ? 1u << 30 : cap - len));
        int zerr = Z_OK;
        const char *msg = gz_reason(f, &zerr);
        if (got < 0 || zerr != Z_OK) st = ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: damaged: %s", path, msg);
        else if (got == 0) break;
        else len += (size_t)got;
    }
    gzclose(f);
    if (st != GGMLC_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return GGMLC_OK;
}

/* ------------------------------------------------------------------ CSV */

/* The number of non-blank lines and of their fields (commas + 1), which must be the same on every
 * line: a line of another width is reported with its number before anything is allocated. */
static enum ggmlc_status csv_scan(const char *path, const char *text, int64_t *n_lines, int64_t *n_fields) {
    int64_t lines = 0, fields = 0, line_no = 0, first_line = 0;
    for (const char *p = text; *p;) {
        line_no++;
        const char *end = strchr(p, '\n');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (strspn(p, " \t\r") < len) { /* not blank */
            int64_t f = 1;
            for (size_t i = 0; i < len; i++) f += p[i] == ',';
            if (lines == 0) {
                fields = f, first_line = line_no;
                if (f < 2 || f > CSV_MAX_FIELDS)
                    return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s:%lld: %lld fields, expected 1..%d features and a label", path,
                                           (long long)line_no, (long long)f, CSV_MAX_FIELDS - 1);
            } else if (f != fields) {
                return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s:%lld: %lld fields, but line %lld has %lld (every line: the features, then the label)",
                                       path, (long long)line_no, (long long)f, (long long)first_line, (long long)fields);
            }
            lines++;
        }
        p = end ? end + 1 : p + len;
    }
    if (lines == 0) return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: no data (expected lines of features and a label)", path);
    *n_lines = lines;
    *n_fields = fields;
    return GGMLC_OK;
}

/* Parse one value ending at ',' (not last) or end of line (last); advances *p. */
static bool csv_field(const char **p, bool last, float *value) {
    while (**p == ' ' || **p == '\t') (*p)++;
    if (**p == ',' || **p == '\n' || **p == '\r' || **p == '\0') return false; /* strtof would skip a newline */
    char *end;
    /* an overflow gives infinity; an underflow (ERANGE too) a subnormal or 0: a value like any other */
    const float v = strtof(*p, &end);
    if (end == *p || !isfinite(v)) return false;
    while (*end == ' ' || *end == '\t' || *end == '\r') end++;
    if (last ? (*end != '\n' && *end != '\0') : *end != ',') return false;
    *p = *end ? end + 1 : end;
    *value = v;
    return true;
}

/* The start of a field for a message: up to size - 1 characters before its comma or line end, bytes
 * a terminal could take for control sequences shown as '?'. */
static void csv_field_text(const char *field, char *out, size_t size) {
    size_t k = 0;
    for (; k + 1 < size && field[k] && field[k] != ',' && field[k] != '\n' && field[k] != '\r'; k++)
        out[k] = field[k] >= 0x20 && field[k] < 0x7f ? field[k] : '?';
    out[k] = '\0';
}

static enum ggmlc_status csv_parse(const char *path, const char *text, int64_t n_fields, struct ggmlc_dataset *d) {
    const int64_t n_feat = n_fields - 1;
    int64_t row = 0, line = 0;
    int max_label = -1;
    float max_value = 0.0f;
    for (const char *p = text; *p && row < d->n;) {
        line++;
        const size_t blank = strspn(p, " \t\r");
        if (p[blank] == '\n' || p[blank] == '\0') {
            p += blank + (p[blank] == '\n');
            continue;
        }
        float *x = d->x + row * n_feat;
        for (int64_t j = 0; j < n_fields; j++) {
            float v;
            const char *field = p;
            if (!csv_field(&p, j == n_fields - 1, &v)) {
                char shown[32];
                csv_field_text(field, shown, sizeof shown);
                return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s:%lld: field %lld is not a number: '%s'", path, (long long)line,
                                       (long long)j + 1, shown);
            }
            if (j < n_feat) {
                x[j] = v;
                if (v > max_value) max_value = v;
            } else if (v < 0 || v > LABEL_MAX || v != floorf(v)) {
                return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s:%lld: label %g is not an integer in 0..%d", path,
                                       (long long)line, v, LABEL_MAX);
            } else {
                d->y[row] = v;
                if ((int)v > max_label) max_label = (int)v;
            }
        }
        row++;
    }
    d->n_classes = max_label + 1;
    d->value_max = max_value > 0 ? max_value : 1.0f;
    return GGMLC_OK;
}

enum ggmlc_status ggmlc_dataset_load_csv(const char *path, struct ggmlc_dataset *out) {
    if (!out) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_load_csv: NULL dataset");
    memset(out, 0, sizeof(*out));
    char *text;
    size_t len;
    const size_t limit = ggmlc_dataset_max_bytes();
    enum ggmlc_status st = gz_read_text(path, limit, &text, &len);
    if (st != GGMLC_OK) return st;
    int64_t n = 0, n_fields = 0;
    if (strlen(text) != len) st = ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: not a text file (NUL byte)", path);
    if (st == GGMLC_OK) st = csv_scan(path, text, &n, &n_fields);
    /* the text and the floats are held together while parsing (every line has n_fields >= 2 fields in
     * at least 2 * n_fields - 1 bytes, so the product cannot overflow) */
    if (st == GGMLC_OK) st = check_limit(path, "the text and its floats", (uint64_t)len + (uint64_t)n * (uint64_t)n_fields * sizeof(float));
    if (st != GGMLC_OK) {
        free(text);
        return st;
    }
    struct ggmlc_dataset d = {.n = n, .n_dims = 1, .shape = {n_fields - 1}};
    d.x = malloc((size_t)n * (size_t)(n_fields - 1) * sizeof(float));
    d.y = malloc((size_t)n * sizeof(float));
    st = d.x && d.y ? csv_parse(path, text, n_fields, &d) : ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", path);
    free(text);
    if (st != GGMLC_OK) {
        ggmlc_dataset_free(&d);
        return st;
    }
    *out = d;
    return GGMLC_OK;
}

/* ---------------------------------------------------------------- digits */

/* First existing candidate for data/<name>; the tried folders are listed in errors. */
static enum ggmlc_status find_data_file(const char *name, char *path, size_t size) {
    const char *dirs[] = {ggmlc_getenv("GGMLC_DATA_DIR"), GGMLC_PKGDATADIR, GGMLC_SRCDATADIR};
    char tried[1024] = "";
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        if (!dirs[i] || !*dirs[i]) continue;
        const int len = snprintf(path, size, "%s/%s", dirs[i], name);
        if (len < 0 || (size_t)len >= size) continue;
        if (file_exists(path)) return GGMLC_OK;
        const size_t used = strlen(tried);
        snprintf(tried + used, sizeof(tried) - used, "%s%s", used ? ", " : "", dirs[i]);
    }
    return ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "%s not found in %s (set GGMLC_DATA_DIR to the folder holding it)", name,
                           tried[0] ? tried : "any data folder");
}

enum ggmlc_status ggmlc_dataset_load_digits(struct ggmlc_dataset *out) {
    if (!out) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_load_digits: NULL dataset");
    memset(out, 0, sizeof(*out));
    char path[4096];
    enum ggmlc_status st = find_data_file("digits.csv.gz", path, sizeof(path));
    if (st == GGMLC_OK) st = ggmlc_dataset_load_csv(path, out);
    if (st != GGMLC_OK) return st;
    if (out->shape[0] != 64 || out->n_classes > 10 || out->value_max > 16) {
        ggmlc_dataset_free(out);
        return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: not the 8x8 digits (64 pixels 0..16 and a label 0..9 per line)", path);
    }
    out->n_dims = 3;
    out->shape[0] = 1, out->shape[1] = 8, out->shape[2] = 8;
    out->n_classes = 10;
    out->value_max = 16.0f;
    return GGMLC_OK;
}

/* ------------------------------------------------------------------ IDX */

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Read an IDX header of unsigned bytes with n_dims dimensions; dims[] receives the sizes. */
static enum ggmlc_status idx_header(gzFile f, const char *path, int n_dims, uint32_t *dims) {
    unsigned char head[4 + 4 * 3];
    enum ggmlc_status st = gz_read_exact(f, path, head, 4 + 4 * (size_t)n_dims, "the IDX header");
    if (st != GGMLC_OK) return st;
    if (head[0] != 0 || head[1] != 0)
        return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: not an IDX file (bad magic %02x %02x)", path, head[0], head[1]);
    if (head[2] != 0x08)
        return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: IDX element type 0x%02x, expected unsigned bytes (0x08)", path, head[2]);
    if (head[3] != n_dims)
        return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: IDX file of %d dimensions, expected %d", path, head[3], n_dims);
    for (int i = 0; i < n_dims; i++) {
        dims[i] = be32(head + 4 + 4 * i);
        if (dims[i] == 0) return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: dimension %d is 0", path, i);
    }
    if (dims[0] > IDX_MAX_SAMPLES)
        return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: %u samples, more than the limit of %u", path, dims[0], IDX_MAX_SAMPLES);
    return GGMLC_OK;
}

/* Images: n x h x w bytes scaled to floats 0..255. */
static enum ggmlc_status idx_read_images(const char *path, struct ggmlc_dataset *d) {
    gzFile f;
    enum ggmlc_status st = gz_open(path, &f);
    if (st != GGMLC_OK) return st;
    uint32_t dims[3];
    st = idx_header(f, path, 3, dims);
    if (st == GGMLC_OK && (dims[1] > 256 || dims[2] > 256 || dims[1] * dims[2] > IDX_MAX_PIXELS))
        st = ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: images of %u x %u pixels, more than 256 x 256", path, dims[1], dims[2]);
    const size_t total = st == GGMLC_OK ? (size_t)dims[0] * dims[1] * dims[2] : 0;
    /* the floats of the images and of their labels, read next (the header's sample count is at most
     * 2^24 and an image at most 2^16 pixels: no overflow) */
    if (st == GGMLC_OK) st = check_limit(path, "the images and labels as floats", ((uint64_t)total + dims[0]) * sizeof(float));
    if (st == GGMLC_OK && !(d->x = malloc(total * sizeof(float))))
        st = ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory for %zu pixels", path, total);
    if (st == GGMLC_OK) st = gz_read_bytes_as_floats(f, path, d->x, total, "pixels");
    if (st == GGMLC_OK) st = gz_expect_end(f, path);
    if (st == GGMLC_OK) {
        d->n = dims[0];
        d->n_dims = 3;
        d->shape[0] = 1, d->shape[1] = dims[1], d->shape[2] = dims[2];
        d->value_max = 255.0f;
    }
    gzclose(f);
    return st;
}

/* Labels: n bytes, which must match the number of images. */
static enum ggmlc_status idx_read_labels(const char *path, struct ggmlc_dataset *d) {
    gzFile f;
    enum ggmlc_status st = gz_open(path, &f);
    if (st != GGMLC_OK) return st;
    uint32_t n;
    st = idx_header(f, path, 1, &n);
    if (st == GGMLC_OK && n != d->n)
        st = ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: %u labels for %lld images", path, n, (long long)d->n);
    if (st == GGMLC_OK && !(d->y = malloc((size_t)n * sizeof(float))))
        st = ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory for %u labels", path, n);
    if (st == GGMLC_OK) st = gz_read_bytes_as_floats(f, path, d->y, n, "labels");
    if (st == GGMLC_OK) st = gz_expect_end(f, path);
    if (st == GGMLC_OK) {
        float max_label = 0;
        for (uint32_t i = 0; i < n; i++) max_label = d->y[i] > max_label ? d->y[i] : max_label;
        d->n_classes = (int)max_label + 1;
    }
    gzclose(f);
    return st;
}

enum ggmlc_status ggmlc_dataset_load_idx(const char *images_path, const char *labels_path, struct ggmlc_dataset *out) {
    if (!out) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_load_idx: NULL dataset");
    memset(out, 0, sizeof(*out));
    struct ggmlc_dataset d = {0};
    enum ggmlc_status st = idx_read_images(images_path, &d);
    if (st == GGMLC_OK) st = idx_read_labels(labels_path, &d);
    if (st != GGMLC_OK) {
        ggmlc_dataset_free(&d);
        return st;
    }
    *out = d;
    return GGMLC_OK;
}

enum ggmlc_status ggmlc_dataset_load_fashion_mnist(const char *dir, bool train, struct ggmlc_dataset *out) {
    if (!out) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_load_fashion_mnist: NULL dataset");
    memset(out, 0, sizeof(*out));
    if (!dir) dir = FASHION_MNIST_DIR;
    const char *part = train ? "train" : "t10k";
    char images[4096], labels[4096];
    snprintf(images, sizeof(images), "%s/%s-images-idx3-ubyte.gz", dir, part);
    snprintf(labels, sizeof(labels), "%s/%s-labels-idx1-ubyte.gz", dir, part);
    if (!file_exists(images))
        return ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "Fashion-MNIST not found (%s: %s)%s", images, strerror(errno),
                               strcmp(dir, FASHION_MNIST_DIR) == 0 ? "; on Debian: apt-get install dataset-fashion-mnist" : "");
    enum ggmlc_status st = ggmlc_dataset_load_idx(images, labels, out);
    if (st == GGMLC_OK && (out->shape[1] != 28 || out->shape[2] != 28 || out->n_classes > 10)) {
        ggmlc_dataset_free(out);
        return ggmlc_set_error(GGMLC_ERR_FORMAT, "%s: not Fashion-MNIST (28 x 28 images, labels 0..9)", images);
    }
    if (st == GGMLC_OK) out->n_classes = 10;
    return st;
}

/* ------------------------------------------------------- preprocessing */

void ggmlc_dataset_normalize(struct ggmlc_dataset *d) {
    if (!d || !d->x || !(d->value_max > 0)) return;
    const float scale = 1.0f / d->value_max;
    const int64_t total = d->n * ggmlc_dataset_sample_size(d);
    for (int64_t i = 0; i < total; i++) d->x[i] *= scale;
    d->value_max = 1.0f;
}

/* A dataset of the samples idx[0..n) of src. */
static enum ggmlc_status gather(const struct ggmlc_dataset *src, const int64_t *idx, int64_t n, struct ggmlc_dataset *dst) {
    const int64_t size = ggmlc_dataset_sample_size(src);
    *dst = *src;
    dst->n = n;
    dst->x = malloc((size_t)(n * size) * sizeof(float));
    dst->y = malloc((size_t)n * sizeof(float));
    if (!dst->x || !dst->y) {
        ggmlc_dataset_free(dst);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_dataset_split: out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst->x + i * size, src->x + idx[i] * size, (size_t)size * sizeof(float));
        dst->y[i] = src->y[idx[i]];
    }
    return GGMLC_OK;
}

/* Order the indices by class (counting sort), shuffled within each class, so that every
 * class can give its share to the test part. */
static enum ggmlc_status split_indices(const struct ggmlc_dataset *d, double test_fraction,
                                       struct ggmlc_rng *rng, int64_t *test_idx, int64_t *n_test,
                                       int64_t *train_idx, int64_t *n_train) {
    int64_t *start = calloc((size_t)d->n_classes + 1, sizeof(int64_t));
    int64_t *by_class = malloc((size_t)d->n * sizeof(int64_t));
    if (!start || !by_class) {
        free(start), free(by_class);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_dataset_split: out of memory");
    }
    for (int64_t i = 0; i < d->n; i++) start[(int)d->y[i] + 1]++;
    for (int c = 0; c < d->n_classes; c++) start[c + 1] += start[c];
    int64_t *fill = calloc((size_t)d->n_classes, sizeof(int64_t));
    if (!fill) {
        free(start), free(by_class);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_dataset_split: out of memory");
    }
    for (int64_t i = 0; i < d->n; i++) {
        const int c = (int)d->y[i];
        by_class[start[c] + fill[c]++] = i;
    }
    *n_test = *n_train = 0;
    for (int c = 0; c < d->n_classes; c++) {
        const int64_t count = start[c + 1] - start[c];
        ggmlc__rng_shuffle(rng, by_class + start[c], count);
        const int64_t k = (int64_t)llround(test_fraction * (double)count);
        for (int64_t i = 0; i < count; i++) {
            const int64_t sample = by_class[start[c] + i];
            if (i < k) test_idx[(*n_test)++] = sample;
            else train_idx[(*n_train)++] = sample;
        }
    }
    free(fill), free(start), free(by_class);
    return GGMLC_OK;
}

static enum ggmlc_status check_labels(const struct ggmlc_dataset *d) {
    if (d->n_classes < 1 || d->n_classes > LABEL_MAX + 1)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_split: %d classes", d->n_classes);
    for (int64_t i = 0; i < d->n; i++)
        if (!(d->y[i] >= 0 && d->y[i] < d->n_classes) || d->y[i] != floorf(d->y[i]))
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_split: label %g of sample %lld is not a class 0..%d",
                                   d->y[i], (long long)i, d->n_classes - 1);
    return GGMLC_OK;
}

enum ggmlc_status ggmlc_dataset_split(const struct ggmlc_dataset *d, double test_fraction, uint64_t seed,
                                      struct ggmlc_dataset *train, struct ggmlc_dataset *test) {
    if (!d || !d->x || !d->y || !train || !test || train == test)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_split: NULL or identical datasets");
    if (!(test_fraction > 0 && test_fraction < 1))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_split: test fraction %g is not in (0, 1)", test_fraction);
    enum ggmlc_status st = check_labels(d);
    if (st != GGMLC_OK) return st;
    int64_t *test_idx = malloc((size_t)d->n * sizeof(int64_t)), *train_idx = malloc((size_t)d->n * sizeof(int64_t));
    int64_t n_test = 0, n_train = 0;
    struct ggmlc_rng rng;
    ggmlc__rng_seed(&rng, seed);
    st = test_idx && train_idx ? split_indices(d, test_fraction, &rng, test_idx, &n_test, train_idx, &n_train)
                               : ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_dataset_split: out of memory");
    if (st == GGMLC_OK && (n_test == 0 || n_train == 0))
        st = ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dataset_split: a fraction of %g of %lld samples leaves a part empty",
                             test_fraction, (long long)d->n);
    struct ggmlc_dataset tr = {0}, te = {0};
    if (st == GGMLC_OK) {
        ggmlc__rng_shuffle(&rng, test_idx, n_test);
        ggmlc__rng_shuffle(&rng, train_idx, n_train);
        st = gather(d, train_idx, n_train, &tr);
    }
    if (st == GGMLC_OK) st = gather(d, test_idx, n_test, &te);
    free(test_idx), free(train_idx);
    if (st != GGMLC_OK) {
        ggmlc_dataset_free(&tr);
        return st;
    }
    *train = tr;
    *test = te;
    return GGMLC_OK;
}
