/*
 * plugin-security.h - opening a plugin or configuration file that no user
 * other than root and the program's own could have replaced: a shared
 * object runs with the program's rights, and a configuration chooses which
 * shared objects run, so neither they nor any folder or link on the way to
 * them may be changeable by another user.
 */
#ifndef GGMLC_PLUGIN_SECURITY_H
#define GGMLC_PLUGIN_SECURITY_H

#include <limits.h>

#include "ggml-impl.h"

/* What a file is opened as: the messages, the status and the remedy differ. */
enum ggmlc_secure_kind {
    GGMLC_SECURE_PLUGIN, /* GGMLC_ERR_PLUGIN; allow_insecure_plugins switches the checks off */
    GGMLC_SECURE_CONFIG, /* GGMLC_ERR_CONFIG; always checked */
};

/* A file opened by ggmlc__secure_open. */
struct ggmlc_secure_file {
    int fd;                  /* O_RDONLY | O_CLOEXEC, of the file that was checked */
    char real[PATH_MAX];     /* its path with every link resolved (messages, fallbacks) */
};

/* Open the regular file at path (absolute) for reading.  The path is walked
 * as given, one component at a time without following anything implicitly:
 * "/", every folder and every link on the way (the targets of links too)
 * must be owned by root or the effective user, and no folder may be
 * writable by group or others unless it is sticky (as /tmp); the file
 * itself must be a regular file owned by root or the effective user and
 * writable by nobody else.  The descriptor returned is of exactly the file
 * checked (opened with O_NOFOLLOW below checked folders and fstat'ed), so
 * nothing can be swapped between the check and its use.
 * GGMLC_OK with *out filled, or an error status with one sentence naming
 * path, the offending component and why in reason (GGMLC_ERR_NOT_FOUND when
 * something on the way does not exist).  For plugins the ownership and
 * permission checks are skipped while insecure plugins are allowed. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__secure_open(const char *path, enum ggmlc_secure_kind kind,
                                                 struct ggmlc_secure_file *out, char *reason, size_t size);

/* [ggmlc] allow_insecure_plugins = true: skip the plugin checks (set when the configuration is read). */
GGMLC_HIDDEN void ggmlc__plugin_allow_insecure(bool allow);

#endif /* GGMLC_PLUGIN_SECURITY_H */
