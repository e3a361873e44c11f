/*
 * ggmlc-gpt - train a small byte-level GPT on a text (by default the Sherlock Holmes stories
 * shipped in data/) and generate text from it, written directly on ggml's graph API.
 *
 *   ggmlc-gpt train [--layers N --heads N --width N --context N --batch N --steps N ...]
 *   ggmlc-gpt generate --model FILE [--prompt TEXT --tokens N --temperature T ...]
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "ggml-backend.h"
#include "ggmlc.h"
#include "gpt-model.h"
#include "gpt-run.h"
#include "gpt-sample.h"
#include "gpt-train.h"
#include "tool-options.h"

#define TOOL "ggmlc-gpt"
#define DEFAULT_TEXT "sherlock-holmes.txt.gz"
#define MAX_TEXT_BYTES ((size_t)1 << 30)

/* Exit statuses, documented in --help. */
enum { EXIT_USAGE = 2, EXIT_DATA = 3, EXIT_MODEL = 4 };

struct options {
    /* both */
    const char *device, *model;
    uint64_t seed;
    bool quiet;
    /* train */
    const char *data, *plot;
    struct gpt_hparams hp;
    struct gpt_train_options train;
    /* generate */
    const char *prompt;
    long long n_tokens;
    struct gpt_sampler sampler;
    bool stats;
    enum ggml_type wtype; /* the projections' weights while generating */
};

static void usage(FILE *out) {
    fputs("Usage: ggmlc-gpt train [OPTION]...\n"
          "       ggmlc-gpt generate --model FILE [OPTION]...\n"
          "Train a small byte-level GPT on a text, or generate text with a trained one.\n\n"
          "train:\n"
          "  --data FILE         text to learn, gzip'd or not (default: the Sherlock Holmes stories\n"
          "                      shipped with ggmlc, " DEFAULT_TEXT ")\n"
          "  --layers N          Transformer blocks (default 4)\n"
          "  --heads N           attention heads (default 4)\n"
          "  --width N           embedding width, a multiple of --heads (default 128)\n"
          "  --context N         context length in bytes (default 128)\n"
          "  --batch N           sequences per step (default 16)\n"
          "  --steps N           optimizer steps (default 2000)\n"
          "  --eval-every N      steps per epoch; the validation loss is measured after each (default 200)\n"
          "  --lr RATE           peak AdamW learning rate (default 0.002; warm-up, cosine decay)\n"
          "  --val FRACTION      tail of the text held out for validation (default 0.1)\n"
          "  --plot FILE.svg     write the learning curves (training and validation loss)\n"
          "  --model FILE        the checkpoint (GGUF) to write (default gpt.gguf)\n\n"
          "generate:\n"
          "  --model FILE        the checkpoint written by train (required)\n"
          "  --prompt TEXT       text to continue (default: a new line)\n"
          "  --tokens N          bytes to generate (default 200)\n"
          "  --temperature T     0: always the likeliest byte (default 0.8)\n"
          "  --top-k N           sample among the N likeliest bytes; 0: all (default 40)\n"
          "  --top-p P           sample among the likeliest bytes holding P of the mass (default 0.95)\n"
          "  --repeat-penalty R  make the bytes of the last --repeat-last-n less likely (default 1.1)\n"
          "  --repeat-last-n N   (default 64)\n"
          "  --stats             print the generation speed on stderr at the end\n"
          "  --weights TYPE      store the projection weights as f32 (as trained), f16, bf16,\n"
          "                      q8_0, q4_0, q4_k, q6_k, ... (default f32)\n\n"
          "both:\n"
          "  --device NAME       backend or device to run on (default: the configured preference order)\n"
          "  --seed N            seed of the weights and batches, or of sampling (default 42)\n"
          "  --quiet             train: print only the final losses\n"
          "  --help, --version\n\n"
          "Exit status: 0 success, 2 bad arguments, 3 text missing or unreadable,\n"
          "4 checkpoint missing or invalid, or a failure while training or generating.\n",
          out);
}

/* ------------------------------------------------------------ arguments */

static int bad_arg(const char *option, const char *value, const char *expected) {
    fprintf(stderr, TOOL ": invalid value '%s' for %s: expected %s\n", value, option, expected);
    return EXIT_USAGE;
}

enum {
    O_DATA = 1, O_LAYERS, O_HEADS, O_WIDTH, O_CONTEXT, O_BATCH, O_STEPS, O_EVAL, O_LR, O_VAL, O_PLOT,
    O_MODEL, O_PROMPT, O_TOKENS, O_TEMP, O_TOPK, O_TOPP, O_PENALTY, O_LAST_N, O_STATS, O_DEVICE,
    O_SEED, O_QUIET, O_WEIGHTS
};

static const struct option longopts[] = {
    {"data", required_argument, 0, O_DATA}, {"layers", required_argument, 0, O_LAYERS},
    {"heads", required_argument, 0, O_HEADS}, {"width", required_argument, 0, O_WIDTH},
    {"context", required_argument, 0, O_CONTEXT}, {"batch", required_argument, 0, O_BATCH},
    {"steps", required_argument, 0, O_STEPS}, {"eval-every", required_argument, 0, O_EVAL},
    {"lr", required_argument, 0, O_LR}, {"val", required_argument, 0, O_VAL},
    {"plot", required_argument, 0, O_PLOT}, {"model", required_argument, 0, O_MODEL},
    {"prompt", required_argument, 0, O_PROMPT}, {"tokens", required_argument, 0, O_TOKENS},
    {"temperature", required_argument, 0, O_TEMP}, {"top-k", required_argument, 0, O_TOPK},
    {"top-p", required_argument, 0, O_TOPP}, {"repeat-penalty", required_argument, 0, O_PENALTY},
    {"repeat-last-n", required_argument, 0, O_LAST_N}, {"stats", no_argument, 0, O_STATS},
    {"device", required_argument, 0, O_DEVICE}, {"seed", required_argument, 0, O_SEED},
    {"quiet", no_argument, 0, O_QUIET}, {"weights", required_argument, 0, O_WEIGHTS}, {0, 0, 0, 0},
};

/* Options of one command: those of the other are refused. */
static const int train_only[] = {O_DATA, O_LAYERS, O_HEADS, O_WIDTH, O_CONTEXT, O_BATCH, O_STEPS,
                                 O_EVAL, O_LR, O_VAL, O_PLOT, 0};
static const int generate_only[] = {O_PROMPT, O_TOKENS, O_TEMP, O_TOPK, O_TOPP, O_PENALTY, O_LAST_N, O_STATS,
                                    O_WEIGHTS, 0};

static bool listed(const int *list, int c) {
    for (; *list; list++)
        if (*list == c) return true;
    return false;
}

static int set_int(const char *name, long long lo, long long hi, long long *v) {
    return tool_parse_int(optarg, lo, hi, v) ? 0 : bad_arg(name, optarg, "an integer in range");
}

/* The ggml type of that name (case aside), or GGML_TYPE_COUNT. */
static enum ggml_type type_named(const char *name) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++)
        if (ggml_blck_size((enum ggml_type)t) > 0 && strcasecmp(ggml_type_name((enum ggml_type)t), name) == 0)
            return (enum ggml_type)t;
    return GGML_TYPE_COUNT;
}

/* One option's value into o; 0 or EXIT_USAGE. */
static int apply_option(struct options *o, int c) {
    long long v = 0;
    double d = 0;
    int rc = 0;
    switch (c) {
    case O_DATA: o->data = optarg; break;
    case O_LAYERS: rc = set_int("--layers", 1, GPT_MAX_LAYERS, &v), o->hp.n_layer = (int32_t)v; break;
    case O_HEADS: rc = set_int("--heads", 1, 1024, &v), o->hp.n_head = (int32_t)v; break;
    case O_WIDTH: rc = set_int("--width", 2, 65536, &v), o->hp.n_embd = (int32_t)v; break;
    case O_CONTEXT: rc = set_int("--context", 2, 65536, &v), o->hp.n_ctx = (int32_t)v; break;
    case O_BATCH: rc = set_int("--batch", 1, 1 << 16, &v), o->train.batch = v; break;
    case O_STEPS: rc = set_int("--steps", 1, 1LL << 40, &v), o->train.steps = v; break;
    case O_EVAL: rc = set_int("--eval-every", 1, 1LL << 40, &v), o->train.eval_every = v; break;
    case O_LR:
        if (!tool_parse_double(optarg, 1e-12, 10, &o->train.lr)) rc = bad_arg("--lr", optarg, "a number in (0, 10]");
        break;
    case O_VAL:
        if (!tool_parse_double(optarg, 0, 0.9, &o->train.val_split)) rc = bad_arg("--val", optarg, "a fraction 0..0.9");
        break;
    case O_PLOT: o->plot = optarg; break;
    case O_MODEL: o->model = optarg; break;
    case O_PROMPT: o->prompt = optarg; break;
    case O_TOKENS: rc = set_int("--tokens", 0, 1LL << 40, &o->n_tokens); break;
    case O_TEMP:
        rc = tool_parse_double(optarg, 0, 100, &d) ? 0 : bad_arg("--temperature", optarg, "a number 0..100");
        o->sampler.temperature = (float)d;
        break;
    case O_TOPK: rc = set_int("--top-k", 0, GPT_VOCAB, &v), o->sampler.top_k = (int)v; break;
    case O_TOPP:
        rc = tool_parse_double(optarg, 1e-9, 1, &d) ? 0 : bad_arg("--top-p", optarg, "a number in (0, 1]");
        o->sampler.top_p = (float)d;
        break;
    case O_PENALTY:
        rc = tool_parse_double(optarg, 1, 100, &d) ? 0 : bad_arg("--repeat-penalty", optarg, "a number 1..100");
        o->sampler.repeat_penalty = (float)d;
        break;
    case O_LAST_N: rc = set_int("--repeat-last-n", 0, 1 << 20, &v), o->sampler.repeat_last_n = (int)v; break;
    case O_STATS: o->stats = true; break;
    case O_DEVICE: o->device = optarg; break;
    case O_SEED: rc = set_int("--seed", 0, INT64_MAX, &v), o->seed = (uint64_t)v; break;
    case O_QUIET: o->quiet = true; break;
    case O_WEIGHTS:
        o->wtype = type_named(optarg);
        if (o->wtype == GGML_TYPE_COUNT) rc = bad_arg("--weights", optarg, "a ggml type name such as f16 or q8_0");
        break;
    }
    return rc;
}

static void set_defaults(struct options *o) {
    *o = (struct options){.seed = 42, .n_tokens = 200, .wtype = GGML_TYPE_F32};
    o->hp = (struct gpt_hparams){.n_ctx = 128, .n_embd = 128, .n_head = 4, .n_layer = 4};
    o->train = (struct gpt_train_options){.batch = 16, .steps = 2000, .eval_every = 200, .lr = 2e-3,
                                          .val_split = 0.1};
    o->sampler = (struct gpt_sampler){.temperature = 0.8f, .top_k = 40, .top_p = 0.95f,
                                      .repeat_penalty = 1.1f, .repeat_last_n = 64};
}

/* Checks across options, after they are all read; 0 or EXIT_USAGE. */
static int check_options(struct options *o, bool train) {
    const char *why = train ? gpt_hparams_check(&o->hp) : NULL;
    if (why) return fprintf(stderr, TOOL ": %s\n", why), EXIT_USAGE;
    if (!train && !o->model) return fputs(TOOL ": generate needs --model FILE\n", stderr), EXIT_USAGE;
    if (train && !o->model) o->model = "gpt.gguf";
    const char *out[] = {train ? o->model : NULL, o->plot};
    for (int i = 0; i < 2; i++) {
        if (out[i] && ggmlc_check_writable(out[i]) != GGMLC_OK) {
            tool_fail(TOOL, "%s", ggmlc_last_error()); /* before training, not after */
            return EXIT_USAGE;
        }
    }
    o->train.seed = o->seed, o->train.quiet = o->quiet, o->train.plot = o->plot;
    o->sampler.rng = o->seed * 0x9e3779b97f4a7c15ULL + 1;
    return 0;
}

/* Returns 0, EXIT_USAGE, or -1 after --help or --version. */
static int parse_args(int argc, char **argv, struct options *o, bool *train) {
    if (tool_answer_standard_option(argc, argv, TOOL, usage)) return -1;
    if (argc < 2 || (strcmp(argv[1], "train") != 0 && strcmp(argv[1], "generate") != 0)) {
        fprintf(stderr, TOOL ": %s '%s'\nTry 'ggmlc-gpt --help'.\n",
                argc < 2 ? "missing command: train or generate" : "unknown command", argc < 2 ? "" : argv[1]);
        return EXIT_USAGE;
    }
    *train = strcmp(argv[1], "train") == 0;
    set_defaults(o);
    opterr = 0;
    optind = 2;
    int li = 0;
    for (int c; (c = getopt_long(argc, argv, "", longopts, &li)) != -1;) {
        if (c == '?' || c == ':') {
            if (optopt) fprintf(stderr, TOOL ": option '%s' needs a value\n", argv[optind - 1]);
            else fprintf(stderr, TOOL ": unknown option '%s'\n", argv[optind - 1]);
            return fputs("Try 'ggmlc-gpt --help'.\n", stderr), EXIT_USAGE;
        }
        if (listed(*train ? generate_only : train_only, c)) {
            fprintf(stderr, TOOL ": --%s is not an option of %s\n", longopts[li].name, argv[1]);
            return EXIT_USAGE;
        }
        const int rc = apply_option(o, c);
        if (rc) return rc;
    }
    if (optind < argc) return fprintf(stderr, TOOL ": unexpected argument '%s'\n", argv[optind]), EXIT_USAGE;
    return check_options(o, *train);
}

/* ----------------------------------------------------------------- text */

/* The shipped text: $GGMLC_DATA_DIR, the installed data folder, then this source tree's. */
static const char *default_text_path(char *buf, size_t size) {
    const char *dirs[] = {getenv("GGMLC_DATA_DIR"), GGMLC_PKGDATADIR, GGMLC_SRCDATADIR};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i] || !*dirs[i]) continue;
        snprintf(buf, size, "%s/%s", dirs[i], DEFAULT_TEXT);
        FILE *f = fopen(buf, "rb");
        if (f) return fclose(f), buf;
    }
    return NULL;
}

/* Read a text, gzip'd or not, whole. */
static int read_text(const char *path, unsigned char **text, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (!f) return tool_fail(TOOL, "cannot open %s: %s", path, strerror(errno)), EXIT_DATA;
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    int got = 0;
    while (buf && (got = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap && cap < MAX_TEXT_BYTES) buf = realloc(buf, cap *= 2);
        else if (n == cap) break;
    }
    int err = 0;
    const char *msg = got < 0 ? gzerror(f, &err) : NULL;
    gzclose(f);
    if (!buf || msg || n == cap) {
        free(buf);
        tool_fail(TOOL, "cannot read %s: %s", path, !buf ? "out of memory" : msg ? msg : "larger than 1 GiB");
        return EXIT_DATA;
    }
    *text = buf, *len = n;
    return 0;
}

/* ------------------------------------------------------------- backends */

/* The named device (or the configured best) first, the CPU last; n is 1 when they are one. */
static int open_backends(const char *name, ggml_backend_t *b, int *n) {
    b[0] = name ? ggml_backend_init_by_name(name, NULL) : ggml_backend_init_best();
    if (!b[0]) {
        tool_fail(TOOL, "no device '%s' (ggmlc-info lists them)%s%s", name ? name : "default",
                  ggmlc_last_error()[0] ? ": " : "", ggmlc_last_error());
        return EXIT_USAGE;
    }
    *n = 1;
    ggml_backend_dev_t dev = ggml_backend_get_device(b[0]);
    if (dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) return 0;
    b[1] = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (b[1]) *n = 2;
    return 0;
}

static void close_backends(ggml_backend_t *b, int n) {
    for (int i = n - 1; i >= 0; i--) ggml_backend_free(b[i]);
}

/* ---------------------------------------------------------------- train */

static int run_train(const struct options *o, ggml_backend_t *b, int nb) {
    char path_buf[4096];
    const char *path = o->data ? o->data : default_text_path(path_buf, sizeof path_buf);
    if (!path) return tool_fail(TOOL, "%s not found (set GGMLC_DATA_DIR or give --data)", DEFAULT_TEXT), EXIT_DATA;
    unsigned char *text = NULL;
    size_t len = 0;
    int rc = read_text(path, &text, &len);
    if (rc) return rc;
    struct gpt_model m;
    if (!gpt_model_create(&m, &o->hp, b[0], true, o->seed)) {
        free(text);
        return tool_fail(TOOL, "cannot create the model: %s", ggmlc_last_error()), EXIT_MODEL;
    }
    if (!o->quiet)
        printf("%s: %zu bytes; model: %d layers, %d heads, width %d, context %d, %lld parameters; "
               "device %s\n", path, len, o->hp.n_layer, o->hp.n_head, o->hp.n_embd, o->hp.n_ctx,
               (long long)gpt_model_n_params(&m), ggml_backend_name(b[0]));
    struct gpt_train_result res = {0};
    if (!gpt_train(&m, b, nb, text, len, &o->train, stdout, &res)) {
        tool_fail(TOOL, "training failed: %s", ggmlc_last_error());
        rc = EXIT_MODEL;
    } else if (!gpt_model_save(&m, o->model, res.steps, res.val_loss)) {
        tool_fail(TOOL, "cannot save the model: %s", ggmlc_last_error());
        rc = EXIT_MODEL;
    } else {
        printf("final loss %.4f val_loss %.4f (ln 256 = %.4f); %.0f training tokens/s; saved %s\n",
               res.train_loss, res.val_loss, log(256.0), res.tokens_per_second, o->model);
    }
    gpt_model_free(&m);
    free(text);
    return rc;
}

/* ------------------------------------------------------------- generate */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* When the context is full, keep its last half: re-evaluated as one batch. */
static bool make_room(struct gpt_runner *r, const int32_t *hist, int n_hist, float *logits) {
    const int keep = r->model->hp.n_ctx / 2;
    gpt_runner_reset(r);
    return gpt_runner_eval(r, hist + n_hist - keep, keep, false, logits);
}

static int run_generate(const struct options *o, ggml_backend_t *b, int nb) {
    struct gpt_model m;
    if (!gpt_model_load_as(&m, o->model, b[0], o->wtype)) return tool_fail(TOOL, "%s", ggmlc_last_error()), EXIT_MODEL;
    struct gpt_runner r;
    const char *prompt = o->prompt && *o->prompt ? o->prompt : "\n";
    const int n_prompt = (int)strlen(prompt), n_ctx = m.hp.n_ctx;
    const long long n_total = n_prompt + o->n_tokens;
    int32_t *hist = malloc((size_t)n_total * sizeof *hist);
    float logits[GPT_VOCAB];
    struct gpt_sampler sampler = o->sampler;
    bool ok = hist && gpt_runner_init(&r, &m, b, nb);
    if (!ok) {
        free(hist);
        gpt_model_free(&m);
        return tool_fail(TOOL, "%s", hist ? ggmlc_last_error() : "out of memory"), EXIT_MODEL;
    }
    for (int i = 0; i < n_prompt; i++) hist[i] = (unsigned char)prompt[i];
    fputs(prompt, stdout);
    /* the prompt's tail that fits, as one batch */
    const int first = n_prompt > n_ctx ? n_prompt - n_ctx : 0;
    const double t0 = now_seconds();
    ok = gpt_runner_eval(&r, hist + first, n_prompt - first, false, logits);
    const double t_prompt = now_seconds() - t0;
    long long n = n_prompt;
    for (; ok && n < n_total; n++) {
        hist[n] = gpt_sample(&sampler, logits, hist, (int)n);
        putchar(hist[n]);
        fflush(stdout);
        if (n + 1 == n_total) break;
        if (r.cache.n_past == n_ctx) ok = make_room(&r, hist, (int)n + 1, logits);
        else ok = gpt_runner_eval(&r, hist + n, 1, false, logits);
    }
    const double t_gen = now_seconds() - t0 - t_prompt;
    putchar('\n');
    if (o->stats && ok)
        fprintf(stderr, "prompt %d bytes in %.3f s; %lld bytes generated in %.3f s: %.1f tokens/s; "
                "weights (%s projections) %.2f MiB read per token\n", n_prompt - first, t_prompt, o->n_tokens, t_gen,
                (double)o->n_tokens / t_gen, ggml_type_name(o->wtype), (double)gpt_model_bytes(&m) / (1 << 20));
    if (!ok) tool_fail(TOOL, "generation failed: %s", ggmlc_last_error());
    gpt_runner_free(&r);
    gpt_model_free(&m);
    free(hist);
    return ok ? 0 : EXIT_MODEL;
}

int main(int argc, char **argv) {
    tool_hold_error_logs();
    struct options o;
    bool train = false;
    int rc = parse_args(argc, argv, &o, &train);
    if (rc != 0) return rc < 0 ? 0 : rc;
    tool_flush_subnormals();
    if (ggmlc_init() != GGMLC_OK) return tool_fail(TOOL, "ggmlc could not start: %s", ggmlc_last_error()), EXIT_MODEL;
    tool_flush_errors();
    ggml_backend_t b[2];
    int nb = 0;
    if ((rc = open_backends(o.device, b, &nb)) != 0) return rc;
    rc = train ? run_train(&o, b, nb) : run_generate(&o, b, nb);
    close_backends(b, nb);
    return rc;
}
