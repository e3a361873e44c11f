/*
 * test-loader-security.c - the loader refuses plugins that other users could
 * modify (unless the configuration allows it), ignores the environment in
 * set-uid programs (simulated through fault-inject.h), and never looks for a
 * plugin in the current directory.
 *
 * Each scenario copies the good test plugin into a scratch folder with the
 * permissions under test, writes a configuration naming it, and loads it in
 * a fork()ed child (a fresh registry each time).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault-inject.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "testutil.h"

static char root[256];            /* scratch folder of this run (mode 0755) */
static char good_plugin[PATH_MAX]; /* the built test plugin */

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

/* Load the configuration ini in a child; the child exits 0 when alpha loaded, 1 when it was
 * refused with a reason containing every `expect` word, 2 otherwise. */
static int load_in_child(const char *ini, const char *expect1, const char *expect2) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        ggml_log_set(quiet_log, NULL);
        setenv("GGMLC_CONFIG", ini, 1);
        unsetenv("GGMLC_BACKENDS");
        ggmlc_init();
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
    if (access(good_plugin, R_OK) != 0) return tap_skip_all("the test plugin good.so is not built");
    snprintf(root, sizeof root, "/tmp/ggmlc-secure-XXXXXX");
    if (!mkdtemp(root) || chmod(root, 0755) != 0) return tap_skip_all("cannot make a scratch folder");
    permissions();
    setuid_ignores_environment();
    no_current_directory();
    special_config_files();
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) printf("# could not remove %s\n", root);
    return tap_done();
}
