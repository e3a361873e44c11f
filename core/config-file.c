/*
 * config-file.c - finding and reading the ini configuration (parsed by inih).
 *
 * inih reports keys, not where they are, so the files are fed to it through
 * a reader of our own that counts lines and notices section headers: that
 * is how every message names its file and line, and how a second
 * [backend.X] section is told apart from the continuation of the first.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config-file.h"
#include "plugin-security.h"

/* ------------------------------------------------------------- helpers */


static char *join_path(const char *dir, const char *name) {
    const size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *dir_of(const char *path) {
    char *dir = strdup(path);
    if (!dir) return NULL;
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else strcpy(dir, ".");
    return dir;
}

static bool file_exists(const char *path) {
    const bool ok = access(path, R_OK) == 0;
    const int saved_errno = errno; /* for the caller's message; tracing may change it */
    GGMLC_TRACE_LOADER("config file %s: %s\n", path, ok ? "found" : "not found");
    errno = saved_errno;
    return ok;
}

/* ---------------------------------------------- the case-insensitive index */

typedef const char *(*name_at_fn)(const void *owner, size_t pos);

static size_t hash_name(const char *s) {
    size_t h = 1469598103934665603u; /* FNV-1a over the lower-cased bytes */
    for (; *s; s++) h = (h ^ (unsigned char)tolower((unsigned char)*s)) * 1099511628211u;
    return h;
}

/* The position of name in the owner's array, or SIZE_MAX. */
static size_t index_find(const struct ggmlc_name_index *ix, const char *name, name_at_fn at, const void *owner) {
    if (!ix->cap) return SIZE_MAX;
    const size_t h = hash_name(name);
    for (size_t i = h & (ix->cap - 1); ix->slots[i].pos_plus1; i = (i + 1) & (ix->cap - 1)) {
        const size_t pos = ix->slots[i].pos_plus1 - 1;
        if (ix->slots[i].hash == h && strcasecmp(at(owner, pos), name) == 0) return pos;
    }
    return SIZE_MAX;
}

static void index_put(struct ggmlc_name_index *ix, size_t h, size_t pos_plus1) {
    size_t i = h & (ix->cap - 1);
    while (ix->slots[i].pos_plus1) i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = (struct ggmlc_name_slot){h, pos_plus1};
    ix->count++;
}

/* Remember that name is at pos (the caller checked it is not there yet); false when out of memory. */
static bool index_add(struct ggmlc_name_index *ix, const char *name, size_t pos) {
    if (2 * (ix->count + 1) > ix->cap) { /* at most half full: short probes */
        const size_t cap = ix->cap ? 2 * ix->cap : 16;
        struct ggmlc_name_index grown = {calloc(cap, sizeof *grown.slots), cap, 0};
        if (!grown.slots) return false;
        for (size_t i = 0; i < ix->cap; i++)
            if (ix->slots[i].pos_plus1) index_put(&grown, ix->slots[i].hash, ix->slots[i].pos_plus1);
        free(ix->slots);
        *ix = grown;
    }
    index_put(ix, hash_name(name), pos + 1);
    return true;
}

static void index_free(struct ggmlc_name_index *ix) {
    free(ix->slots);
    memset(ix, 0, sizeof *ix);
}

bool ggmlc__reserve_one(void *array_ptr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return true;
    const size_t new_cap = *cap ? 2 * *cap : 8;
    void *array;
    memcpy(&array, array_ptr, sizeof array);
    void *grown = new_cap <= SIZE_MAX / elem ? realloc(array, new_cap * elem) : NULL;
    if (!grown) return false;
    memcpy(array_ptr, &grown, sizeof grown);
    *cap = new_cap;
    return true;
}

static const char *backend_name_at(const void *cfg, size_t pos) {
    return ((const struct ggmlc_config *)cfg)->backends[pos].name;
}
static const char *option_key_at(const void *backend, size_t pos) {
    return ((const struct ggmlc_config_backend *)backend)->keys[pos];
}
static const char *list_item_at(const void *items, size_t pos) { return ((char *const *)items)[pos]; }

size_t ggmlc__split_list(const char *text, char ***items) {
    *items = NULL;
    size_t n = 0, cap = 0;
    for (const char *p = text; p && *p;) {
        p += strspn(p, ", \t");
        const size_t len = strcspn(p, ", \t");
        if (len == 0) break;
        if (!ggmlc__reserve_one(items, &cap, n, sizeof **items)) break;
        if (!((*items)[n] = strndup(p, len))) break;
        n++;
        p += len;
    }
    return n;
}

void ggmlc__free_list(char **items, size_t n) {
    for (size_t i = 0; i < n; i++) free(items[i]);
    free(items);
}

/* Resolve a library value: a bare file name lives in the plugin folder, a
 * relative path is relative to the config file's folder, never to the cwd. */
static char *resolve_library(const char *library, const char *config_dir) {
    if (library[0] == '/') return strdup(library);
    if (!strchr(library, '/')) return join_path(GGMLC_PLUGINDIR, library);
    return join_path(config_dir, library);
}

/* ------------------------------------------------------ parsing state */

struct parse_state {
    struct ggmlc_config *cfg;
    FILE *file;
    const char *path;   /* absolute path of the file being read */
    char *dir;
    bool dropin;
    int line;           /* line last handed to inih */
    int section_seq;    /* incremented at every section header */
    int section_line;
    int seen_seq;       /* section_seq of the last key handled */
    struct ggmlc_config_backend *current; /* backend of the current section, NULL if ignored */
    struct ggmlc_name_index option_index; /* current's options by key */
    char *long_value;   /* value of a line too long for inih, see read_line */
};

/* Stands in for a value too long for inih's line buffer. */
#define LONG_VALUE_TOKEN "\x1f"

static bool is_section_header(const char *line) {
    line += strspn(line, " \t");
    return *line == '[';
}

static char *trim(char *s) {
    s += strspn(s, " \t");
    size_t n = strlen(s);
    while (n > 0 && strchr(" \t\r\n", s[n - 1])) s[--n] = '\0';
    return s;
}

/* inih reads lines into a fixed buffer (about 200 bytes), shorter than some
 * library paths.  A longer "key = value" line is handed to inih as
 * "key = <token>" and the value kept aside for handle_key; any other long
 * line is reported and dropped. */
static bool shorten_long_line(struct parse_state *st, char *full, char *str, int num) {
    char *comment = NULL;
    for (char *p = full; (p = strchr(p, ';')); p++) /* inih's rule: ';' after a blank starts a comment */
        if (p > full && (p[-1] == ' ' || p[-1] == '\t')) {
            comment = p;
            break;
        }
    if (comment) *comment = '\0';
    char *eq = strpbrk(full, "=:");
    if (!eq || is_section_header(full) || (size_t)(eq - full) + sizeof LONG_VALUE_TOKEN + 4 > (size_t)num) return false;
    *eq = '\0';
    free(st->long_value);
    st->long_value = strdup(trim(eq + 1));
    snprintf(str, num, "%s = " LONG_VALUE_TOKEN "\n", trim(full));
    return st->long_value != NULL;
}

static char *read_line(char *str, int num, void *stream) {
    struct parse_state *st = stream;
    char *full = NULL;
    size_t cap = 0;
    const ssize_t len = getline(&full, &cap, st->file);
    if (len < 0) {
        free(full);
        return NULL;
    }
    st->line++;
    const char first = full[strspn(full, " \t")];
    if (len <= num - 2) {
        memcpy(str, full, (size_t)len + 1);
    } else if (first == ';' || first == '#') {
        snprintf(str, num, ";\n"); /* a long comment */
    } else if (!shorten_long_line(st, full, str, num)) {
        ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: line too long (ignored)", st->path, st->line);
        snprintf(str, num, ";\n"); /* a comment: the line is dropped */
    }
    free(full);
    if (is_section_header(str)) {
        st->section_seq++;
        st->section_line = st->line;
    }
    return str;
}

static bool parse_bool(const char *v, bool *out) {
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return *out = true, true;
        if (strcasecmp(v, no[i]) == 0) return *out = false, true;
    }
    return false;
}

static struct ggmlc_config_backend *new_backend(struct ggmlc_config *cfg, const char *name) {
    if (!ggmlc__reserve_one(&cfg->backends, &cfg->backends_cap, cfg->n_backends, sizeof *cfg->backends)) return NULL;
    struct ggmlc_config_backend *b = &cfg->backends[cfg->n_backends];
    memset(b, 0, sizeof *b);
    /* a backend always has a name: ggmlc__config_find compares them */
    if (!(b->name = strdup(name)) || !index_add(&cfg->backend_index, name, cfg->n_backends)) {
        free(b->name);
        return NULL;
    }
    cfg->n_backends++;
    b->enabled = true;
    return b;
}

struct ggmlc_config_backend *ggmlc__config_find(struct ggmlc_config *cfg, const char *name) {
    const size_t pos = index_find(&cfg->backend_index, name, backend_name_at, cfg);
    return pos == SIZE_MAX ? NULL : &cfg->backends[pos];
}

struct ggmlc_config_backend *ggmlc__config_add_implicit(struct ggmlc_config *cfg, const char *name, const char *library) {
    struct ggmlc_config_backend *b = new_backend(cfg, name);
    if (!b) return NULL;
    b->library = strdup(library);
    b->path = resolve_library(library, GGMLC_PLUGINDIR);
    b->implicit = true;
    return b;
}

/* First key of a [backend.NAME] section instance: define the backend, unless
 * that name exists already (the first definition wins). */
static struct ggmlc_config_backend *open_backend_section(struct parse_state *st, const char *name) {
    if (!*name) {
        ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: section [backend.] needs a name (ignored)", st->path, st->section_line);
        return NULL;
    }
    struct ggmlc_config_backend *first = ggmlc__config_find(st->cfg, name);
    if (first) {
        ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: backend '%s' is defined twice: here and at %s:%d; the first definition is used",
                        st->path, st->section_line, name, first->config_file, first->config_line);
        return NULL;
    }
    struct ggmlc_config_backend *b = new_backend(st->cfg, name);
    if (!b) return NULL;
    index_free(&st->option_index); /* a backend's options all come from its one section */
    b->config_file = strdup(st->path);
    b->config_dir = strdup(st->dir);
    b->config_line = st->section_line;
    b->from_dropin = st->dropin;
    return b;
}

static void set_option(struct parse_state *st, struct ggmlc_config_backend *b, const char *key, const char *value) {
    const size_t i = index_find(&st->option_index, key, option_key_at, b);
    if (i != SIZE_MAX) { /* a repeated key: the last value counts, as in most ini readers */
        char *copy = strdup(value);
        if (!copy) return; /* out of memory: the earlier value stays */
        free(b->values[i]);
        b->values[i] = copy;
        return;
    }
    size_t values_cap = b->options_cap;
    if (!ggmlc__reserve_one(&b->values, &values_cap, b->n_options, sizeof *b->values) ||
        !ggmlc__reserve_one(&b->keys, &b->options_cap, b->n_options, sizeof *b->keys))
        return; /* the arrays grow together: the smaller capacity is the one kept */
    char *key_copy = strdup(key), *value_copy = strdup(value);
    if (!key_copy || !value_copy || !index_add(&st->option_index, key, b->n_options)) {
        free(key_copy); /* out of memory: the option is dropped, never half there */
        free(value_copy);
        return;
    }
    b->keys[b->n_options] = key_copy;
    b->values[b->n_options] = value_copy;
    b->n_options++;
}

static void handle_backend_key(struct parse_state *st, struct ggmlc_config_backend *b, const char *key, const char *value) {
    if (strcasecmp(key, "library") == 0) {
        if (!*value) {
            ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: empty library for backend '%s'", st->path, st->line, b->name);
            return;
        }
        free(b->library);
        free(b->path);
        b->library = strdup(value);
        b->path = resolve_library(value, st->dir);
        b->library_line = st->line;
    } else if (strcasecmp(key, "enabled") == 0) {
        if (!parse_bool(value, &b->enabled))
            ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: enabled = '%s' is not true or false (ignored)", st->path, st->line, value);
    } else {
        set_option(st, b, key, value);
    }
}

static void handle_ggmlc_key(struct parse_state *st, const char *key, const char *value) {
    struct ggmlc_config *cfg = st->cfg;
    if (strcasecmp(key, "allow_insecure_plugins") == 0) {
        if (st->dropin) /* a drop-in must not lower the main file's guard */
            ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: allow_insecure_plugins is only honoured in the main file", st->path, st->line);
        else if (!parse_bool(value, &cfg->allow_insecure_plugins))
            ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: allow_insecure_plugins = '%s' is not true or false (ignored)", st->path,
                            st->line, value);
        return;
    }
    if (strcasecmp(key, "backends") != 0) {
        GGMLC_LOG_WARN("ggmlc: %s:%d: unknown key '%s' in [ggmlc] (ignored)\n", st->path, st->line, key);
        return;
    }
    ggmlc__free_list(cfg->order, cfg->n_order);
    cfg->n_order = ggmlc__split_list(value, &cfg->order);
    cfg->has_order = true;
    free(cfg->order_origin);
    const size_t n = strlen(st->path) + 16;
    if ((cfg->order_origin = malloc(n))) snprintf(cfg->order_origin, n, "%s:%d", st->path, st->line);
}

static int handle_key(void *user, const char *section, const char *key, const char *value) {
    struct parse_state *st = user;
    if (st->long_value && strcmp(value, LONG_VALUE_TOKEN) == 0) value = st->long_value;
    const bool new_section = st->seen_seq != st->section_seq;
    st->seen_seq = st->section_seq;
    if (strcasecmp(section, "ggmlc") == 0) {
        handle_ggmlc_key(st, key, value);
    } else if (strncasecmp(section, "backend.", 8) == 0) {
        if (new_section) st->current = open_backend_section(st, section + 8);
        if (st->current) handle_backend_key(st, st->current, key, value);
    } else if (new_section) {
        GGMLC_LOG_WARN("ggmlc: %s:%d: unknown section [%s] (ignored)\n", st->path, st->section_line, section);
    }
    return 1; /* our own problems are reported above; inih's return value then means syntax */
}

/* ------------------------------------------------------------- reading */

/* Largest configuration file read: an ini file is a few lines. */
#define MAX_CONFIG_BYTES (1 << 20)

/* path made absolute (against the current directory, links kept as they are:
 * ggmlc__secure_open checks each of them); NULL when out of memory or without a cwd. */
static char *absolute_path(const char *path) {
    if (path[0] == '/') return strdup(path);
    char cwd[PATH_MAX];
    return getcwd(cwd, sizeof cwd) ? join_path(cwd, path) : NULL;
}

/* Open a configuration file through the security check: a regular file of sane size
 * that no other user can have written.  NULL after reporting why (the file is ignored). */
static FILE *open_config(const char *path, bool dropin, char **real) {
    char reason[PATH_MAX + 256];
    struct ggmlc_secure_file file = {.fd = -1};
    char *abs = absolute_path(path);
    enum ggmlc_status status =
        abs ? ggmlc__secure_open(abs, GGMLC_SECURE_CONFIG, &file, reason, sizeof reason) : GGMLC_ERR_IO;
    if (!abs) snprintf(reason, sizeof reason, "%s: %s", path, strerror(errno));
    free(abs);
    struct stat st = {0};
    const bool stat_failed = status == GGMLC_OK && fstat(file.fd, &st) != 0;
    if (status == GGMLC_OK && (stat_failed || st.st_size > MAX_CONFIG_BYTES)) {
        snprintf(reason, sizeof reason, "%s: %s", path, stat_failed ? strerror(errno) : "larger than 1 MiB");
        status = GGMLC_ERR_IO;
    }
    FILE *f = status == GGMLC_OK ? fdopen(file.fd, "r") : NULL;
    *real = f ? strdup(file.real) : NULL;
    if (f && *real) return f;
    if (f) fclose(f);
    else if (file.fd >= 0) close(file.fd);
    if (status == GGMLC_OK) snprintf(reason, sizeof reason, "%s: out of memory", path), status = GGMLC_ERR_NOMEM;
    if (status == GGMLC_ERR_CONFIG) /* unsafe: say what happens instead */
        ggmlc_set_error(status, "%s; %s", reason,
                        dropin ? "this drop-in file is ignored"
                               : "the file is ignored and the defaults apply (the CPU plugin)");
    else
        ggmlc_set_error(status, "cannot read configuration file %s", reason);
    return NULL;
}

static void read_file(struct ggmlc_config *cfg, const char *path, bool dropin) {
    char *abs = NULL;
    FILE *f = open_config(path, dropin, &abs);
    if (!f) return;
    GGMLC_TRACE_LOADER("reading %s\n", abs);
    char **grown = realloc(cfg->files, (cfg->n_files + 1) * sizeof *grown);
    if (!grown) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory while reading", abs);
        fclose(f);
        free(abs);
        return;
    }
    cfg->files = grown;
    cfg->files[cfg->n_files++] = abs;

    struct parse_state st = {.cfg = cfg, .file = f, .path = abs, .dir = dir_of(abs), .dropin = dropin};
    const int rc = st.dir ? ini_parse_stream(read_line, &st, handle_key, &st) : -2;
    if (rc > 0) ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: syntax error (the line is ignored)", abs, rc);
    else if (rc == -2) ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory while reading", abs);
    index_free(&st.option_index);
    free(st.dir);
    free(st.long_value);
    fclose(f);
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_ini_name(const char *name) {
    const size_t n = strlen(name);
    return n > 4 && name[0] != '.' && strcmp(name + n - 4, ".ini") == 0;
}

/* backends.d/ *.ini beside the main file, in name order. */
static void read_dropins(struct ggmlc_config *cfg, const char *main_file) {
    char *dir = dir_of(main_file);
    char *dropin_dir = dir ? join_path(dir, "backends.d") : NULL;
    free(dir);
    DIR *d = dropin_dir ? opendir(dropin_dir) : NULL;
    GGMLC_TRACE_LOADER("drop-in folder %s: %s\n", dropin_dir ? dropin_dir : "?", d ? "found" : "not found");
    if (!d) {
        free(dropin_dir);
        return;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_ini_name(e->d_name)) continue;
        char **grown = realloc(names, (n + 1) * sizeof *grown);
        if (!grown) break;
        names = grown;
        if ((names[n] = strdup(e->d_name))) n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        char *path = join_path(dropin_dir, names[i]);
        if (path) read_file(cfg, path, true);
        free(path);
    }
    ggmlc__free_list(names, n);
    free(dropin_dir);
}

/* A copy of path; out of memory is reported, since a configuration that exists but is
 * silently skipped would load other backends than the user chose. */
static char *dup_or_report(const char *path) {
    char *copy = strdup(path);
    if (!copy) ggmlc_set_error(GGMLC_ERR_NOMEM, "out of memory while opening configuration file %s", path);
    return copy;
}

/* The main file per the search order, or NULL when none exists (or cannot be named). */
static char *find_main_file(void) {
    const char *env = ggmlc_getenv("GGMLC_CONFIG");
    if (env && *env) {
        GGMLC_TRACE_LOADER("GGMLC_CONFIG=%s\n", env);
        if (file_exists(env)) return dup_or_report(env);
        ggmlc_set_error(GGMLC_ERR_IO, "GGMLC_CONFIG names %s, which cannot be read: %s", env, strerror(errno));
        return NULL;
    }
    char *user = NULL;
    const char *xdg = ggmlc_getenv("XDG_CONFIG_HOME"), *home = ggmlc_getenv("HOME");
    if (xdg && xdg[0] == '/') user = join_path(xdg, "ggmlc/ggmlc.ini");
    else if (home && home[0] == '/') user = join_path(home, ".config/ggmlc/ggmlc.ini");
    if ((xdg && xdg[0] == '/') || (home && home[0] == '/')) {
        if (!user) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "out of memory while looking for the user's configuration file");
            return NULL;
        }
        if (file_exists(user)) return user;
    }
    free(user);
    const char *system = GGMLC_SYSCONFDIR "/ggmlc/ggmlc.ini";
    return file_exists(system) ? dup_or_report(system) : NULL;
}

void ggmlc__config_read(struct ggmlc_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    char *main_file = find_main_file();
    if (!main_file) return;
    read_file(cfg, main_file, false);
    if (cfg->n_files) read_dropins(cfg, cfg->files[0]);
    free(main_file);
}

/* --------------------------------------------------- preference order */

/* A list of names, each at most once (case-insensitive), built in linear time. */
struct name_list {
    char **names;
    size_t n, cap;
    struct ggmlc_name_index index;
};

static void list_append(struct name_list *list, const char *name) {
    if (index_find(&list->index, name, list_item_at, list->names) != SIZE_MAX) return;
    if (!ggmlc__reserve_one(&list->names, &list->cap, list->n, sizeof *list->names)) return;
    char *copy = strdup(name);
    if (!copy || !index_add(&list->index, name, list->n)) {
        free(copy);
        return;
    }
    list->names[list->n++] = copy;
}

size_t ggmlc__config_order(const struct ggmlc_config *cfg, const char *override, char ***names) {
    struct name_list list = {0};
    if (override) {
        char **given;
        const size_t n_given = ggmlc__split_list(override, &given);
        for (size_t i = 0; i < n_given; i++) list_append(&list, given[i]);
        ggmlc__free_list(given, n_given);
    } else if (cfg->has_order) {
        /* the drop-in backends go ahead of a final cpu: hold that one back until they are in */
        const bool cpu_last = cfg->n_order > 0 && strcasecmp(cfg->order[cfg->n_order - 1], "cpu") == 0;
        for (size_t i = 0; i + cpu_last < cfg->n_order; i++) list_append(&list, cfg->order[i]);
        const bool cpu_listed = index_find(&list.index, "cpu", list_item_at, list.names) != SIZE_MAX;
        for (size_t i = 0; i < cfg->n_backends; i++) {
            const struct ggmlc_config_backend *b = &cfg->backends[i];
            const bool held_back_cpu = cpu_last && !cpu_listed && strcasecmp(b->name, "cpu") == 0;
            if (b->from_dropin && !held_back_cpu) list_append(&list, b->name);
        }
        if (cpu_last) list_append(&list, cfg->order[cfg->n_order - 1]);
    } else {
        for (size_t i = 0; i < cfg->n_backends; i++) list_append(&list, cfg->backends[i].name);
    }
    list_append(&list, "cpu"); /* the last resort, when absent */
    index_free(&list.index);
    *names = list.names;
    return list.n;
}

void ggmlc__config_free(struct ggmlc_config *cfg) {
    for (size_t i = 0; i < cfg->n_backends; i++) {
        struct ggmlc_config_backend *b = &cfg->backends[i];
        free(b->name);
        free(b->library);
        free(b->path);
        free(b->config_file);
        free(b->config_dir);
        ggmlc__free_list(b->keys, b->n_options);
        ggmlc__free_list(b->values, b->n_options);
    }
    free(cfg->backends);
    index_free(&cfg->backend_index);
    ggmlc__free_list(cfg->files, cfg->n_files);
    ggmlc__free_list(cfg->order, cfg->n_order);
    free(cfg->order_origin);
    memset(cfg, 0, sizeof *cfg);
}
