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
#include <unistd.h>

#include "ggml-backend.h"
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
               "[backend.alpha]\nlibrary = %s\ndevice = A0\n",
               library, plugin(good, "good"));
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
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "broken", NULL) == 1, "%d error lines name the backend",
          count_log(GGML_LOG_LEVEL_ERROR, "broken", NULL));
    CHECK(count_log(GGML_LOG_LEVEL_ERROR, "backend 'broken'", why, NULL) == 1, "the error line gives the reason");
    ggml_backend_reg_t alpha = ggml_backend_reg_by_name("ALPHA");
    CHECK(alpha != NULL && ggml_backend_reg_dev_count(alpha) == 1, "alpha is loaded");
    CHECK(ggml_backend_dev_count() >= 1 && strcmp(ggml_backend_dev_name(ggml_backend_dev_get(0)), "A0") == 0,
          "the first device is alpha's");
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
    char cfg[PATH_MAX], lib[PATH_MAX];
    config_with_broken(in_root(cfg, "noentry/ggmlc.ini"), plugin(lib, "noentry"));
    expect_broken(GGMLC_ERR_PLUGIN, lib, "no symbol ggmlc_plugin_entry_v1");
}

static void broken_abi_major(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    config_with_broken(in_root(cfg, "abimajor/ggmlc.ini"), plugin(lib, "abimajor"));
    expect_broken(GGMLC_ERR_ABI, lib, "major versions must match");
}

static void broken_abi_minor(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    config_with_broken(in_root(cfg, "abiminor/ggmlc.ini"), plugin(lib, "abiminor"));
    expect_broken(GGMLC_ERR_ABI, lib, "newer than this libggmlc");
}

static void broken_magic(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    config_with_broken(in_root(cfg, "badmagic/ggmlc.ini"), plugin(lib, "badmagic"));
    expect_broken(GGMLC_ERR_ABI, lib, "bad plugin magic 0xdeadbeef");
}

static void broken_probe(void) {
    char cfg[PATH_MAX], lib[PATH_MAX];
    config_with_broken(in_root(cfg, "probe/ggmlc.ini"), plugin(lib, "probefail"));
    expect_broken(GGMLC_ERR_UNSUPPORTED, lib, "cannot run on this machine");
}

/* init fails after registering a device: the loader frees what it left behind. */
static void broken_init(void) {
    char cfg[PATH_MAX], lib[PATH_MAX], marker[PATH_MAX], good[PATH_MAX];
    in_root(marker, "initfail/freed.txt");
    write_file(in_root(cfg, "initfail/ggmlc.ini"),
               "[ggmlc]\nbackends = broken, alpha\n[backend.broken]\nlibrary = %s\nmarker = %s\n"
               "[backend.alpha]\nlibrary = %s\ndevice = A0\n",
               plugin(lib, "initfail"), marker, plugin(good, "good"));
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

static void write_two_backends(const char *cfg) {
    char good[PATH_MAX];
    write_file(cfg,
               "[ggmlc]\nbackends = alpha, beta\n[backend.alpha]\nlibrary = %s\ndevice = A0\n"
               "[backend.beta]\nlibrary = %s\ndevice = B0\ntype = gpu\n",
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
        fflush(stdout);
        _exit(check_failed ? 1 : 0);
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
    run("bad ini syntax names the line", bad_ini_syntax);
    run("unknown key warning", unknown_key_warning);
    run("duplicate backend name", duplicate_backend);
    run("disabled backend is never opened", disabled_backend);
    run("enabled marker plugin is opened (control)", enabled_marker_control);
    run("relative library path", relative_library_path);
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

    remove_tree(root);
    return tap_done();
}
