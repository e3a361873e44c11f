/*
 * test-loader.c - the plugin loader and its configuration, driven through
 * generated config files and the test plugins of tests/plugins/.
 *
 * Every scenario runs in a fork()ed child with its own environment, so a
 * crash fails only that scenario and each one starts with an empty
 * registry.  The child captures the log to count what was reported.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggmlc-plugin.h"
#include "ggmlc.h"
#include "testutil.h"

static char root[512];        /* scratch folder of this run */
static char plugdir[1024];    /* the built test plugins */

/* ------------------------------------------------------------ helpers */

#define MAX_LOG 256
static struct {
    enum ggml_log_level level;
    char text[1024];
} log_lines[MAX_LOG];
static int n_log;

static void capture_log(enum ggml_log_level level, const char *text, void *user_data) {
    if (n_log < MAX_LOG) {
        log_lines[n_log].level = level;
        snprintf(log_lines[n_log].text, sizeof log_lines[n_log].text, "%s", text);
        n_log++;
    }
}

/* Messages at level containing every one of the (NULL-terminated) substrings. */
static int count_log(enum ggml_log_level level, ...) {
    int n = 0;
    for (int i = 0; i < n_log; i++) {
        if (log_lines[i].level != level) continue;
        bool all = true;
        va_list args;
        va_start(args, level);
        for (const char *s; (s = va_arg(args, const char *));) all = all && strstr(log_lines[i].text, s);
        va_end(args);
        n += all;
    }
    return n;
}

static bool check_failed;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("# line %d: check failed: %s: ", __LINE__, #cond);           \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            check_failed = true;                                                \
        }                                                                       \
    } while (0)

static void write_file(const char *path, const char *fmt, ...) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; (p = strchr(p, '/')); p++) { /* mkdir -p of its folder */
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        printf("# cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    va_list args;
    va_start(args, fmt);
    vfprintf(f, fmt, args);
    va_end(args);
    fclose(f);
}

/* root/name into buf. */
static const char *in_root(char *buf, const char *name) {
    snprintf(buf, PATH_MAX, "%s/%s", root, name);
    return buf;
}

static const char *plugin(char *buf, const char *name) {
    snprintf(buf, PATH_MAX, "%s/%s.so", plugdir, name);
    return buf;
}

static bool find_info(const char *name, struct ggmlc_backend_info *info) {
    for (size_t i = 0; ggmlc_backend_get_info(i, info); i++)
        if (strcmp(info->name, name) == 0) return true;
    printf("# backend %s is not listed\n", name);
    return false;
}

static bool contains(const char *text, const char *part) { return text && strstr(text, part); }

/* Write a config whose backends are `broken` (library path) and the good plugin "alpha". */
static void config_with_broken(const char *file, const char *library) {
    char good[PATH_MAX];
    write_file(file,
               "[ggmlc]\nbackends = broken, alpha\n\n"
               "[backend.broken]\nlibrary = %s\n\n"
               "[backend.alpha]\nlibrary = %s\ndevice = A0\n"
               "[backend.cpu]\nlibrary = %s\ndevice = C0\n",
               library, plugin(good, "good"), good);
    setenv("GGMLC_CONFIG", file, 1);
}

/* The broken backend failed with status and a reason mentioning `why`, was
 * reported in exactly one ERROR line, and alpha still works. */
static void expect_broken(enum ggmlc_status status, const char *path, const char *why) {
    struct ggmlc_backend_info info;
    CHECK(ggmlc_init() == GGMLC_OK, "init: %s", ggmlc_last_error());
    if (find_info("broken", &info)) {
        CHECK(!info.loaded && info.status == status, "status %s", ggmlc_status_name(info.status));
        CHECK(contains(info.reason, path) && contains(info.reason, why), "reason: %s", info.reason ? info.reason : "(none)");
        CHECK(info.enabled && info.priority == 0 && info.reg == NULL, "enabled %d priority %d", info.enabled, info.priority);
    }
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "", NULL) == 1, "%d error lines", count_log(GGML_LOG_LEVEL_ERROR, "", NULL));
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "backend 'broken'", why, NULL) == 1, "the error line gives the reason");
    ggml_backend_reg_t alpha = ggml_backend_reg_by_name("ALPHA");
    CHECK(alpha != NULL && ggml_backend_reg_dev_count(alpha) == 1, "alpha is loaded");
    CHECK(ggml_backend_dev_count() >= 1 && strcmp(ggml_backend_dev_name(ggml_backend_dev_get(0)), "A0") == 0,
          "the first device is alpha's");
}

/* The test plugin name.so, configured as backend broken, fails as expect_broken says. */
static void broken_plugin(const char *name, enum ggmlc_status status, const char *why) {
    char cfg[PATH_MAX], lib[PATH_MAX], file[64];
    snprintf(file, sizeof file, "%.40s/ggmlc.ini", name);
    config_with_broken(in_root(cfg, file), plugin(lib, name));
    expect_broken(status, lib, why);
}

/* ---------------------------------------------------------- scenarios */

static void broken_missing_file(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    config_with_broken(in_root(cfg, "missing/ggmlc.ini"), in_root(lib, "missing/nope.so"));
    expect_broken(GGMLC_ERR_NOT_FOUND, lib, "No such file");
}

static void broken_not_shared_object(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    write_file(in_root(lib, "text/fake.so"), "this is a text file, not a shared object\n");
    config_with_broken(in_root(cfg, "text/ggmlc.ini"), lib);
    expect_broken(GGMLC_ERR_PLUGIN, lib, "cannot load");
}

static void broken_no_entry(void) {
    broken_plugin("noentry", GGMLC_ERR_PLUGIN, "no symbol ggmlc_plugin_entry_v1");
}

static void broken_abi_major(void) {
    broken_plugin("abimajor", GGMLC_ERR_ABI, "major versions must match");
}

static void broken_abi_minor(void) {
    broken_plugin("abiminor", GGMLC_ERR_ABI, "newer than this libggmlc");
}

static void broken_magic(void) {
    broken_plugin("badmagic", GGMLC_ERR_ABI, "bad plugin magic 0xdeadbeef");
}

static void broken_probe(void) {
    broken_plugin("probefail", GGMLC_ERR_UNSUPPORTED, "cannot run on this machine: the test hardware is missing");
}

/* The entry symbol is checked before the descriptor is read: its size and that it lies in the plugin. */
static void broken_small_entry(void) {
    broken_plugin("smallentry", GGMLC_ERR_ABI, "has 4 bytes, fewer than the");
}

static void broken_abs_entry(void) {
    broken_plugin("absentry", GGMLC_ERR_ABI, "does not lie inside the plugin");
}

static void broken_wild_init(void) {
    broken_plugin("wildinit", GGMLC_ERR_ABI, "points outside the plugin's code");
}

/* init fails after registering a device: the loader frees what it left behind. */
static void broken_init(void) {
    char cfg[PATH_MAX], lib[PATH_MAX], marker[PATH_MAX], good[PATH_MAX];
    in_root(marker, "initfail/freed.txt");
    write_file(in_root(cfg, "initfail/ggmlc.ini"),
               "[ggmlc]\nbackends = broken, alpha\n[backend.broken]\nlibrary = %s\nmarker = %s\n"
               "[backend.alpha]\nlibrary = %s\ndevice = A0\n[backend.cpu]\nlibrary = %s\n",
               plugin(lib, "initfail"), marker, plugin(good, "good"), good);
    setenv("GGMLC_CONFIG", cfg, 1);
    expect_broken(GGMLC_ERR_BACKEND, lib, "init failed: the test device is on fire");
    CHECK(access(marker, F_OK) == 0, "the failed plugin's half-registered device was freed");
    CHECK(ggml_backend_dev_by_name("initfail0") == NULL, "the failed plugin's device is not listed");
}

static void bad_ini_syntax(void) {
    char cfg[PATH_MAX], good[PATH_MAX];
    write_file(in_root(cfg, "syntax/ggmlc.ini"), "[ggmlc]\nbackends = alpha\nthis line is not ini\n[backend.alpha]\nlibrary = %s\n",
               plugin(good, "good"));
    setenv("GGMLC_CONFIG", cfg, 1);
    CHECK(ggmlc_init() == GGMLC_OK, "init");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "syntax/ggmlc.ini:3:", "syntax error", NULL) == 1, "the error names file and line 3");
    CHECK(ggml_backend_reg_by_name("alpha") != NULL, "the rest of the file still applies");
}

static void unknown_key_warning(void) {
    char cfg[PATH_MAX], good[PATH_MAX];
    write_file(in_root(cfg, "unknown/ggmlc.ini"), "[ggmlc]\nbackends = alpha\nfrobnicate = 1\n[backend.alpha]\nlibrary = %s\n",
               plugin(good, "good"));
    setenv("GGMLC_CONFIG", cfg, 1);
    CHECK(ggmlc_init() == GGMLC_OK, "init");
    CHECK(count_log(GGML_LOG_LEVEL_WARN, "unknown/ggmlc.ini:3:", "frobnicate", NULL) == 1, "one warning with file:line");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "frobnicate", NULL) == 0 && count_log(GGML_LOG_LEVEL_ERROR, "alpha", NULL) == 0,
          "a warning, not an error");
    CHECK(ggml_backend_reg_by_name("alpha") != NULL, "alpha loads");
}

static void duplicate_backend(void) {
    char cfg[PATH_MAX], good[PATH_MAX];
    write_file(in_root(cfg, "dup/ggmlc.ini"),
               "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = %s\ndevice = FIRST\n[backend.alpha]\nlibrary = %s\ndevice = SECOND\n",
               plugin(good, "good"), plugin(good, "good"));
    setenv("GGMLC_CONFIG", cfg, 1);
    CHECK(ggmlc_init() == GGMLC_OK, "init");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "dup/ggmlc.ini:6:", "defined twice", "dup/ggmlc.ini:3", NULL) == 1,
          "the error names both places");
    CHECK(ggml_backend_dev_by_name("FIRST") != NULL && ggml_backend_dev_by_name("SECOND") == NULL, "the first definition wins");
    CHECK(ggmlc_backend_count() == 2, "alpha and the implicit cpu are listed, not a second alpha (%zu)", ggmlc_backend_count());
}

/* The marker plugin writes a file when it is opened: disabled, it must not be. */
static void disabled_never_opened(bool enabled) {
    char cfg[PATH_MAX], lib[PATH_MAX], marker[PATH_MAX];
    in_root(marker, enabled ? "enabled/opened.txt" : "disabled/opened.txt");
    write_file(in_root(cfg, enabled ? "enabled/ggmlc.ini" : "disabled/ggmlc.ini"),
               "[ggmlc]\nbackends = mark\n[backend.mark]\nlibrary = %s\nenabled = %s\n", plugin(lib, "marker"),
               enabled ? "yes" : "false");
    setenv("GGMLC_CONFIG", cfg, 1);
    setenv("GGMLC_TEST_MARKER", marker, 1);
    ggmlc_init();
    struct ggmlc_backend_info info;
    if (find_info("mark", &info)) {
        CHECK(info.enabled == enabled && info.loaded == enabled, "enabled %d loaded %d", info.enabled, info.loaded);
        if (!enabled) CHECK(contains(info.reason, "disabled"), "reason %s", info.reason ? info.reason : "(none)");
    }
    CHECK((access(marker, F_OK) == 0) == enabled, "the library was %s", enabled ? "not opened" : "opened");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "mark", NULL) == 0, "nothing reported about it");
}
static void disabled_backend(void) { disabled_never_opened(false); }
static void enabled_marker_control(void) { disabled_never_opened(true); }

/* library = ../plugins/good.so is relative to the config file, not to the cwd. */
static void relative_library_path(void) {
    char cfg[PATH_MAX], copy[PATH_MAX], good[PATH_MAX];
    in_root(copy, "rel/plugins/good.so");
    write_file(copy, "");
    unlink(copy);
    if (symlink(plugin(good, "good"), copy) != 0) printf("# symlink: %s\n", strerror(errno));
    write_file(in_root(cfg, "rel/conf/ggmlc.ini"), "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = ../plugins/good.so\n");
    setenv("GGMLC_CONFIG", cfg, 1);
    CHECK(chdir("/") == 0, "chdir");
    CHECK(ggmlc_init() == GGMLC_OK, "init");
    struct ggmlc_backend_info info;
    if (find_info("alpha", &info)) {
        CHECK(info.loaded, "loaded: %s", info.reason ? info.reason : "");
        CHECK(info.path && strstr(info.path, "/rel/conf/../plugins/good.so") && info.path[0] == '/', "path %s",
              info.path ? info.path : "(null)");
        CHECK(info.config_line == 4 && contains(info.config_file, "rel/conf/ggmlc.ini"), "%s:%d", info.config_file,
              info.config_line);
    }
}

/* Two test backends and no CPU: without [backend.cpu] the loader would add the CPU plugin
 * of the plugin folder, which exists once ggmlc is installed. */
static void write_two_backends(const char *cfg) {
    char good[PATH_MAX];
    write_file(cfg,
               "[ggmlc]\nbackends = alpha, beta\n[backend.alpha]\nlibrary = %s\ndevice = A0\n"
               "[backend.beta]\nlibrary = %s\ndevice = B0\ntype = gpu\n[backend.cpu]\nenabled = false\n",
               plugin(good, "good"), plugin(good, "good"));
    setenv("GGMLC_CONFIG", cfg, 1);
}

static const char *first_device(void) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(0);
    return dev ? ggml_backend_dev_name(dev) : "(none)";
}

static void config_order(void) {
    char cfg[PATH_MAX];
    write_two_backends(in_root(cfg, "order/ggmlc.ini"));
    CHECK(strcmp(first_device(), "A0") == 0, "first device %s", first_device());
    CHECK(ggml_backend_reg_count() == 2 && ggml_backend_dev_count() == 2, "two registries and devices");
    ggml_backend_t best = ggml_backend_init_best();
    CHECK(best && strcmp(ggml_backend_name(best), "B0") == 0, "init_best picks the GPU-type device");
    ggml_backend_free(best);
}

static void env_backends_override(void) {
    char cfg[PATH_MAX];
    write_two_backends(in_root(cfg, "envorder/ggmlc.ini"));
    setenv("GGMLC_BACKENDS", "beta,alpha", 1);
    CHECK(strcmp(first_device(), "B0") == 0, "first device %s", first_device());
    struct ggmlc_backend_info info;
    if (find_info("beta", &info)) CHECK(info.priority == 0, "beta priority %d", info.priority);
}

static void env_backends_leaves_out(void) {
    char cfg[PATH_MAX];
    write_two_backends(in_root(cfg, "envonly/ggmlc.ini"));
    setenv("GGMLC_BACKENDS", "beta", 1);
    CHECK(ggml_backend_reg_by_name("alpha") == NULL && ggml_backend_reg_by_name("beta") != NULL, "only beta is loaded");
    struct ggmlc_backend_info info;
    if (find_info("alpha", &info))
        CHECK(!info.enabled && info.priority == -1 && contains(info.reason, "GGMLC_BACKENDS"), "alpha: %s",
              info.reason ? info.reason : "(none)");
}

static void dropin_registers_backend(void) {
    char cfg[PATH_MAX], dropin[PATH_MAX], good[PATH_MAX];
    write_file(in_root(cfg, "dropin/ggmlc.ini"), "[ggmlc]\nbackends = cpu\n[backend.cpu]\nlibrary = %s\ndevice = C0\n",
               plugin(good, "good"));
    write_file(in_root(dropin, "dropin/backends.d/50-extra.ini"), "[backend.extra]\nlibrary = %s\ndevice = X0\n",
               plugin(good, "good"));
    write_file(in_root(dropin, "dropin/backends.d/README"), "not an ini file: ignored\n");
    setenv("GGMLC_CONFIG", cfg, 1);
    CHECK(ggmlc_config_file_count() == 2 && contains(ggmlc_config_file(1), "backends.d/50-extra.ini"), "%zu files",
          ggmlc_config_file_count());
    CHECK(ggml_backend_reg_by_name("extra") != NULL, "the drop-in backend is loaded");
    CHECK(strcmp(first_device(), "X0") == 0, "it comes before the CPU, the last resort (first: %s)", first_device());
}

static void no_config_file(void) {
    char empty[PATH_MAX];
    in_root(empty, "empty-home");
    mkdir(empty, 0755);
    unsetenv("GGMLC_CONFIG");
    setenv("XDG_CONFIG_HOME", empty, 1);
    setenv("HOME", empty, 1);
    ggmlc_init();
    CHECK(ggmlc_config_file_count() == 0, "no file was read");
    struct ggmlc_backend_info info;
    CHECK(ggmlc_backend_count() == 1, "only the CPU fallback is listed");
    if (find_info("cpu", &info)) {
        CHECK(contains(info.path, GGMLC_PLUGINDIR "/cpu.so"), "path %s", info.path);
        CHECK(info.loaded || contains(info.reason, "CPU backend"), "reason %s", info.reason ? info.reason : "");
    }
}

static void config_env_missing_file(void) {
    char cfg[PATH_MAX];
    setenv("GGMLC_CONFIG", in_root(cfg, "does/not/exist.ini"), 1);
    ggmlc_init();
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "GGMLC_CONFIG", "does/not/exist.ini", NULL) == 1, "the missing file is reported");
    CHECK(ggmlc_config_file_count() == 0, "no file read");
}

static void cpu_failure_is_clear(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    write_file(in_root(cfg, "cpufail/ggmlc.ini"), "[backend.cpu]\nlibrary = %s\n", in_root(lib, "cpufail/none.so"));
    setenv("GGMLC_CONFIG", cfg, 1);
    CHECK(ggmlc_init() != GGMLC_OK, "nothing loaded");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "backend 'cpu'", "CPU backend", "none.so", NULL) == 1, "the error says the CPU is gone");
    CHECK(ggml_backend_init_best() == NULL && ggmlc_last_status() == GGMLC_ERR_NOT_FOUND, "init_best fails cleanly");
}

/* -------------------------------------------------- using what loaded */

/* A config with the good plugin as "cpu" (C0), "alpha" (A0) and, optionally, more text. */
static void write_good_config(const char *file, const char *extra) {
    char good[PATH_MAX];
    write_file(file,
               "[ggmlc]\nbackends = alpha, cpu\n[backend.cpu]\nlibrary = %s\ndevice = C0\n"
               "[backend.alpha]\nlibrary = %s\ndevice = A0\n%s",
               plugin(good, "good"), plugin(good, "good"), extra);
    setenv("GGMLC_CONFIG", file, 1);
}

/* An elementwise node built by hand (the test plugin only needs the node's fields). */
static struct ggml_tensor *binary_node(struct ggml_context *ctx, enum ggml_op op, struct ggml_tensor *a, struct ggml_tensor *b) {
    struct ggml_tensor *t = ggml_new_tensor(ctx, GGML_TYPE_F32, ggml_n_dims(a), a->ne);
    t->op = op;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

/* a (7x3) + transpose(bt) (bt is 3x7, so the operand is a strided view). */
static struct ggml_cgraph *build_add(struct ggml_context *ctx, struct ggml_tensor **out, float *expected) {
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3);
    struct ggml_tensor *bt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 7);
    float *pa = a->data, *pb = bt->data;
    for (int i = 0; i < 21; i++) {
        pa[i] = 0.5f * i - 3.0f;
        pb[i] = -0.25f * i + 1000.0f;
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 7; c++) expected[r * 7 + c] = pa[r * 7 + c] + pb[c * 3 + r];
    *out = binary_node(ctx, GGML_OP_ADD, a, ggml_transpose(ctx, bt));
    ggml_set_name(*out, "sum");
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, *out);
    return g;
}

static void compute_default_path(void) {
    char cfg[PATH_MAX];
    write_good_config(in_root(cfg, "compute/ggmlc.ini"), "");
    ggml_backend_t backend = ggml_backend_init_by_name("alpha", NULL);
    CHECK(backend && strcmp(ggml_backend_name(backend), "A0") == 0, "a backend on A0");
    if (!backend) return;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *sum;
    float expected[21];
    struct ggml_cgraph *g = build_add(ctx, &sum, expected);
    CHECK(ggml_backend_graph_compute(backend, g) == GGML_STATUS_SUCCESS, "compute: %s", ggmlc_last_error());
    CHECK(memcmp(sum->data, expected, sizeof expected) == 0, "a + transpose(b) is exact");

    struct ggml_tensor *prod = binary_node(ctx, GGML_OP_MUL, sum, sum);
    struct ggml_cgraph *g2 = ggml_new_graph(ctx);
    ggml_build_forward_expand(g2, prod);
    CHECK(!ggml_backend_supports_op(backend, prod), "MUL is not supported");
    CHECK(ggml_backend_graph_compute(backend, g2) == GGML_STATUS_FAILED, "an unsupported op fails");
    CHECK(ggmlc_last_status() == GGMLC_ERR_UNSUPPORTED && contains(ggmlc_last_error(), "MUL") &&
          contains(ggmlc_last_error(), "not supported by backend A0"), "error: %s", ggmlc_last_error());
    ggml_free(ctx);
    ggml_backend_free(backend);
}

static int compared_nodes;
static bool same_values(int index, struct ggml_tensor *t1, struct ggml_tensor *t2, void *user_data) {
    compared_nodes++;
    CHECK(t1 != t2 && memcmp(t1->data, t2->data, ggml_nbytes(t1)) == 0, "node %d differs", index);
    if (strcmp(t1->name, "sum") == 0) CHECK(memcmp(t1->data, user_data, ggml_nbytes(t1)) == 0, "node %d is wrong", index);
    return true;
}

static void compare_two_backends(void) {
    char cfg[PATH_MAX];
    write_good_config(in_root(cfg, "compare/ggmlc.ini"), "");
    ggml_backend_t b1 = ggml_backend_init_by_name("A0", NULL), b2 = ggml_backend_init_by_name("cpu", NULL);
    CHECK(b1 && b2, "two backends");
    if (!b1 || !b2) return;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *sum;
    float expected[21];
    struct ggml_cgraph *g = build_add(ctx, &sum, expected);
    CHECK(ggml_backend_compare_graph_backend(b1, b2, g, same_values, expected, NULL, 0), "compare: %s", ggmlc_last_error());
    CHECK(compared_nodes == ggml_graph_n_nodes(g) && compared_nodes >= 1, "%d nodes compared", compared_nodes);
    ggml_free(ctx);
    ggml_backend_free(b1);
    ggml_backend_free(b2);
}

static void load_by_program(void) {
    char cfg[PATH_MAX], good[PATH_MAX], bad[PATH_MAX];
    write_good_config(in_root(cfg, "byhand/ggmlc.ini"), "");
    const size_t n_regs = ggml_backend_reg_count(), n_info = ggmlc_backend_count();
    ggml_backend_reg_t reg = ggml_backend_load(plugin(good, "marker"));
    CHECK(reg && ggml_backend_reg_count() == n_regs + 1 && ggml_backend_reg_by_name("marker") == reg, "marker.so registered");
    CHECK(ggml_backend_load(good) == reg, "loading it again gives the same registry");
    CHECK(ggml_backend_load("tests/plugins/.libs/good.so") == NULL && contains(ggmlc_last_error(), "relative"),
          "a relative path is refused: %s", ggmlc_last_error());
    CHECK(ggml_backend_load("nonexistent-plugin.so") == NULL && contains(ggmlc_last_error(), GGMLC_PLUGINDIR "/nonexistent-plugin.so"),
          "a bare name is looked up in the plugin folder: %s", ggmlc_last_error());
    CHECK(ggml_backend_load(plugin(bad, "abimajor")) == NULL, "a broken plugin gives NULL");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, bad, "major", NULL) == 1, "and one error line");
    CHECK(ggmlc_backend_count() == n_info + 3, "all three are listed");
    ggml_backend_unload(reg);
    CHECK(ggml_backend_reg_count() == n_regs && ggml_backend_reg_by_name("marker") == NULL, "unloaded");
    struct ggmlc_backend_info info;
    if (find_info("marker", &info)) CHECK(!info.loaded && contains(info.reason, "unloaded"), "listed as unloaded");
}

static void load_all_from_folder(void) {
    char cfg[PATH_MAX], noentry[PATH_MAX];
    write_good_config(in_root(cfg, "fromdir/ggmlc.ini"), "");
    ggml_backend_load_all_from_path(plugdir);
    CHECK(ggml_backend_reg_by_name("marker") != NULL, "a good plugin loads");
    CHECK(ggml_backend_reg_by_name("good") == NULL, "good.so, loaded already by the config, is not loaded twice");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "initfail.so", NULL) == 1 && count_log(GGML_LOG_LEVEL_ERROR, "badmagic.so", NULL) == 1,
          "the broken ones are reported");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, plugin(noentry, "noentry"), NULL) == 0, "a .so without the entry is skipped");
}

/* Lines in file (0 when it does not exist). */
static int count_lines(const char *file) {
    FILE *f = fopen(file, "r");
    int n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
    if (f) fclose(f);
    return n;
}

/* The marker plugin (its constructor appends a line to $GGMLC_TEST_MARKER) under names that
 * follow the plugin naming rule or not: only mark.so is opened, and only once. */
static void load_all_opens_each_plugin_once(void) {
    char cfg[PATH_MAX], dir[PATH_MAX], marker[PATH_MAX], lib[PATH_MAX], cmd[2 * PATH_MAX + 64], copy[PATH_MAX + 32];
    write_good_config(in_root(cfg, "once/ggmlc.ini"), "");
    in_root(dir, "once/plugins");
    mkdir(dir, 0755);
    setenv("GGMLC_TEST_MARKER", in_root(marker, "once/opened.txt"), 1);
    static const char *const names[] = {"mark.so", "libmark.so.1", ".hidden.so", "two.parts.so", "sp ace.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(copy, sizeof copy, "%s/%s", dir, names[i]);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", plugin(lib, "marker"), copy);
        CHECK(system(cmd) == 0, "%s", cmd);
    }
    snprintf(copy, sizeof copy, "%s/same.so", dir); /* after mark.so in name order */
    CHECK(symlink("mark.so", copy) == 0, "symlink: %s", strerror(errno));
    ggml_backend_load_all_from_path(dir);
    CHECK(ggml_backend_reg_by_name("mark") != NULL, "mark.so is loaded");
    CHECK(ggml_backend_reg_by_name("same") == NULL, "same.so, a link to mark.so, is not loaded again");
    CHECK(count_lines(marker) == 1, "the dynamic linker opened plugin files %d times, not once", count_lines(marker));
}

#define N_THREADS 8
static pthread_barrier_t start_line;
static size_t seen_devices[N_THREADS];

static void *count_devices(void *arg) {
    pthread_barrier_wait(&start_line);
    seen_devices[(size_t)arg] = ggml_backend_dev_count();
    return NULL;
}

static void concurrent_first_use(void) {
    char cfg[PATH_MAX], bad[PATH_MAX], extra[PATH_MAX + 64];
    snprintf(extra, sizeof extra, "[backend.broken]\nlibrary = %s\n", plugin(bad, "abiminor"));
    write_good_config(in_root(cfg, "threads/ggmlc.ini"), extra);
    pthread_t threads[N_THREADS];
    pthread_barrier_init(&start_line, NULL, N_THREADS);
    for (size_t i = 0; i < N_THREADS; i++) pthread_create(&threads[i], NULL, count_devices, (void *)i);
    for (size_t i = 0; i < N_THREADS; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start_line);
    for (size_t i = 0; i < N_THREADS; i++) CHECK(seen_devices[i] == 2, "thread %zu saw %zu devices", i, seen_devices[i]);
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "abiminor", NULL) == 0, "backend broken is not in backends = and never opened");
    CHECK(ggmlc_backend_count() == 3, "loaded once: %zu backends listed", ggmlc_backend_count());
}

static void shutdown_and_reload(void) {
    char cfg1[PATH_MAX], cfg2[PATH_MAX];
    write_good_config(in_root(cfg1, "reload/one.ini"), "");
    CHECK(strcmp(first_device(), "A0") == 0, "first config");
    ggmlc_shutdown();
    write_two_backends(in_root(cfg2, "reload/two.ini"));
    setenv("GGMLC_BACKENDS", "beta", 1);
    CHECK(strcmp(first_device(), "B0") == 0 && ggml_backend_reg_by_name("cpu") == NULL, "the second config after shutdown");
    ggmlc_shutdown();
    ggmlc_shutdown(); /* idempotent */
}

static void debug_trace(void) {
    char cfg[PATH_MAX], good[PATH_MAX];
    write_good_config(in_root(cfg, "debug/ggmlc.ini"), "");
    setenv("GGMLC_DEBUG", "sched,loader", 1);
    ggmlc_init();
    CHECK(count_log(GGML_LOG_LEVEL_DEBUG, "GGMLC_CONFIG=", cfg, NULL) == 1, "the config file tried");
    CHECK(count_log(GGML_LOG_LEVEL_DEBUG, "backends.d", "not found", NULL) == 1, "the drop-in folder tried");
    CHECK(count_log(GGML_LOG_LEVEL_DEBUG, "trying plugin", plugin(good, "good"), NULL) == 2, "each plugin path tried");
}

/* Transfers through a backend buffer, the async fallbacks, plans and events. */
static void backend_objects(void) {
    char cfg[PATH_MAX];
    write_good_config(in_root(cfg, "objects/ggmlc.ini"), "");
    ggml_backend_t backend = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    CHECK(backend && strcmp(ggml_backend_name(backend), "A0") == 0, "the first CPU-type device is A0");
    if (!backend) return;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 37), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 37);
    struct ggml_tensor *sum = binary_node(ctx, GGML_OP_ADD, a, b);
    ggml_backend_buffer_t buf = ggml_backend_alloc_buffer(backend, 3 * 256);
    const size_t align = ggml_backend_get_alignment(backend);
    CHECK(buf && ggml_backend_buffer_is_host(buf) && align >= 1, "a host buffer");
    if (!buf) return;
    char *base = ggml_backend_buffer_get_base(buf);
    CHECK(ggml_backend_tensor_alloc(buf, a, base) == GGML_STATUS_SUCCESS &&
              ggml_backend_tensor_alloc(buf, b, base + 256) == GGML_STATUS_SUCCESS &&
              ggml_backend_tensor_alloc(buf, sum, base + 512) == GGML_STATUS_SUCCESS,
          "tensors placed");
    float va[37], vb[37], out[37];
    for (int i = 0; i < 37; i++) {
        va[i] = (float)(i * i) - 500.0f;
        vb[i] = 1e6f / (i + 1);
    }
    ggml_backend_tensor_set_async(backend, a, va, 0, sizeof va);
    ggml_backend_tensor_set_async(backend, b, vb, 0, sizeof vb);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(backend));
    ggml_backend_event_record(ev, backend);
    ggml_backend_event_wait(backend, ev);
    ggml_backend_event_synchronize(ev);
    ggml_backend_event_free(ev);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, sum);
    ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(backend, g);
    CHECK(ggml_backend_graph_plan_compute(backend, plan) == GGML_STATUS_SUCCESS, "plan compute");
    ggml_backend_graph_plan_free(backend, plan);
    ggml_backend_tensor_get_async(backend, sum, out, 0, sizeof out);
    ggml_backend_synchronize(backend);
    bool exact = true;
    for (int i = 0; i < 37; i++) exact = exact && out[i] == va[i] + vb[i];
    CHECK(exact, "a + b through the buffer");
    ggmlc_clear_error();
    ggml_backend_tensor_get_async(backend, sum, out, 8, sizeof out);
    CHECK(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "an out-of-range read is refused");
    ggml_free(ctx);
    ggml_backend_buffer_free(buf);
    ggml_backend_free(backend);
}

/* A registry made by the program itself (no plugin file). */
static const char *inproc_name(ggml_backend_dev_t dev) { return "INPROC0"; }
static enum ggml_backend_dev_type inproc_type(ggml_backend_dev_t dev) { return GGML_BACKEND_DEVICE_TYPE_ACCEL; }
static ggml_backend_buffer_type_t inproc_buft(ggml_backend_dev_t dev) { return ggml_backend_cpu_buffer_type(); }

static void register_in_process(void) {
    char cfg[PATH_MAX];
    write_good_config(in_root(cfg, "inproc/ggmlc.ini"), "");
    static const struct ggmlc_device_iface dev_iface = {
        .struct_size = sizeof(struct ggmlc_device_iface),
        .get_name = inproc_name,
        .get_type = inproc_type,
        .get_buffer_type = inproc_buft,
    };
    static const struct ggmlc_reg_iface reg_iface = {.struct_size = sizeof(struct ggmlc_reg_iface)};
    const size_t n_dev = ggml_backend_dev_count();
    ggml_backend_reg_t reg = ggmlc_reg_new("inproc", &reg_iface, NULL);
    ggml_backend_dev_t dev = ggmlc_device_new(reg, &dev_iface, NULL);
    ggml_backend_register(reg);
    ggml_backend_register(reg); /* twice: registered once */
    ggml_backend_device_register(dev);
    CHECK(ggml_backend_reg_by_name("INPROC") == reg && ggml_backend_dev_count() == n_dev + 1, "registered once");
    CHECK(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_ACCEL) == dev && ggml_backend_dev_get(n_dev) == dev,
          "its device comes last");
    const struct ggml_tensor add = {.op = GGML_OP_ADD};
    CHECK(!ggml_backend_dev_supports_op(dev, &add), "no op vtable, no ops");
    ggmlc_shutdown(); /* frees it */
}

/* Run ggmlc-info of this build with config; its output into out, its exit status returned. */
static int run_info(const char *config, const char *args, char *out, size_t size) {
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "GGMLC_CONFIG='%s' GGMLC_BACKENDS= '%s/tools/ggmlc-info' %s 2>&1", config, getenv("GGMLC_BUILDDIR"),
             args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    const size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    const int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void info_tool(void) {
    static char out[1 << 16];
    char cfg[PATH_MAX], bad[PATH_MAX], extra[PATH_MAX + 128];
    snprintf(extra, sizeof extra, "[backend.broken]\nlibrary = %s\n[backend.off]\nlibrary = x.so\nenabled = no\n",
             plugin(bad, "badmagic"));
    char good[PATH_MAX];
    write_file(in_root(cfg, "info/ggmlc.ini"),
               "[ggmlc]\nbackends = broken, cpu\n[backend.cpu]\nlibrary = %s\ndevice = C0\n%s", plugin(good, "good"), extra);
    int rc = run_info(cfg, "--ops", out, sizeof out);
    tap_ok(rc == 0 && strstr(out, cfg) && strstr(out, "FAILED") && strstr(out, "bad plugin magic") && strstr(out, "disabled") &&
               strstr(out, "test-only add-f32") && strstr(out, "1.0 MiB / 2.0 MiB"),
           "ggmlc-info lists files, backends with reasons, devices with caps (exit %d)", rc);
    tap_ok(strstr(out, "\n  ADD                         x\n") && strstr(out, "\n  MUL                         .\n"),
           "ggmlc-info --ops shows the op vtable");
    if (rc != 0) tap_diag("%s", out);
    write_file(cfg, "[backend.cpu]\nlibrary = %s\n", plugin(bad, "probefail"));
    rc = run_info(cfg, "", out, sizeof out);
    tap_ok(rc == 1 && strstr(out, "CPU backend"), "ggmlc-info exits 1 without the CPU backend (exit %d)", rc);
}

/* A library path longer than inih's line buffer still works. */
static void long_library_path(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    int n = snprintf(lib, sizeof lib, "%s", plugdir);
    for (int i = 0; i < 120; i++) n += snprintf(lib + n, sizeof lib - n, "/.");
    snprintf(lib + n, sizeof lib - n, "/good.so");
    write_file(in_root(cfg, "long/ggmlc.ini"), "; %0300d\n[backend.cpu]\nlibrary = %s   ; a comment\ndevice = C0\n", 0, lib);
    setenv("GGMLC_CONFIG", cfg, 1);
    struct ggmlc_backend_info info;
    if (find_info("cpu", &info)) {
        CHECK(info.loaded && info.path && strcmp(info.path, lib) == 0 && info.config_line == 3, "path %s line %d",
              info.path ? info.path : "(null)", info.config_line);
    }
    CHECK(ggml_backend_dev_by_name("C0") != NULL, "its device");
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "", NULL) == 0, "no error");
}

/* Reading a configuration is linear in its size: about 900 KB of sections and keys (30,000
 * backends, 20,000 options of one of them) take about 0.2 s of CPU time; the quadratic
 * reader, which scanned every earlier name for each new one, took 7 s (and over 40 s of
 * wall time on a busy machine).  CPU time, with a loose bound, because the machine may be busy. */
#define LARGE_SECTIONS 30000
#define LARGE_KEYS 20000
static void large_config_is_linear(void) {
    char cfg[PATH_MAX], good[PATH_MAX];
    FILE *f = fopen(in_root(cfg, "large.ini"), "w");
    if (!f) {
        CHECK(false, "cannot write %s", cfg);
        return;
    }
    fprintf(f, "[backend.cpu]\nlibrary = %s\ndevice = C0\n", plugin(good, "good"));
    for (int i = 0; i < LARGE_KEYS; i++) fprintf(f, "k%x=0\n", i);
    for (int i = 0; i < LARGE_SECTIONS; i++) fprintf(f, "[backend.%x]\nenabled=0\n", i);
    fclose(f);
    setenv("GGMLC_CONFIG", cfg, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    CHECK(ggmlc_init() == GGMLC_OK, "init: %s", ggmlc_last_error());
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    const double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("# a configuration of %d sections and %d keys read in %.3f s of CPU time\n", LARGE_SECTIONS, LARGE_KEYS, seconds);
    CHECK(seconds < 3.0, "reading took %.1f s of CPU time", seconds);
    CHECK(ggmlc_backend_count() == LARGE_SECTIONS + 1, "%zu backends listed", ggmlc_backend_count());
    CHECK(ggml_backend_dev_by_name("C0") != NULL, "the CPU section still applies");
}

/* ------------------------------------------------------------- driver */

static void run(const char *name, void (*scenario)(void)) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        unsetenv("GGMLC_BACKENDS");
        unsetenv("GGMLC_DEBUG");
        ggml_log_set(capture_log, NULL);
        scenario();
        if (check_failed)
            for (int i = 0; i < n_log; i++) printf("#   log[%d]: %s", log_lines[i].level, log_lines[i].text);
        ggmlc_shutdown(); /* unloads everything: leak checkers then see what was left behind */
        fflush(stdout);
        exit(check_failed ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) tap_diag("%s: killed by signal %d", name, WTERMSIG(status));
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", name);
}

static void remove_tree(const char *dir) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) tap_diag("could not remove %s", dir);
}

int main(void) {
    const char *build = getenv("GGMLC_BUILDDIR");
    if (!build) return tap_skip_all("GGMLC_BUILDDIR is not set (run through make check)");
    snprintf(plugdir, sizeof plugdir, "%s/tests/plugins/.libs", build);
    snprintf(root, sizeof root, "/tmp/ggmlc-test-loader-XXXXXX");
    if (!mkdtemp(root)) return tap_skip_all("cannot create a scratch folder");

    run("missing plugin file", broken_missing_file);
    run("not a shared object", broken_not_shared_object);
    run("missing entry symbol", broken_no_entry);
    run("wrong ABI major", broken_abi_major);
    run("newer ABI minor", broken_abi_minor);
    run("bad magic", broken_magic);
    run("probe returns 0", broken_probe);
    run("failing init is cleaned up", broken_init);
    run("an entry symbol smaller than a descriptor", broken_small_entry);
    run("an absolute entry symbol (SHN_ABS)", broken_abs_entry);
    run("a descriptor whose init points outside the plugin", broken_wild_init);
    run("bad ini syntax names the line", bad_ini_syntax);
    run("unknown key warning", unknown_key_warning);
    run("duplicate backend name", duplicate_backend);
    run("disabled backend is never opened", disabled_backend);
    run("enabled marker plugin is opened (control)", enabled_marker_control);
    run("relative library path", relative_library_path);
    run("library path longer than an inih line", long_library_path);
    run("a 1 MB configuration is read in linear time", large_config_is_linear);
    run("preference order from the config", config_order);
    run("GGMLC_BACKENDS changes the first backend", env_backends_override);
    run("GGMLC_BACKENDS leaves others out", env_backends_leaves_out);
    run("drop-in backends.d file", dropin_registers_backend);
    if (access(GGMLC_SYSCONFDIR "/ggmlc/ggmlc.ini", F_OK) == 0)
        tap_skip("an installed " GGMLC_SYSCONFDIR "/ggmlc/ggmlc.ini exists", "no configuration file at all");
    else
        run("no configuration file at all", no_config_file);
    run("GGMLC_CONFIG naming a missing file", config_env_missing_file);
    run("a failing CPU plugin is reported clearly", cpu_failure_is_clear);
    run("default per-node compute path and unsupported ops", compute_default_path);
    run("graph copy and backend comparison", compare_two_backends);
    run("ggml_backend_load and unload", load_by_program);
    run("ggml_backend_load_all_from_path", load_all_from_folder);
    run("load_all_from_path: the naming rule, each file opened once", load_all_opens_each_plugin_once);
    run("concurrent first use loads once", concurrent_first_use);
    run("shutdown and reload with another config", shutdown_and_reload);
    run("GGMLC_DEBUG=loader traces files and paths", debug_trace);
    run("buffers, async transfers, plans and events", backend_objects);
    run("a registry registered by the program", register_in_process);

    info_tool();

    remove_tree(root);
    return tap_done();
}
