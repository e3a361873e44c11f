/*
 * test-loader-security.c - the loader refuses plugins that other users could
 * modify (unless the configuration allows it), checking every folder and link
 * of the path as written (also while another user swaps a link, as root),
 * refuses configuration files others could modify, ignores the environment in
 * set-uid programs (simulated through fault-inject.h), and never looks for a
 * plugin in the current directory.
 *
 * Each scenario copies the good test plugin into a scratch folder with the
 * permissions under test, writes a configuration naming it, and loads it in
 * a fork()ed child (a fresh registry each time).
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault-inject.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "testutil.h"

static char root[256];            /* scratch folder of this run (mode 0755) */
static char good_plugin[PATH_MAX]; /* the built test plugin */
static char marker_plugin[PATH_MAX]; /* its build whose constructor appends to $GGMLC_TEST_MARKER */

static void quiet_log(enum ggml_log_level level, const char *text, void *user_data) {}

static bool copy_file(const char *from, const char *to, mode_t mode) {
    FILE *in = fopen(from, "rb");
    unlink(to);
    const int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = in && fd >= 0;
    char buf[65536];
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = write(fd, buf, n) == (ssize_t)n;
    if (in) fclose(in);
    if (fd >= 0) close(fd);
    return ok && chmod(to, mode) == 0; /* chmod, not the umask, decides the mode */
}

static void write_text(const char *path, const char *fmt, ...) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    va_list args;
    va_start(args, fmt);
    vfprintf(f, fmt, args);
    va_end(args);
    fclose(f);
}

/* A folder root/name of mode dir_mode holding the plugin as alpha.so of mode file_mode,
 * and root/name.ini naming it (with extra lines in [ggmlc]); returns the ini's path. */
static const char *setup(const char *name, mode_t dir_mode, mode_t file_mode, const char *extra) {
    static char ini[PATH_MAX];
    char dir[PATH_MAX], so[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0700);
    snprintf(so, sizeof so, "%s/alpha.so", dir);
    chmod(dir, 0700);
    if (!copy_file(good_plugin, so, file_mode)) printf("# cannot copy the plugin to %s\n", so);
    chmod(dir, dir_mode);
    snprintf(ini, sizeof ini, "%s/%s.ini", root, name);
    write_text(ini, "[ggmlc]\nbackends = alpha\n%s\n[backend.alpha]\nlibrary = %s\n", extra, so);
    return ini;
}

/* In a fork()ed child: load with the main configuration ini, logging to log. */
static void init_in_child(const char *ini, ggml_log_callback log) {
    ggml_log_set(log, NULL);
    setenv("GGMLC_CONFIG", ini, 1);
    unsetenv("GGMLC_BACKENDS");
    ggmlc_init();
}

/* Load the configuration ini in a child; the child exits 0 when alpha loaded, 1 when it was
 * refused with a reason containing every `expect` word, 2 otherwise. */
static int load_in_child(const char *ini, const char *expect1, const char *expect2) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        init_in_child(ini, quiet_log);
        struct ggmlc_backend_info info;
        for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) {
            if (strcmp(info.name, "alpha") != 0) continue;
            if (info.loaded) _exit(0);
            const bool why = info.reason && (!expect1 || strstr(info.reason, expect1)) && (!expect2 || strstr(info.reason, expect2));
            if (!why) printf("# reason: %s\n", info.reason ? info.reason : "(none)");
            fflush(stdout);
            _exit(why && info.status == GGMLC_ERR_PLUGIN ? 1 : 2);
        }
        _exit(2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

static void permissions(void) {
    tap_ok(load_in_child(setup("safe", 0755, 0755, ""), NULL, NULL) == 0, "a plugin only its owner can write loads");
    tap_ok(load_in_child(setup("group-file", 0755, 0775, ""), "it is writable by its group", "allow_insecure_plugins") == 1,
           "a group-writable plugin file is refused, with a reason naming the remedy");
    tap_ok(load_in_child(setup("other-file", 0755, 0757, ""), "writable by all users", NULL) == 1,
           "a world-writable plugin file is refused");
    tap_ok(load_in_child(setup("other-dir", 0777, 0755, ""), "its folder", "writable by all users") == 1,
           "a plugin in a world-writable folder is refused");
    tap_ok(load_in_child(setup("group-dir", 0775, 0755, ""), "its folder", "writable by its group") == 1,
           "a plugin in a group-writable folder is refused");
    tap_ok(load_in_child(setup("sticky-dir", 01777, 0755, ""), NULL, NULL) == 0,
           "a plugin of ours in a sticky world-writable folder (like /tmp) loads");
    tap_ok(load_in_child(setup("allowed", 0777, 0777, "allow_insecure_plugins = true"), NULL, NULL) == 0,
           "allow_insecure_plugins = true in [ggmlc] loads it anyway");
    tap_ok(load_in_child(setup("not-allowed", 0755, 0777, "allow_insecure_plugins = false"), "writable by all users", NULL) == 1,
           "allow_insecure_plugins = false keeps the check");

    /* a drop-in file may not switch the check off for the main file */
    const char *ini = setup("dropin", 0755, 0777, "");
    char dropin_dir[PATH_MAX], dropin[PATH_MAX + 16];
    snprintf(dropin_dir, sizeof dropin_dir, "%s/backends.d", root);
    mkdir(dropin_dir, 0755);
    snprintf(dropin, sizeof dropin, "%s/lax.ini", dropin_dir);
    write_text(dropin, "[ggmlc]\nallow_insecure_plugins = true\n");
    tap_ok(load_in_child(ini, "writable by all users", NULL) == 1, "allow_insecure_plugins in a drop-in file is ignored");
    unlink(dropin);
    rmdir(dropin_dir);

    char link[PATH_MAX + 16], target[PATH_MAX];
    snprintf(target, sizeof target, "%s/other-file/alpha.so", root);
    snprintf(link, sizeof link, "%s/safe/link.so", root);
    unlink(link);
    if (symlink(target, link) == 0) {
        char cfg[PATH_MAX];
        snprintf(cfg, sizeof cfg, "%s/link.ini", root);
        write_text(cfg, "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = %s\n", link);
        tap_ok(load_in_child(cfg, "writable by all users", NULL) == 1, "a safe link to a world-writable plugin is refused");
    } else {
        tap_skip("symlink failed", "a safe link to a world-writable plugin is refused");
    }
    if (geteuid() == 0) { /* root can give the file away to test the owner check */
        const char *owned = setup("other-owner", 0755, 0755, "");
        char so[PATH_MAX + 32];
        snprintf(so, sizeof so, "%s/other-owner/alpha.so", root);
        tap_ok(chown(so, 65534, 65534) == 0 && load_in_child(owned, "owned by another user", NULL) == 1,
               "a plugin owned by another user is refused");
    } else {
        tap_skip("needs root to chown", "a plugin owned by another user is refused");
    }
}

/* root/name.ini loading alpha from library (and beta from beta_library when not NULL), with
 * extra lines in [ggmlc]; returns the ini's path (a static buffer). */
static const char *write_ini(const char *name, const char *library, const char *beta_library, const char *extra) {
    static char ini[PATH_MAX];
    snprintf(ini, sizeof ini, "%s/%s.ini", root, name);
    write_text(ini, "[ggmlc]\nbackends = alpha, beta\n%s\n[backend.alpha]\nlibrary = %s\n%s%s\n", extra, library,
               beta_library ? "[backend.beta]\nlibrary = " : "", beta_library ? beta_library : "");
    return ini;
}

/* root/name, made with mode (chmod, not the umask); returns its path (a static buffer). */
static const char *make_dir(const char *name, mode_t mode) {
    static char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0700);
    chmod(dir, mode);
    return dir;
}

/* A link root/link_path -> target. */
static bool make_link(const char *target, const char *link_path) {
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/%s", root, link_path);
    unlink(link);
    if (symlink(target, link) == 0) return true;
    printf("# symlink %s: %s\n", link, strerror(errno));
    return false;
}

/* Every folder and link of the path as written is checked, not only the resolved path:
 * a link in a folder another user can write could point elsewhere a moment later. */
static void links_on_the_path(void) {
    char target[PATH_MAX], library[PATH_MAX];
    setup("target", 0755, 0755, "");
    snprintf(target, sizeof target, "%s/target/alpha.so", root);
    make_dir("ww-links", 0777);
    make_link(target, "ww-links/alpha.so");
    snprintf(library, sizeof library, "%s/ww-links/alpha.so", root);
    tap_ok(load_in_child(write_ini("ww-link", library, NULL, ""), "its folder", "writable by all users") == 1,
           "a link to a safe plugin, in a world-writable folder, is refused");
    snprintf(target, sizeof target, "%s/target", root);
    make_link(target, "ww-links/dir");
    snprintf(library, sizeof library, "%s/ww-links/dir/alpha.so", root);
    tap_ok(load_in_child(write_ini("ww-dir-link", library, NULL, ""), "its folder", "writable by all users") == 1,
           "a safe folder reached through a link in a world-writable folder is refused");
    make_dir("rel-links", 0755);
    make_link("../target/./alpha.so", "rel-links/alpha.so");
    snprintf(library, sizeof library, "%s/rel-links/alpha.so", root);
    tap_ok(load_in_child(write_ini("rel-link", library, NULL, ""), NULL, NULL) == 0,
           "a relative link (../target/./alpha.so) in a safe folder loads");
    make_dir("sticky-links", 01777);
    make_link("../target/alpha.so", "sticky-links/alpha.so");
    snprintf(library, sizeof library, "%s/sticky-links/alpha.so", root);
    tap_ok(load_in_child(write_ini("sticky-link", library, NULL, ""), NULL, NULL) == 0,
           "our own link in a sticky world-writable folder (like /tmp) loads");
    if (geteuid() != 0) {
        tap_skip("needs root to give a link to another user", "a link owned by another user is refused");
        return;
    }
    make_dir("their-link", 0755);
    make_link("../target/alpha.so", "their-link/alpha.so");
    snprintf(library, sizeof library, "%s/their-link/alpha.so", root);
    tap_ok(lchown(library, 65534, 65534) == 0 &&
               load_in_child(write_ini("their-link", library, NULL, ""), "the link", "owned by another user") == 1,
           "a link owned by another user is refused");
}

/* The race of a link swapped between the check and the load: a helper process under another
 * user (nobody) swaps a link in a folder it can write between a safe plugin and its own, while
 * this test loads through the link again and again.  Its plugin (the marker build, whose
 * constructor writes a file) must never be opened: the folder holding the link is checked. */
#define RACE_ROUNDS 3000
#define RACE_SECONDS 4.0
static void swap_forever(const char *link, const char *a, const char *b) {
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", link);
    for (unsigned i = 0;; i++) {
        unlink(tmp);
        if (symlink(i % 2 ? a : b, tmp) == 0) rename(tmp, link);
    }
}

/* Load ini RACE_ROUNDS times (or for RACE_SECONDS) in a child; the child's exit status is the
 * number of rounds in which alpha loaded, in percent. */
static int load_repeatedly(const char *ini) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid != 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ggml_log_set(quiet_log, NULL);
    setenv("GGMLC_CONFIG", ini, 1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rounds = 0, loaded = 0;
    for (double elapsed = 0; rounds < RACE_ROUNDS && elapsed < RACE_SECONDS; rounds++) {
        ggmlc_init();
        loaded += ggml_backend_reg_by_name("alpha") != NULL;
        ggmlc_shutdown();
        clock_gettime(CLOCK_MONOTONIC, &t);
        elapsed = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
    }
    printf("# %d rounds, alpha loaded in %d\n", rounds, loaded);
    fflush(stdout);
    _exit(100 * loaded / rounds);
}

static void link_swap_race(void) {
    const char *what = "a link another user swaps while plugins load never loads that user's plugin";
    if (geteuid() != 0) {
        tap_skip("needs root to run the link swapper as another user (nobody)", "%s", what);
        return;
    }
    char good[PATH_MAX], evil[PATH_MAX + 16], link[PATH_MAX], marker[PATH_MAX];
    setup("race-good", 0755, 0755, "");
    snprintf(good, sizeof good, "%s/race-good/alpha.so", root);
    snprintf(evil, sizeof evil, "%s/alpha.so", make_dir("race-evil", 0755));
    const bool ready = copy_file(marker_plugin, evil, 0755) && chown(evil, 65534, 65534) == 0 &&
                       chown(make_dir("race-evil", 0755), 65534, 65534) == 0;
    make_dir("race-links", 0777);
    snprintf(link, sizeof link, "%s/race-links/alpha.so", root);
    snprintf(marker, sizeof marker, "%s/race-marker.txt", root);
    unlink(marker);
    setenv("GGMLC_TEST_MARKER", marker, 1);
    const char *ini = write_ini("race", link, NULL, "");
    fflush(stdout);
    const pid_t swapper = ready ? fork() : -1;
    if (swapper == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
        swap_forever(link, good, evil);
    }
    if (swapper < 0) {
        tap_skip("cannot set up the swapper", "%s", what);
        return;
    }
    const int loaded_percent = load_repeatedly(ini);
    kill(swapper, SIGKILL);
    waitpid(swapper, NULL, 0);
    unsetenv("GGMLC_TEST_MARKER");
    tap_ok(loaded_percent == 0 && access(marker, F_OK) != 0, "%s (loaded in %d%% of the rounds; its plugin opened: %s)",
           what, loaded_percent, access(marker, F_OK) == 0 ? "yes" : "no");
}

/* ------------------------------------------------------ configuration files */

static bool saw_config_refusal;

static void note_config_refusal(enum ggml_log_level level, const char *text, void *user_data) {
    if (level == GGML_LOG_LEVEL_ERROR && strstr(text, "refusing to read configuration file") && strstr(text, "ignored"))
        saw_config_refusal = true;
}

enum { ALPHA_LOADED = 1, BETA_LOADED = 2, REFUSAL_LOGGED = 4 };

/* Load with the main configuration ini in a child; returns the ALPHA/BETA/REFUSAL bits, plus
 * 8 times the number of configuration files read (at most 3). */
static int config_outcome(const char *ini) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        init_in_child(ini, note_config_refusal);
        int bits = saw_config_refusal ? REFUSAL_LOGGED : 0;
        struct ggmlc_backend_info info;
        for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) {
            if (strcmp(info.name, "alpha") == 0 && info.loaded) bits |= ALPHA_LOADED;
            if (strcmp(info.name, "beta") == 0 && info.loaded) bits |= BETA_LOADED;
        }
        const size_t files = ggmlc_config_file_count();
        _exit(bits | 8 * (int)(files < 3 ? files : 3));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A main configuration that another user could have written is not read at all: its
 * allow_insecure_plugins = true must not open a world-writable plugin; the defaults apply. */
static void unsafe_main_config(void) {
    char library[PATH_MAX], ini[PATH_MAX + 32];
    setup("ww-plugin", 0755, 0757, "");
    snprintf(library, sizeof library, "%s/ww-plugin/alpha.so", root);
    const char *extra = "allow_insecure_plugins = true";
    static const struct {
        const char *dir;
        mode_t dir_mode, file_mode;
        const char *what;
    } cases[] = {
        {"cfg-safe", 0755, 0644, NULL},
        {"cfg-group", 0755, 0664, "a group-writable main configuration"},
        {"cfg-other", 0755, 0646, "a world-writable main configuration"},
        {"cfg-ww-dir", 0777, 0644, "a main configuration in a world-writable folder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *dir = make_dir(cases[i].dir, 0755);
        snprintf(ini, sizeof ini, "%s/ggmlc.ini", dir);
        write_text(ini, "[ggmlc]\nbackends = alpha\n%s\n[backend.alpha]\nlibrary = %s\n", extra, library);
        chmod(ini, cases[i].file_mode);
        chmod(dir, cases[i].dir_mode);
        const int got = config_outcome(ini);
        if (!cases[i].what)
            tap_ok(got == (ALPHA_LOADED | 8), "control: a safe main configuration is read and its override honoured (%d)", got);
        else
            tap_ok(got == REFUSAL_LOGGED, "%s is refused with an error; its override is not honoured (%d)", cases[i].what, got);
    }
    if (geteuid() != 0) {
        tap_skip("needs root to chown", "a main configuration owned by another user is refused");
        return;
    }
    const char *dir = make_dir("cfg-theirs", 0755);
    snprintf(ini, sizeof ini, "%s/ggmlc.ini", dir);
    write_text(ini, "[ggmlc]\nbackends = alpha\n%s\n[backend.alpha]\nlibrary = %s\n", extra, library);
    tap_ok(chown(ini, 65534, 65534) == 0 && config_outcome(ini) == REFUSAL_LOGGED,
           "a main configuration owned by another user is refused");
}

/* An unsafe drop-in is skipped with an error; the main file and the safe drop-ins apply. */
static void unsafe_dropins(void) {
    char library[PATH_MAX], ini[PATH_MAX + 32], dropin[PATH_MAX + 64];
    setup("drop-target", 0755, 0755, "");
    snprintf(library, sizeof library, "%s/drop-target/alpha.so", root);
    static const struct {
        const char *dir;
        mode_t folder_mode, file_mode;
        bool theirs;
        const char *what;
    } cases[] = {
        {"drop-safe", 0755, 0644, false, NULL},
        {"drop-group", 0755, 0664, false, "a group-writable drop-in"},
        {"drop-other", 0755, 0666, false, "a world-writable drop-in"},
        {"drop-ww-dir", 0777, 0644, false, "a drop-in in a world-writable backends.d"},
        {"drop-theirs", 0755, 0644, true, "a drop-in owned by another user"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].theirs && geteuid() != 0) {
            tap_skip("needs root to chown", "%s is ignored", cases[i].what);
            continue;
        }
        const char *dir = make_dir(cases[i].dir, 0755);
        snprintf(ini, sizeof ini, "%s/ggmlc.ini", dir);
        write_text(ini, "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = %s\n", library);
        snprintf(dropin, sizeof dropin, "%s/backends.d", dir);
        mkdir(dropin, 0755);
        chmod(dropin, cases[i].folder_mode);
        snprintf(dropin, sizeof dropin, "%s/backends.d/50-beta.ini", dir);
        write_text(dropin, "[backend.beta]\nlibrary = %s\n", library);
        chmod(dropin, cases[i].file_mode);
        if (cases[i].theirs && chown(dropin, 65534, 65534) != 0) printf("# chown: %s\n", strerror(errno));
        const int got = config_outcome(ini);
        if (!cases[i].what)
            tap_ok(got == (ALPHA_LOADED | BETA_LOADED | 16), "control: a safe drop-in is read (%d)", got);
        else
            tap_ok(got == (ALPHA_LOADED | REFUSAL_LOGGED | 8), "%s is ignored with an error, the main file applies (%d)",
                   cases[i].what, got);
    }
}

/* GGMLC_CONFIG and GGMLC_BACKENDS are read with secure_getenv: a set-uid program ignores them. */
static void setuid_ignores_environment(void) {
    const char *ini = setup("env", 0755, 0755, "");
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        ggml_log_set(quiet_log, NULL);
        setenv("GGMLC_CONFIG", ini, 1);
        setenv("GGMLC_BACKENDS", "alpha", 1);
        ggmlc_fault_simulate_secure_mode(true);
        ggmlc_init();
        bool alpha_seen = false;
        struct ggmlc_backend_info info;
        for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) alpha_seen = alpha_seen || strcmp(info.name, "alpha") == 0;
        ggmlc_shutdown();
        ggmlc_fault_simulate_secure_mode(false); /* control: the same process without it reads them */
        ggmlc_init();
        bool alpha_now = false;
        for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) alpha_now = alpha_now || (strcmp(info.name, "alpha") == 0 && info.loaded);
        _exit(!alpha_seen && alpha_now ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "in (simulated) set-uid mode GGMLC_CONFIG and GGMLC_BACKENDS are ignored; read again without it");
}

/* A bare library name is looked up in the plugin folder, a relative path in the configuration's
 * folder: a plugin in the current directory is never loaded. */
static void no_current_directory(void) {
    char cwd_dir[PATH_MAX], so[PATH_MAX + 16], cfg_dir[PATH_MAX], ini[PATH_MAX + 16];
    snprintf(cwd_dir, sizeof cwd_dir, "%s/cwd", root);
    mkdir(cwd_dir, 0755);
    snprintf(so, sizeof so, "%s/alpha.so", cwd_dir);
    copy_file(good_plugin, so, 0755);
    snprintf(cfg_dir, sizeof cfg_dir, "%s/etc", root);
    mkdir(cfg_dir, 0755);
    char here[PATH_MAX];
    if (!getcwd(here, sizeof here) || chdir(cwd_dir) != 0) {
        tap_skip("cannot chdir", "no plugin is loaded from the current directory");
        return;
    }
    snprintf(ini, sizeof ini, "%s/bare.ini", cfg_dir);
    write_text(ini, "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = alpha.so\n");
    const int bare = load_in_child(ini, NULL, NULL);
    snprintf(ini, sizeof ini, "%s/relative.ini", cfg_dir);
    write_text(ini, "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = ./alpha.so\n");
    const int relative = load_in_child(ini, NULL, NULL);
    tap_ok(bare != 0, "library = alpha.so (a bare name) is not taken from the current directory");
    tap_ok(relative != 0, "library = ./alpha.so is relative to the configuration's folder, not the current directory");
    snprintf(so, sizeof so, "%s/alpha.so", cfg_dir); /* control: the same relative name beside the configuration loads */
    copy_file(good_plugin, so, 0755);
    write_text(ini, "[ggmlc]\nbackends = alpha\n[backend.alpha]\nlibrary = ./alpha.so\n");
    tap_ok(load_in_child(ini, NULL, NULL) == 0, "control: ./alpha.so beside the configuration loads");
    if (chdir(here) != 0) printf("# cannot return to %s\n", here);
}

/* A configuration that is a device or a FIFO is refused at once, not read forever or waited on. */
static void special_config_files(void) {
    char fifo[PATH_MAX];
    snprintf(fifo, sizeof fifo, "%s/config.fifo", root);
    const char *const files[] = {"/dev/zero", fifo};
    if (mkfifo(fifo, 0600) != 0) printf("# mkfifo: %s\n", strerror(errno));
    for (int i = 0; i < 2; i++) {
        fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            ggml_log_set(quiet_log, NULL);
            alarm(10); /* a hang fails the check instead of the whole test */
            setenv("GGMLC_CONFIG", files[i], 1);
            ggmlc_init();
            _exit(ggmlc_config_file_count() == 0 ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "GGMLC_CONFIG=%s (not a regular file) is refused at once",
               i == 0 ? files[i] : "a FIFO");
    }
    unlink(fifo);
}

int main(void) {
    const char *build = getenv("GGMLC_BUILDDIR");
    if (!build) return tap_skip_all("GGMLC_BUILDDIR is not set (run through make check)");
    snprintf(good_plugin, sizeof good_plugin, "%s/tests/plugins/.libs/good.so", build);
    snprintf(marker_plugin, sizeof marker_plugin, "%s/tests/plugins/.libs/marker.so", build);
    if (access(good_plugin, R_OK) != 0) return tap_skip_all("the test plugin good.so is not built");
    snprintf(root, sizeof root, "/tmp/ggmlc-secure-XXXXXX");
    if (!mkdtemp(root) || chmod(root, 0755) != 0) return tap_skip_all("cannot make a scratch folder");
    umask(022); /* the files written here are safe unless a test makes them otherwise */
    permissions();
    links_on_the_path();
    link_swap_race();
    unsafe_main_config();
    unsafe_dropins();
    setuid_ignores_environment();
    no_current_directory();
    special_config_files();
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) printf("# could not remove %s\n", root);
    return tap_done();
}
