/*
 * plugin-loader.h - opening one plugin file, checking its ABI, and letting
 * it register its backend; unloading it again.
 */
#ifndef GGMLC_PLUGIN_LOADER_H
#define GGMLC_PLUGIN_LOADER_H

#include "backend-impl.h"

/* Load the plugin at path (absolute; never searched) and run probe() and
 * init(opts).  The file is opened only after ggmlc__secure_open accepted it,
 * and the dynamic linker loads that very file.  On success *reg_out is its
 * registry and *version its version string.  On failure returns the status
 * and writes one sentence naming the path and the cause into reason; nothing
 * is logged and nothing stays loaded.  *not_a_plugin (may be NULL) is set
 * when the file passed the security check but is no plugin: the dynamic
 * linker refused it or it exports no entry symbol. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__plugin_load(const char *path, const struct ggmlc_plugin_options *opts,
                                                 ggml_backend_reg_t *reg_out, const char **version, bool *not_a_plugin,
                                                 char *reason, size_t reason_size);

/* Free reg with its devices and buffer types; for a plugin's registry then call
 * its fini and close the library. */
GGMLC_HIDDEN void ggmlc__plugin_unload(ggml_backend_reg_t reg);

/* Called by ggmlc_reg_new: remembers registries created while a plugin's init
 * runs, so that those a failing (or sloppy) init leaves behind are freed. */
GGMLC_HIDDEN void ggmlc__plugin_note_new_reg(ggml_backend_reg_t reg);

/* Free a registry, its devices and their buffer types, calling each free hook (backend.c). */
GGMLC_HIDDEN void ggmlc__reg_free(ggml_backend_reg_t reg);

#endif /* GGMLC_PLUGIN_LOADER_H */
