/*
 * ggmlc-train - train, evaluate, save and reload a classifier with the model
 * API of ggmlc-nn.h.  With no argument it trains a small network on the 8x8
 * digits embedded in ggmlc and prints the test accuracy.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ggml-backend.h"
#include "ggmlc-nn.h"
#include "tool-options.h"
#include "train-dp.h"

/* Exit statuses, documented in --help. */
enum { EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_TRAIN = 4 };

struct options {
    const char *data;      /* digits, fashion-mnist, a CSV file or a folder of IDX files */
    const char *model;     /* mlp or cnn */
    int epochs;            /* -1: the dataset's default (0 with --load) */
    int64_t batch;
    double lr, val_split;
    const char *backend, *save, *load, *plot;
    bool quiet;
    uint64_t seed;
    long long max_data_mib; /* 0: the library's limit */
    long long limit;        /* train on the first this many training samples; 0: all */
    long long replicas;     /* data-parallel replicas in this process (train-dp.h) */
    const char *devices;    /* their devices, comma-separated; NULL: --backend's */
    const char *shares;     /* their shares of each batch: "auto" or a list; NULL: equal */
};

static void usage(FILE *out) {
    fputs(
        "Usage: ggmlc-train [OPTION]...\n"
        "Train a classifier with ggmlc and print its accuracy on held-out test data.\n"
        "With no option: an MLP on the 8x8 handwritten digits embedded in ggmlc.\n\n"
        "  --data NAME      digits (default), fashion-mnist (Debian package dataset-fashion-mnist),\n"
        "                   a CSV file (gzip'd or not; per line the features, then a label 0..N),\n"
        "                   or a folder of MNIST-style IDX files (train-images-idx3-ubyte.gz, ...)\n"
        "  --model KIND     mlp (default) or cnn (two convolutions with pooling, then dense layers)\n"
        "  --epochs N       training epochs (default 20 for digits, 10 otherwise; 0 with --load)\n"
        "  --batch N        batch size (default 32)\n"
        "  --lr RATE        AdamW learning rate (default 0.001)\n"
        "  --val FRACTION   part of the training data held out for validation (default 0.1; 0: none)\n"
        "  --backend NAME   backend or device to train on (default: the configured preference order);\n"
        "                   the summary's Device line says which one computes\n"
        "  --seed N         seed of the data split, weights and shuffling (default 42)\n"
        "  --load FILE      start from a saved model instead of a new one\n"
        "  --save FILE      save the trained model (GGUF) to FILE\n"
        "  --plot FILE.svg  write the learning curves (loss, accuracy; train and validation)\n"
        "  --max-data MIB   most memory one dataset may take while loaded, in MiB (default 1024,\n"
        "                   or $GGMLC_DATASET_MAX_BYTES); larger data are refused, not read\n"
        "  --limit N        train on the first N training samples only (a quick trial; the test\n"
        "                   data stay whole)\n"
        "  --replicas N     train data-parallel with N replicas in this process, one thread each\n"
        "                   (default: as many as --devices names); under mpirun N per process (1 by\n"
        "                   default), rank 0 alone prints and saves (docs/training.md)\n"
        "  --devices LIST   the replicas' devices, comma-separated (CPU,Vulkan0); round robin\n"
        "  --shares LIST    each replica's relative share of a batch (1,4), or auto: measured\n"
        "  --quiet          print only the results\n"
        "  --help           show this help\n"
        "  --version        show the version of ggmlc\n\n"
        "Exit status: 0 success, 2 bad arguments, 3 data missing or unreadable, 4 model or training failure.\n",
        out);
}

/* ------------------------------------------------------------ arguments */

static int bad_arg(const char *option, const char *value, const char *expected) {
    fprintf(stderr, "ggmlc-train: invalid value '%s' for %s: expected %s\n", value, option, expected);
    return EXIT_USAGE;
}

/* Returns 0, EXIT_USAGE, or -1 after --help or --version. */
static int parse_args(int argc, char **argv, struct options *o) {
    enum {
        O_DATA = 1,
        O_MODEL,
        O_EPOCHS,
        O_BATCH,
        O_LR,
        O_VAL,
        O_BACKEND,
        O_SEED,
        O_LOAD,
        O_SAVE,
        O_PLOT,
        O_MAX_DATA,
        O_LIMIT,
        O_QUIET,
        O_HELP,
        O_VERSION,
        O_REPLICAS,
        O_DEVICES,
        O_SHARES
    };
    static const struct option longopts[] = {
        {"data", required_argument, 0, O_DATA},
        {"model", required_argument, 0, O_MODEL},
        {"epochs", required_argument, 0, O_EPOCHS},
        {"batch", required_argument, 0, O_BATCH},
        {"lr", required_argument, 0, O_LR},
        {"val", required_argument, 0, O_VAL},
        {"backend", required_argument, 0, O_BACKEND},
        {"seed", required_argument, 0, O_SEED},
        {"load", required_argument, 0, O_LOAD},
        {"save", required_argument, 0, O_SAVE},
        {"plot", required_argument, 0, O_PLOT},
        {"quiet", no_argument, 0, O_QUIET},
        {"help", no_argument, 0, O_HELP},
        {"max-data", required_argument, 0, O_MAX_DATA},
        {"limit", required_argument, 0, O_LIMIT},
        {"version", no_argument, 0, O_VERSION},
        {"replicas", required_argument, 0, O_REPLICAS},
        {"devices", required_argument, 0, O_DEVICES},
        {"shares", required_argument, 0, O_SHARES},
        {0, 0, 0, 0},
    };
    *o = (struct options){.data = "digits", .model = "mlp", .epochs = -1, .batch = 32, .lr = 1e-3, .val_split = 0.1, .seed = 42};
    opterr = 0;
    int c;
    long long v;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_DATA: o->data = optarg; break;
        case O_MODEL:
            if (strcmp(optarg, "mlp") != 0 && strcmp(optarg, "cnn") != 0) return bad_arg("--model", optarg, "mlp or cnn");
            o->model = optarg;
            break;
        case O_EPOCHS:
            if (!tool_parse_int(optarg, 0, 100000, &v)) return bad_arg("--epochs", optarg, "an integer 0..100000");
            o->epochs = (int)v;
            break;
        case O_BATCH:
            if (!tool_parse_int(optarg, 1, 1 << 20, &v)) return bad_arg("--batch", optarg, "an integer 1..1048576");
            o->batch = v;
            break;
        case O_LR:
            if (!tool_parse_double(optarg, 1e-12, 10, &o->lr) || o->lr <= 0) return bad_arg("--lr", optarg, "a number in (0, 10]");
            break;
        case O_VAL:
            if (!tool_parse_double(optarg, 0, 0.9, &o->val_split)) return bad_arg("--val", optarg, "a fraction 0..0.9");
            break;
        case O_SEED:
            if (!tool_parse_int(optarg, 0, INT64_MAX, &v)) return bad_arg("--seed", optarg, "a non-negative integer");
            o->seed = (uint64_t)v;
            break;
        case O_BACKEND: o->backend = optarg; break;
        case O_LOAD: o->load = optarg; break;
        case O_SAVE: o->save = optarg; break;
        case O_PLOT: o->plot = optarg; break;
        case O_MAX_DATA:
            if (!tool_parse_int(optarg, 1, 1 << 24, &o->max_data_mib)) return bad_arg("--max-data", optarg, "an integer 1..16777216 (MiB)");
            break;
        case O_LIMIT:
            if (!tool_parse_int(optarg, 1, INT64_MAX, &o->limit)) return bad_arg("--limit", optarg, "a positive number of samples");
            break;
        case O_REPLICAS:
            if (!tool_parse_int(optarg, 1, 64, &o->replicas))
                return bad_arg("--replicas", optarg, "an integer 1..64");
            break;
        case O_DEVICES: o->devices = optarg; break;
        case O_SHARES:
            if (train_dp_parse_shares(optarg, NULL, 0) < 0)
                return bad_arg("--shares", optarg, "auto or positive numbers separated by commas");
            o->shares = optarg;
            break;
        case O_QUIET: o->quiet = true; break;
        case O_HELP: usage(stdout); return -1;
        case O_VERSION: tool_print_version("ggmlc-train"); return -1;
        default:
            if (optopt) fprintf(stderr, "ggmlc-train: option '%s' needs a value\n", argv[optind - 1]);
            else fprintf(stderr, "ggmlc-train: unknown option '%s'\n", argv[optind - 1]);
            fputs("Try 'ggmlc-train --help'.\n", stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ggmlc-train: unexpected argument '%s'\nTry 'ggmlc-train --help'.\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (o->replicas == 0)
        o->replicas = train_dp_device_count(o->devices); /* still 0: not data-parallel */
    if (o->epochs < 0) o->epochs = o->load ? 0 : strcmp(o->data, "digits") == 0 ? 20 : 10;
    if (o->plot && o->epochs == 0) {
        fputs("ggmlc-train: --plot draws the training epochs, but there are none (--epochs 0)\n", stderr);
        return EXIT_USAGE;
    }
    if ((o->save && ggmlc_check_writable(o->save) != GGMLC_OK) || (o->plot && ggmlc_check_writable(o->plot) != GGMLC_OK)) {
        tool_fail("ggmlc-train", "%s", ggmlc_last_error()); /* before training, not after */
        return EXIT_USAGE;
    }
    return 0;
}

/* ----------------------------------------------------------------- data */

/* "(1, 28, 28)" */
static void shape_text(char *buf, size_t size, const int64_t *shape, int n_dims) {
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < n_dims && k < size; i++) k += (size_t)snprintf(buf + k, size - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < size) snprintf(buf + k, size - k, ")");
}

/* Features scaled by the training part only, so no test statistics leak in. */
static void standardize(struct ggmlc_dataset *train, struct ggmlc_dataset *test) {
    const int64_t f = ggmlc_dataset_sample_size(train);
    for (int64_t j = 0; j < f; j++) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < train->n; i++) sum += train->x[i * f + j], sq += (double)train->x[i * f + j] * train->x[i * f + j];
        const double mean = sum / train->n, var = sq / train->n - mean * mean;
        const double inv = var > 1e-12 ? 1 / sqrt(var) : 1;
        for (int64_t i = 0; i < train->n; i++) train->x[i * f + j] = (float)((train->x[i * f + j] - mean) * inv);
        for (int64_t i = 0; i < test->n; i++) test->x[i * f + j] = (float)((test->x[i * f + j] - mean) * inv);
    }
}

/* A CSV file of 16 or more features whose count is a square is taken as square images, which
 * the CNN's two 2x2 poolings can shrink. */
static void csv_as_images(struct ggmlc_dataset *d) {
    const int64_t side = (int64_t)llround(sqrt((double)d->shape[0]));
    if (side >= 4 && side * side == d->shape[0]) {
        d->n_dims = 3;
        d->shape[0] = 1, d->shape[1] = side, d->shape[2] = side;
    }
}

/* An IDX folder may pair training and test images of different sizes: no model takes both. */
static bool same_sample_shape(const struct ggmlc_dataset *train, const struct ggmlc_dataset *test) {
    if (train->n_dims == test->n_dims && memcmp(train->shape, test->shape, sizeof(int64_t) * (size_t)train->n_dims) == 0) return true;
    char train_shape[96], test_shape[96];
    shape_text(train_shape, sizeof train_shape, train->shape, train->n_dims);
    shape_text(test_shape, sizeof test_shape, test->shape, test->n_dims);
    fprintf(stderr, "ggmlc-train: the test samples have shape %s, the training samples %s\n", test_shape, train_shape);
    return false;
}

static int load_data(const struct options *o, struct ggmlc_dataset *train, struct ggmlc_dataset *test) {
    enum ggmlc_status st;
    struct stat sb;
    bool split = false, images = true;
    struct ggmlc_dataset all = {0};
    if (o->max_data_mib > 0) ggmlc_dataset_set_max_bytes((size_t)o->max_data_mib << 20);
    if (strcmp(o->data, "digits") == 0) {
        st = ggmlc_dataset_load_digits(&all), split = true;
    } else if (strcmp(o->data, "fashion-mnist") == 0 || (stat(o->data, &sb) == 0 && S_ISDIR(sb.st_mode))) {
        const char *dir = strcmp(o->data, "fashion-mnist") == 0 ? NULL : o->data;
        if (dir) { /* MNIST's file names */
            char img[4096], lab[4096];
            snprintf(img, sizeof(img), "%s/train-images-idx3-ubyte.gz", dir), snprintf(lab, sizeof(lab), "%s/train-labels-idx1-ubyte.gz", dir);
            st = ggmlc_dataset_load_idx(img, lab, train);
            snprintf(img, sizeof(img), "%s/t10k-images-idx3-ubyte.gz", dir), snprintf(lab, sizeof(lab), "%s/t10k-labels-idx1-ubyte.gz", dir);
            if (st == GGMLC_OK) st = ggmlc_dataset_load_idx(img, lab, test);
        } else {
            st = ggmlc_dataset_load_fashion_mnist(NULL, true, train);
            if (st == GGMLC_OK) st = ggmlc_dataset_load_fashion_mnist(NULL, false, test);
        }
    } else {
        st = ggmlc_dataset_load_csv(o->data, &all), split = true, images = false;
        if (st == GGMLC_OK) csv_as_images(&all);
    }
    if (st == GGMLC_OK && split) st = ggmlc_dataset_split(&all, 0.2, o->seed, train, test);
    ggmlc_dataset_free(&all);
    if (st != GGMLC_OK) {
        tool_fail("ggmlc-train", "cannot load the data '%s': %s", o->data, ggmlc_last_error());
        return EXIT_DATA;
    }
    if (images) {
        ggmlc_dataset_normalize(train); /* pixels to [0, 1] */
        ggmlc_dataset_normalize(test);
    } else {
        standardize(train, test);
    }
    if (test->n_classes > train->n_classes) train->n_classes = test->n_classes;
    if (o->limit > 0 && o->limit < train->n) { /* the arrays stay allocated whole, and are freed so */
        if (!o->quiet) printf("training on the first %lld of %lld samples (--limit)\n", o->limit, (long long)train->n);
        train->n = o->limit;
    }
    return same_sample_shape(train, test) ? 0 : EXIT_DATA;
}

/* ---------------------------------------------------------------- model */

static ggmlc_model *build_mlp(const struct ggmlc_dataset *d) {
    const bool big = ggmlc_dataset_sample_size(d) > 256; /* Fashion-MNIST: 784-256-128-10 */
    const int64_t in = ggmlc_dataset_sample_size(d);
    ggmlc_model *m = ggmlc_sequential(&in, 1);
    if (!m) return NULL;
    if (ggmlc_model_add(m, ggmlc_dense(big ? 256 : 64, GGMLC_ACT_RELU)) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_dense(big ? 128 : 32, GGMLC_ACT_RELU)) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_dense(d->n_classes, GGMLC_ACT_SOFTMAX)) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

/* conv 3x3 (same) + relu, max-pool 2, twice; then dense 128 (64 for small images) and the classes. */
static ggmlc_model *build_cnn(const struct ggmlc_dataset *d) {
    if (d->n_dims != 3) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "the CNN needs images; this data has %lld features per sample, not a square number of at least 16",
                        (long long)d->shape[0]);
        return NULL;
    }
    const bool big = d->shape[1] >= 16;
    ggmlc_model *m = ggmlc_sequential(d->shape, 3);
    if (!m) return NULL;
    if (ggmlc_model_add(m, ggmlc_conv2d(big ? 32 : 16, 3, 3, 1, -1, 1, GGMLC_ACT_RELU)) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_max_pool2d(2, 2)) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_conv2d(big ? 64 : 32, 3, 3, 1, -1, 1, GGMLC_ACT_RELU)) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_max_pool2d(2, 2)) != GGMLC_OK || ggmlc_model_add(m, ggmlc_flatten()) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_dense(big ? 128 : 64, GGMLC_ACT_RELU)) != GGMLC_OK ||
        ggmlc_model_add(m, ggmlc_dense(d->n_classes, GGMLC_ACT_SOFTMAX)) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static ggmlc_model *make_model(const struct options *o, const struct ggmlc_dataset *train) {
    if (o->load) return ggmlc_model_load(o->load, o->backend);
    ggmlc_model *m = strcmp(o->model, "cnn") == 0 ? build_cnn(train) : build_mlp(train);
    if (!m) return NULL;
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.optimizer = GGMLC_OPT_ADAMW;
    co.learning_rate = (float)o->lr;
    co.weight_decay = 0;
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.metrics = GGMLC_METRIC_ACCURACY;
    co.seed = o->seed;
    co.backend = o->backend;
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

/* A loaded model must take this data's samples (as many floats: a CSV row may feed an image
 * model) and give one output per class. */
static bool model_fits_data(ggmlc_model *m, const struct ggmlc_dataset *d) {
    int64_t shape[4];
    char model_shape[96], data_shape[96];
    const int in_dims = ggmlc_model_input_shape(m, 0, shape);
    int64_t in = 1;
    for (int i = 0; i < in_dims; i++) in *= shape[i];
    if (ggmlc_model_input_count(m) != 1 || in != ggmlc_dataset_sample_size(d)) {
        shape_text(model_shape, sizeof model_shape, shape, in_dims);
        shape_text(data_shape, sizeof data_shape, d->shape, d->n_dims);
        fprintf(stderr, "ggmlc-train: the model takes samples of shape %s, the data have samples of shape %s\n", model_shape, data_shape);
        return false;
    }
    const int dims = ggmlc_model_output_shape(m, shape);
    if (dims == 1 && shape[0] >= d->n_classes) return true;
    fprintf(stderr, "ggmlc-train: the model's output (%d dimensions, %lld values) does not fit %d classes\n", dims,
            (long long)shape[0], d->n_classes);
    return false;
}

/* ---------------------------------------------------------------- main */

/* Data-parallel fit (train-dp.h): m is replica 0; the others are built (or loaded) on the next
 * devices of --devices. */
static enum ggmlc_status fit_replicas(const struct options *o, ggmlc_model *m,
                                      const struct ggmlc_dataset *d,
                                      const struct ggmlc_fit_options *fo, ggmlc_history **history) {
    ggmlc_model *reps[64] = {m};
    enum ggmlc_status st = GGMLC_OK;
    char device[128];
    const int n = o->replicas > 0 ? (int)o->replicas : 1;
    for (int i = 1; i < n && st == GGMLC_OK; i++) {
        struct options oi = *o;
        if (o->devices) oi.backend = train_dp_device(o->devices, i, device, sizeof device);
        if (!(reps[i] = make_model(&oi, d))) st = ggmlc_last_status();
    }
    if (st == GGMLC_OK)
        st = train_dp_fit(reps, n, o->shares, d->x, ggmlc_dataset_features(d).len, d->y, (size_t)d->n, d->n,
                          fo, history);
    for (int i = 1; i < n; i++) ggmlc_model_free(reps[i]);
    return st;
}

static int train(const struct options *o, ggmlc_model *m, struct ggmlc_dataset *train_set, ggmlc_history **history) {
    struct ggmlc_dataset fit_set = *train_set, val_set = {0};
    bool own_split = false;
    if (o->val_split > 0) {
        if (ggmlc_dataset_split(train_set, o->val_split, o->seed + 1, &fit_set, &val_set) != GGMLC_OK) {
            tool_fail("ggmlc-train", "cannot hold out validation data: %s", ggmlc_last_error());
            return EXIT_DATA;
        }
        own_split = true;
    }
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = o->epochs;
    fo.batch_size = o->batch;
    fo.verbose = o->quiet ? 0 : 1;
    fo.stop_on_nan = true; /* a diverging run fails (exit 4) instead of saving NaN weights */
    if (own_split) {
        fo.val_x = val_set.x, fo.val_x_len = ggmlc_dataset_features(&val_set).len;
        fo.val_y = val_set.y, fo.val_y_len = (size_t)val_set.n, fo.n_val = val_set.n;
    }
    const enum ggmlc_status st =
        o->replicas > 0 || train_dp_over_mpi()
            ? fit_replicas(o, m, &fit_set, &fo, history)
            : ggmlc_model_fit(m, fit_set.x, ggmlc_dataset_features(&fit_set).len, fit_set.y,
                              (size_t)fit_set.n, fit_set.n, &fo, history);
    if (own_split) ggmlc_dataset_free(&fit_set), ggmlc_dataset_free(&val_set);
    if (st != GGMLC_OK) {
        tool_fail("ggmlc-train", "training failed: %s", ggmlc_last_error());
        return EXIT_TRAIN;
    }
    return 0;
}

static void print_epoch_time(const ggmlc_history *h) {
    const int n = ggmlc_history_epochs(h);
    double total = 0, best = INFINITY;
    for (int e = 0; e < n; e++) total += ggmlc_history_epoch(h, e)->seconds, best = fmin(best, ggmlc_history_epoch(h, e)->seconds);
    if (n == 1) printf("epoch time %.3f s (1 epoch)\n", total);
    else if (n > 1) printf("epoch time %.3f s (mean of %d epochs, fastest %.3f s)\n", total / n, n, best);
}

static int run(const struct options *o, struct ggmlc_dataset *train_set, struct ggmlc_dataset *test_set) {
    struct options o0 = *o; /* replica 0 on the first of --devices */
    char device[128];
    if (o->devices) o0.backend = train_dp_device(o->devices, 0, device, sizeof device);
    ggmlc_model *m = make_model(&o0, train_set);
    if (!m) {
        tool_fail("ggmlc-train", "cannot %s the model: %s", o->load ? "load" : "build",
                  ggmlc_last_error());
        return o->load ? EXIT_DATA : EXIT_TRAIN;
    }
    if (o->load && !model_fits_data(m, test_set)) {
        ggmlc_model_free(m);
        return EXIT_DATA;
    }
    if (!o->quiet) ggmlc_model_summary(m, stdout);
    ggmlc_history *history = NULL;
    int rc = o->epochs > 0 ? train(o, m, train_set, &history) : 0;
    double loss = NAN, metrics[2] = {NAN, NAN};
    if (rc == 0 && ggmlc_model_evaluate(m, test_set->x, ggmlc_dataset_features(test_set).len, test_set->y, (size_t)test_set->n, test_set->n,
                                        256, &loss, metrics) != GGMLC_OK) {
        tool_fail("ggmlc-train", "evaluation failed: %s", ggmlc_last_error());
        rc = EXIT_TRAIN;
    }
    if (rc == 0) {
        printf("test accuracy %.4f (loss %.4f) on %lld samples\n", metrics[0], loss, (long long)test_set->n);
        if (history) print_epoch_time(history);
    }
    if (rc == 0 && o->plot && train_dp_is_leader()) {
        char title[256];
        snprintf(title, sizeof(title), "ggmlc-train: %s, %s", o->model, o->data);
        if (ggmlc_plot_history(history, title, o->plot) != GGMLC_OK) {
            tool_fail("ggmlc-train", "cannot write the plot: %s", ggmlc_last_error());
            rc = EXIT_TRAIN;
        }
    }
    if (rc == 0 && o->save && train_dp_is_leader() &&
        ggmlc_model_save(m, o->save, false) != GGMLC_OK) {
        tool_fail("ggmlc-train", "cannot save the model: %s", ggmlc_last_error());
        rc = EXIT_TRAIN;
    }
    ggmlc_history_free(history);
    ggmlc_model_free(m);
    return rc;
}

/* --backend names a device (Vulkan0, CPU) or a backend (Vulkan: its first device), case aside, as
 * ggml_backend_init_by_name takes them; another name is a usage error listing the valid ones. */
static int check_backend_name(const char *name) {
    if (!name || ggml_backend_dev_by_name(name) || ggml_backend_reg_by_name(name)) return 0;
    fprintf(stderr, "ggmlc-train: invalid value '%s' for --backend: expected one of", name);
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) fprintf(stderr, " %s", ggml_backend_dev_name(ggml_backend_dev_get(i)));
    for (size_t i = 0; i < ggml_backend_reg_count(); i++) {
        const char *reg = ggml_backend_reg_name(ggml_backend_reg_get(i));
        if (!ggml_backend_dev_by_name(reg)) fprintf(stderr, " %s", reg); /* CPU is both */
    }
    fputs(" (see ggmlc-info)\n", stderr);
    return EXIT_USAGE;
}

int main(int argc, char **argv) {
    tool_hold_error_logs(); /* each failure printed once: tool-options.h */
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0) return rc < 0 ? 0 : rc;
    tool_flush_subnormals();
    if (ggmlc_init() != GGMLC_OK) {
        tool_fail("ggmlc-train", "ggmlc could not start: %s", ggmlc_last_error());
        return EXIT_TRAIN;
    }
    tool_flush_errors(); /* a backend that failed while the CPU loaded: said, not fatal */
    if ((rc = check_backend_name(o.backend)) != 0) return rc;
    char device[128];
    for (int i = 0; i < train_dp_device_count(o.devices); i++)
        if ((rc = check_backend_name(train_dp_device(o.devices, i, device, sizeof device))) != 0)
            return rc;
    if ((rc = train_dp_init(&argc, &argv)) != 0) return rc;
    if (!train_dp_is_leader() && !freopen("/dev/null", "w", stdout))
        return EXIT_TRAIN; /* rank 0 alone prints */
    struct ggmlc_dataset train_set = {0}, test_set = {0};
    rc = load_data(&o, &train_set, &test_set);
    if (rc == 0) rc = run(&o, &train_set, &test_set);
    ggmlc_dataset_free(&train_set);
    ggmlc_dataset_free(&test_set);
    train_dp_finish();
    return rc;
}
