/*
 * plugin-security.h - whether a plugin file may be loaded: a shared object
 * runs with the program's rights, so neither it nor a folder above it may
 * be changeable by a user other than root and the program's own.
 */
#ifndef GGMLC_PLUGIN_SECURITY_H
#define GGMLC_PLUGIN_SECURITY_H

#include "ggml-impl.h"

/* GGMLC_OK when path (after resolving links) and each folder above it are
 * owned by root or the effective user and not writable by group or others
 * (a folder with the sticky bit, such as /tmp, may be); otherwise
 * GGMLC_ERR_PLUGIN with the offending file and why in reason.  Always
 * GGMLC_OK while insecure plugins are allowed. */
GGMLC_HIDDEN enum ggmlc_status ggmlc_plugin_check_secure(const char *path, char *reason, size_t size);
/* [ggmlc] allow_insecure_plugins = true: skip the check (set when the configuration is read). */
GGMLC_HIDDEN void ggmlc_plugin_allow_insecure(bool allow);

#endif /* GGMLC_PLUGIN_SECURITY_H */
