/*
 * config-file.h - the ini configuration: which plugin files exist, in which
 * order they are preferred, and the options each one receives.
 *
 * Reading the configuration never fails as a whole: a broken line is
 * reported (file:line) and skipped, the rest still applies.
 */
#ifndef GGMLC_CONFIG_FILE_H
#define GGMLC_CONFIG_FILE_H

#include "ggml-impl.h"

/* Positions of names in an array its owner keeps, found through a
 * case-insensitive hash: a lookup costs O(1) on average, so reading a
 * configuration stays linear in its size (a scan per key would be quadratic). */
struct ggmlc_name_index {
    struct ggmlc_name_slot {
        size_t hash;
        size_t pos_plus1; /* 0: empty */
    } *slots;
    size_t cap, count;
};

/* One [backend.NAME] section. */
struct ggmlc_config_backend {
    char *name;
    char *library;      /* the value as written, NULL when the section has none */
    char *path;         /* library resolved to an absolute path, NULL without library */
    char *config_file;  /* the file that defined it */
    char *config_dir;   /* its folder (absolute) */
    int   config_line;  /* the line of its section header */
    int   library_line; /* the line of its library key (0: none) */
    bool  enabled;      /* enabled = true|false, true by default */
    bool  from_dropin;  /* defined in backends.d/ *.ini */
    bool  implicit;     /* not configured: the CPU added as the last resort */
    bool  listed;       /* the registry has an entry for it */
    size_t n_options, options_cap;
    char **keys;        /* the other keys of the section, passed to the plugin */
    char **values;
};

struct ggmlc_config {
    char  **files;          /* configuration files read, main file first */
    size_t  n_files;
    struct ggmlc_config_backend *backends; /* in order of definition */
    size_t  n_backends, backends_cap;
    struct ggmlc_name_index backend_index; /* backends by name */
    char  **order;          /* [ggmlc] backends (NULL when not given) */
    size_t  n_order;
    bool    has_order;
    char   *order_origin;   /* "file:line" of the backends key */
    bool    allow_insecure_plugins; /* [ggmlc] allow_insecure_plugins: load plugins others can modify */
};

/* Find and read the main configuration file and its drop-ins into cfg
 * (zeroed first).  Problems are logged; cfg->n_files == 0 means no file was read.
 * Each file is opened through ggmlc__secure_open: a file that another user could
 * have written (it, a folder above it or a link on its path) is not read at all.
 * An unsafe main file is refused with an error and the defaults apply (as with
 * no file); an unsafe drop-in is skipped with an error, the others still apply. */
GGMLC_HIDDEN void ggmlc__config_read(struct ggmlc_config *cfg);
/* Release everything cfg owns. */
GGMLC_HIDDEN void ggmlc__config_free(struct ggmlc_config *cfg);

/* The backend named name (case-insensitive), or NULL. */
GGMLC_HIDDEN struct ggmlc_config_backend *ggmlc__config_find(struct ggmlc_config *cfg, const char *name);
/* Add a backend that no file configures (the CPU as last resort): library in GGMLC_PLUGINDIR. */
GGMLC_HIDDEN struct ggmlc_config_backend *ggmlc__config_add_implicit(struct ggmlc_config *cfg, const char *name, const char *library);

/* The backends to load, best first, into *names (returns the count): the
 * override list (GGMLC_BACKENDS) when given, else [ggmlc] backends plus the
 * drop-in backends (ahead of a final cpu), else every section in file order;
 * "cpu" is appended as the last resort when absent.  Names appear once. */
GGMLC_HIDDEN size_t ggmlc__config_order(const struct ggmlc_config *cfg, const char *override, char ***names);

/* Room for n + 1 elements of size elem in the array that array_ptr points to
 * (a T **) of capacity *cap, doubled as needed, so that appending one element at
 * a time stays linear in total; false when out of memory (the array is kept). */
GGMLC_HIDDEN bool ggmlc__reserve_one(void *array_ptr, size_t *cap, size_t n, size_t elem);

/* Split a list like "vulkan, cpu" (commas and/or blanks) into *items; returns the count. */
GGMLC_HIDDEN size_t ggmlc__split_list(const char *text, char ***items);
GGMLC_HIDDEN void ggmlc__free_list(char **items, size_t n);

/* "loader" debug trace (GGMLC_DEBUG=loader). */
#define GGMLC_TRACE_LOADER(...)                                                                    \
    do {                                                                                           \
        if (ggmlc_debug_enabled("loader")) ggmlc__log_internal(GGML_LOG_LEVEL_DEBUG, "ggmlc loader: " __VA_ARGS__); \
    } while (0)

#endif /* GGMLC_CONFIG_FILE_H */
