/*
 * plugin-security.c - refuse plugin files that another user could have
 * replaced (see plugin-security.h).  The check walks the resolved path from
 * the file up to "/", the way OpenSSH checks its key files: whoever can
 * write to any of those folders can swap the file under us.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin-security.h"

static atomic_bool insecure_allowed;

void ggmlc_plugin_allow_insecure(bool allow) { atomic_store(&insecure_allowed, allow); }

#define ALLOW_HINT "set allow_insecure_plugins = true in [ggmlc] of the configuration to load it anyway"

/* Why st (of path, the plugin itself when is_file) is unsafe, or NULL. */
static const char *unsafe_because(const struct stat *st, bool is_file) {
    if (st->st_uid != 0 && st->st_uid != geteuid()) return "is owned by another user";
    if (is_file && !S_ISREG(st->st_mode)) return "is not a regular file";
    if (!(st->st_mode & (S_IWGRP | S_IWOTH))) return NULL;
    if (!is_file && (st->st_mode & S_ISVTX)) return NULL; /* sticky: others cannot replace our entries */
    return st->st_mode & S_IWOTH ? "is writable by all users" : "is writable by its group";
}

enum ggmlc_status ggmlc_plugin_check_secure(const char *path, char *reason, size_t size) {
    if (atomic_load(&insecure_allowed)) return GGMLC_OK;
    char *real = realpath(path, NULL);
    if (!real) {
        snprintf(reason, size, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? GGMLC_ERR_NOT_FOUND : GGMLC_ERR_PLUGIN;
    }
    enum ggmlc_status status = GGMLC_OK;
    for (bool is_file = true;; is_file = false) {
        struct stat st;
        const char *why = stat(real, &st) != 0 ? strerror(errno) : unsafe_because(&st, is_file);
        if (why) {
            snprintf(reason, size, "refusing to load plugin %s: %s%s %s (%s)", path, is_file ? "it" : "its folder ",
                     is_file ? "" : real, why, ALLOW_HINT);
            status = GGMLC_ERR_PLUGIN;
            break;
        }
        char *slash = strrchr(real, '/');
        if (!slash || slash == real) {
            if (slash && slash[1]) { /* one more: the root folder itself */
                slash[1] = '\0';
                continue;
            }
            break;
        }
        *slash = '\0';
    }
    free(real);
    return status;
}
