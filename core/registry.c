/*
 * registry.c - the one global registry: the configuration that was read,
 * every configured backend (loaded or why not), and the loaded registries
 * in preference order.
 *
 * A recursive mutex guards it (made once by pthread_once): a plugin's init
 * may call the public enumeration functions, which then see the registry
 * as loaded so far instead of deadlocking or loading it again.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>

#include "config-file.h"
#include "plugin-loader.h"
#include "plugin-security.h"

/* One configured (or explicitly loaded) backend and its state. */
struct backend_entry {
    struct ggmlc_backend_info info;      /* strings point into owned[] or the config */
    char *owned_reason, *owned_path, *owned_name, *owned_library;
};

static struct {
    bool loaded, loading;
    struct ggmlc_config cfg;
    struct backend_entry *entries;
    size_t n_entries, entries_cap;
    ggml_backend_reg_t *regs;            /* preference order */
    size_t n_regs, regs_cap;
    ggml_backend_dev_t *extra_devices;   /* ggml_backend_device_register'ed outside a registered reg */
    size_t n_extra_devices;
} R;

/* Longest NAME of a NAME.so plugin file that ggml_backend_load_all_from_path opens. */
#define MAX_PLUGIN_NAME 64

static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock;

static void make_lock(void) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

static void lock_registry(void) {
    pthread_once(&lock_once, make_lock);
    pthread_mutex_lock(&lock);
}

static void unlock_registry(void) { pthread_mutex_unlock(&lock); }

/* ------------------------------------------------------------ entries */

static struct backend_entry *new_entry(void) {
    if (!ggmlc__reserve_one(&R.entries, &R.entries_cap, R.n_entries, sizeof *R.entries))
        return NULL;
    struct backend_entry *e = &R.entries[R.n_entries++];
    memset(e, 0, sizeof *e);
    e->info.priority = -1;
    return e;
}

static void free_entry_strings(struct backend_entry *e) {
    free(e->owned_reason);
    free(e->owned_path);
    free(e->owned_name);
    free(e->owned_library);
}

static void set_reason(struct backend_entry *e, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(2, 3);
static void set_reason(struct backend_entry *e, const char *fmt, ...) {
    char buf[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    free(e->owned_reason);
    e->owned_reason = strdup(buf);
    e->info.reason = e->owned_reason;
}

static bool append_reg(ggml_backend_reg_t reg) {
    if (!ggmlc__reserve_one(&R.regs, &R.regs_cap, R.n_regs, sizeof *R.regs)) return false;
    R.regs[R.n_regs++] = reg;
    return true;
}

static bool reg_is_registered(ggml_backend_reg_t reg) {
    for (size_t i = 0; i < R.n_regs; i++)
        if (R.regs[i] == reg) return true;
    return false;
}

static struct backend_entry *entry_of_reg(ggml_backend_reg_t reg) {
    for (size_t i = 0; i < R.n_entries; i++)
        if (R.entries[i].info.reg == reg) return &R.entries[i];
    return NULL;
}

/* "file:line" of a configured backend, or the path of one loaded by hand. */
static void describe_origin(const struct backend_entry *e, char *buf, size_t size) {
    if (e->info.config_file) snprintf(buf, size, "%s:%d", e->info.config_file, e->info.config_line);
    else if (e->owned_library) snprintf(buf, size, "loaded by the program");
    else snprintf(buf, size, "the CPU default, not configured");
}

/* Open entry index's plugin; a failure is logged once and kept as the entry's reason.
 * (An index, not a pointer: the plugin's init may add entries and move the array.)
 * With quiet_if_not_plugin, a file that is no plugin at all is only traced; returns
 * false then, and the caller drops the entry. */
static bool load_entry(size_t index, const struct ggmlc_plugin_options *opts, bool quiet_if_not_plugin) {
    char reason[768], origin[PATH_MAX + 32];
    const char *version = NULL;
    ggml_backend_reg_t reg = NULL;
    bool not_a_plugin = false;
    const enum ggmlc_status status =
        ggmlc__plugin_load(R.entries[index].info.path, opts, &reg, &version, &not_a_plugin, reason, sizeof reason);
    struct backend_entry *e = &R.entries[index];
    e->info.status = status;
    if (status == GGMLC_OK && (reg_is_registered(reg) || append_reg(reg))) { /* init may have registered it */
        e->info.loaded = true;
        e->info.reg = reg;
        e->info.version = version;
        return true;
    }
    if (status != GGMLC_OK && not_a_plugin && quiet_if_not_plugin) {
        GGMLC_TRACE_LOADER("%s\n", reason);
        return false;
    }
    if (status == GGMLC_OK) { /* out of memory while registering it */
        ggmlc__plugin_unload(reg);
        snprintf(reason, sizeof reason, "%s: out of memory while registering it", e->info.path);
        e->info.status = GGMLC_ERR_NOMEM;
    }
    const bool is_cpu = strcasecmp(e->info.name, "cpu") == 0;
    set_reason(e, "%s%s", reason, is_cpu ? " (this is the CPU backend, the last resort: nothing can compute on the CPU)" : "");
    describe_origin(e, origin, sizeof origin);
    ggmlc_set_error(e->info.status, "backend '%s' (%s) failed: %s", e->info.name, origin, e->info.reason);
    return true;
}

/* ------------------------------------------------------------- loading */

static void options_of(const struct ggmlc_config_backend *b, struct ggmlc_plugin_options *opts) {
    opts->name = b->name;
    opts->config_dir = b->config_dir ? b->config_dir : GGMLC_PLUGINDIR;
    opts->n = b->n_options;
    opts->keys = (const char *const *)b->keys;
    opts->values = (const char *const *)b->values;
}

static void fill_info_from_config(struct backend_entry *e, const struct ggmlc_config_backend *b) {
    e->info.name = b->name;
    e->info.library = b->library;
    e->info.path = b->path;
    e->info.config_file = b->config_file;
    e->info.config_line = b->library_line ? b->library_line : b->config_line;
    e->info.enabled = b->enabled;
    e->info.status = GGMLC_OK;
}

static void load_ordered_backend(const char *name, int priority, bool from_env) {
    struct ggmlc_config_backend *b = ggmlc__config_find(&R.cfg, name);
    if (!b && strcasecmp(name, "cpu") == 0) b = ggmlc__config_add_implicit(&R.cfg, "cpu", "cpu.so");
    if (!b) {
        GGMLC_LOG_WARN("ggmlc: %s names backend '%s', which has no [backend.%s] section (ignored)\n",
                       from_env ? "GGMLC_BACKENDS" : R.cfg.order_origin ? R.cfg.order_origin : "the configuration", name, name);
        return;
    }
    if (b->listed) return; /* named twice (GGMLC_BACKENDS is not deduplicated case-insensitively by everyone) */
    struct backend_entry *e = new_entry();
    if (!e) return;
    b->listed = true;
    fill_info_from_config(e, b);
    e->info.priority = priority;
    if (!b->enabled) {
        set_reason(e, "disabled in %s:%d", b->config_file, b->config_line);
        GGMLC_TRACE_LOADER("backend %s is disabled; not opened\n", b->name);
        return;
    }
    if (!b->path) {
        e->info.status = GGMLC_ERR_CONFIG;
        set_reason(e, "no library key in its section");
        ggmlc_set_error(GGMLC_ERR_CONFIG, "%s:%d: backend '%s' has no library key", b->config_file, b->config_line, b->name);
        return;
    }
    struct ggmlc_plugin_options opts;
    options_of(b, &opts);
    load_entry((size_t)(e - R.entries), &opts, false);
}

static void list_unused_backends(bool from_env) {
    for (size_t i = 0; i < R.cfg.n_backends; i++) {
        struct ggmlc_config_backend *b = &R.cfg.backends[i];
        if (b->listed) continue;
        struct backend_entry *e = new_entry();
        if (!e) return;
        b->listed = true;
        fill_info_from_config(e, b);
        e->info.enabled = false;
        if (!b->enabled) set_reason(e, "disabled in %s:%d", b->config_file, b->config_line);
        else if (from_env) set_reason(e, "left out by GGMLC_BACKENDS");
        else set_reason(e, "not named in backends = (%s)", R.cfg.order_origin ? R.cfg.order_origin : "?");
        GGMLC_TRACE_LOADER("backend %s: %s; not opened\n", b->name, e->info.reason);
    }
}

static enum ggmlc_status load_everything(void) {
    ggmlc_clear_error();
    ggmlc__config_read(&R.cfg);
    /* Loading a plugin clears the last error; a configuration problem (a file that exists
     * but could not be read) must still reach the caller once the backends are loaded. */
    const enum ggmlc_status config_status = ggmlc_last_status();
    char config_error[512];
    snprintf(config_error, sizeof config_error, "%s", ggmlc_last_error());
    ggmlc__plugin_allow_insecure(R.cfg.allow_insecure_plugins);
    if (R.cfg.n_files == 0)
        GGMLC_TRACE_LOADER("no configuration file; loading %s/cpu.so\n", GGMLC_PLUGINDIR);
    const char *env = ggmlc_getenv("GGMLC_BACKENDS");
    const bool from_env = env && *env;
    if (from_env) GGMLC_TRACE_LOADER("GGMLC_BACKENDS=%s\n", env);
    char **names;
    const size_t n = ggmlc__config_order(&R.cfg, from_env ? env : NULL, &names);
    for (size_t i = 0; i < n; i++) load_ordered_backend(names[i], (int)i, from_env);
    ggmlc__free_list(names, n);
    list_unused_backends(from_env);
    if (config_status != GGMLC_OK && ggmlc_last_status() == GGMLC_OK) { /* logged once already */
        ggmlc__errors_quiet(true);
        ggmlc_set_error(config_status, "%s", config_error);
        ggmlc__errors_quiet(false);
    }
    return R.n_regs > 0 ? GGMLC_OK : GGMLC_ERR_PLUGIN;
}

enum ggmlc_status ggmlc_init(void) {
    lock_registry();
    if (!R.loaded && !R.loading) {
        R.loading = true;
        load_everything();
        R.loading = false;
        R.loaded = true;
    }
    const enum ggmlc_status status = R.n_regs > 0 ? GGMLC_OK : GGMLC_ERR_PLUGIN;
    unlock_registry();
    return status;
}

void ggmlc_shutdown(void) {
    lock_registry();
    if (R.loading) { /* called from a plugin's init: the registry is in use */
        GGMLC_LOG_WARN("ggmlc: ggmlc_shutdown called while plugins load; ignored\n");
        unlock_registry();
        return;
    }
    for (size_t i = R.n_regs; i-- > 0;) ggmlc__plugin_unload(R.regs[i]);
    for (size_t i = 0; i < R.n_entries; i++) free_entry_strings(&R.entries[i]);
    free(R.entries);
    free(R.regs);
    free(R.extra_devices);
    ggmlc__config_free(&R.cfg);
    memset(&R, 0, sizeof R);
    unlock_registry();
}

/* Lock, loading the configuration on first use. */
static void lock_loaded(void) {
    lock_registry();
    if (!R.loaded && !R.loading) ggmlc_init();
}

/* ------------------------------------------------------ configuration */

size_t ggmlc_config_file_count(void) {
    lock_loaded();
    const size_t n = R.cfg.n_files;
    unlock_registry();
    return n;
}

const char *ggmlc_config_file(size_t index) {
    lock_loaded();
    const char *file = index < R.cfg.n_files ? R.cfg.files[index] : NULL;
    unlock_registry();
    return file;
}

size_t ggmlc_backend_count(void) {
    lock_loaded();
    const size_t n = R.n_entries;
    unlock_registry();
    return n;
}

bool ggmlc_backend_get_info(size_t index, struct ggmlc_backend_info *info) {
    lock_loaded();
    const bool ok = index < R.n_entries && info;
    if (ok) *info = R.entries[index].info;
    unlock_registry();
    return ok;
}

const char *ggmlc_plugin_option(const struct ggmlc_plugin_options *opts, const char *key, const char *def) {
    if (!opts || !key) return def;
    for (size_t i = 0; i < opts->n; i++)
        if (strcasecmp(opts->keys[i], key) == 0) return opts->values[i];
    return def;
}

/* ---------------------------------------------------------- registries */

size_t ggml_backend_reg_count(void) {
    lock_loaded();
    const size_t n = R.n_regs;
    unlock_registry();
    return n;
}

ggml_backend_reg_t ggml_backend_reg_get(size_t index) {
    lock_loaded();
    ggml_backend_reg_t reg = index < R.n_regs ? R.regs[index] : NULL;
    unlock_registry();
    return reg;
}

/* By configured backend name or by the plugin's registry name. */
ggml_backend_reg_t ggml_backend_reg_by_name(const char *name) {
    if (!name) return NULL;
    lock_loaded();
    ggml_backend_reg_t found = NULL;
    for (size_t i = 0; i < R.n_regs && !found; i++) {
        const struct backend_entry *e = entry_of_reg(R.regs[i]);
        if (strcasecmp(R.regs[i]->name, name) == 0 || (e && strcasecmp(e->info.name, name) == 0)) found = R.regs[i];
    }
    unlock_registry();
    return found;
}

void ggml_backend_register(ggml_backend_reg_t reg) {
    if (!reg) return;
    lock_loaded();
    if (!reg_is_registered(reg) && append_reg(reg)) {
        struct backend_entry *e = new_entry();
        if (e) {
            e->owned_name = strdup(reg->name);
            e->info.name = e->owned_name;
            e->info.enabled = e->info.loaded = true;
            e->info.priority = (int)R.n_regs - 1;
            e->info.reg = reg;
            e->info.version = reg->desc && reg->desc->version ? reg->desc->version : ggmlc_version();
        }
    }
    unlock_registry();
}

void ggml_backend_device_register(ggml_backend_dev_t device) {
    if (!device) return;
    lock_loaded();
    bool known = reg_is_registered(device->reg);
    for (size_t i = 0; i < R.n_extra_devices && !known; i++) known = R.extra_devices[i] == device;
    if (!known) {
        ggml_backend_dev_t *grown = realloc(R.extra_devices, (R.n_extra_devices + 1) * sizeof *grown);
        if (grown) {
            R.extra_devices = grown;
            R.extra_devices[R.n_extra_devices++] = device;
        }
    }
    unlock_registry();
}

/* ------------------------------------------------------------- devices */

/* Device index in preference order: the registries' devices, then the extra ones. */
static ggml_backend_dev_t device_at(size_t index, size_t *count) {
    size_t n = 0;
    ggml_backend_dev_t found = NULL;
    for (size_t r = 0; r < R.n_regs; r++) {
        for (ggml_backend_dev_t d = R.regs[r]->devices; d; d = d->next, n++)
            if (n == index) found = d;
    }
    for (size_t i = 0; i < R.n_extra_devices; i++, n++)
        if (n == index) found = R.extra_devices[i];
    if (count) *count = n;
    return found;
}

size_t ggml_backend_dev_count(void) {
    lock_loaded();
    size_t n;
    device_at(SIZE_MAX, &n);
    unlock_registry();
    return n;
}

ggml_backend_dev_t ggml_backend_dev_get(size_t index) {
    lock_loaded();
    ggml_backend_dev_t dev = device_at(index, NULL);
    unlock_registry();
    return dev;
}

/* ------------------------------------------------ loading by the program */

/* A bare name is looked up in the plugin folder; other paths must be absolute,
 * since a path relative to the current directory could load a planted file.
 * The path is kept as given: the loader checks every folder and link on it. */
static char *resolve_program_path(const char *path) {
    if (path[0] == '/') return strdup(path);
    if (strchr(path, '/')) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ggml_backend_load: %s is relative; give an absolute path or a bare file name (looked up in %s)", path,
                        GGMLC_PLUGINDIR);
        return NULL;
    }
    const size_t n = strlen(GGMLC_PLUGINDIR) + strlen(path) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", GGMLC_PLUGINDIR, path);
    return p;
}

/* "vulkan" for ".../vulkan.so". */
static char *name_from_path(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strstr(base, ".so");
    return strndup(base, dot && dot > base ? (size_t)(dot - base) : strlen(base));
}

/* The loaded entry whose library is the file at path (links resolved), or NULL. */
static struct backend_entry *loaded_entry_with_path(const char *path) {
    char *real = realpath(path, NULL);
    struct backend_entry *found = NULL;
    for (size_t i = 0; real && i < R.n_entries && !found; i++) {
        if (!R.entries[i].info.loaded || !R.entries[i].info.path) continue;
        char *other = realpath(R.entries[i].info.path, NULL);
        if (other && strcmp(other, real) == 0) found = &R.entries[i];
        free(other);
    }
    free(real);
    return found;
}

/* ggml_backend_load; with quiet_if_not_plugin a file that is no plugin is skipped without an error. */
static ggml_backend_reg_t load_program_plugin(const char *path, bool quiet_if_not_plugin) {
    lock_loaded();
    char *resolved = resolve_program_path(path);
    struct backend_entry *e = resolved ? loaded_entry_with_path(resolved) : NULL;
    ggml_backend_reg_t reg = e ? e->info.reg : NULL;
    if (!resolved || e) { /* refused, or loaded already (a second init would register it twice) */
        free(resolved);
        unlock_registry();
        return reg;
    }
    if ((e = new_entry())) {
        e->owned_path = resolved;
        e->owned_name = name_from_path(resolved);
        e->owned_library = strdup(path);
        e->info.name = e->owned_name ? e->owned_name : "?";
        e->info.library = e->owned_library;
        e->info.path = e->owned_path;
        e->info.enabled = true;
        e->info.priority = (int)R.n_regs;
        const struct ggmlc_plugin_options opts = {.name = e->info.name, .config_dir = GGMLC_PLUGINDIR};
        const size_t index = (size_t)(e - R.entries);
        const bool keep = load_entry(index, &opts, quiet_if_not_plugin);
        e = &R.entries[index];
        if (!keep && index == R.n_entries - 1) { /* no plugin ran, so nothing was added after it */
            free_entry_strings(e);
            R.n_entries--;
            e = NULL;
        } else if (!e->info.loaded) {
            e->info.priority = -1;
        }
        reg = e ? e->info.reg : NULL;
    } else {
        free(resolved);
    }
    unlock_registry();
    return reg;
}

ggml_backend_reg_t ggml_backend_load(const char *path) {
    if (!path || !*path) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_load: empty path");
        return NULL;
    }
    return load_program_plugin(path, false);
}

void ggml_backend_unload(ggml_backend_reg_t reg) {
    if (!reg) return;
    lock_loaded();
    size_t at = R.n_regs;
    for (size_t i = 0; i < R.n_regs; i++)
        if (R.regs[i] == reg) at = i;
    if (at < R.n_regs) {
        memmove(&R.regs[at], &R.regs[at + 1], (R.n_regs - at - 1) * sizeof *R.regs);
        R.n_regs--;
        struct backend_entry *e = entry_of_reg(reg);
        if (e) {
            e->info.loaded = false;
            e->info.reg = NULL;
            e->info.version = NULL;
            e->info.priority = -1;
            set_reason(e, "unloaded by the program");
        }
        ggmlc__plugin_unload(reg);
    } else {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggml_backend_unload: registry %s is not registered", reg->name);
    }
    unlock_registry();
}

void ggml_backend_load_all(void) { ggmlc_init(); }

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The naming rule of plugin files: NAME.so, where NAME (the backend's name, as
 * "cpu" in cpu.so) has only letters, digits, '_' and '-'.  Versioned or hidden
 * libraries (libfoo.so.1, .x.so) and other shared objects (libc-2.so, a.b.so)
 * are not plugins, and ggml_backend_load_all_from_path never opens them. */
static bool is_plugin_file_name(const char *name) {
    const size_t n = strlen(name);
    if (n <= 3 || n > MAX_PLUGIN_NAME + 3 || strcmp(name + n - 3, ".so") != 0) return false;
    for (size_t i = 0; i < n - 3; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-') return false;
    return true;
}

void ggml_backend_load_all_from_path(const char *dir_path) {
    ggmlc_init();
    if (!dir_path) return;
    if (dir_path[0] != '/') {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_load_all_from_path: %s is not an absolute path", dir_path);
        return;
    }
    DIR *d = opendir(dir_path);
    if (!d) {
        ggmlc_set_error(GGMLC_ERR_IO, "ggml_backend_load_all_from_path: cannot open %s: %s", dir_path, strerror(errno));
        return;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *ent; (ent = readdir(d));) {
        if (!is_plugin_file_name(ent->d_name)) {
            if (strstr(ent->d_name, ".so"))
                GGMLC_TRACE_LOADER("%s/%s: not a plugin file name (NAME.so), skipped\n", dir_path, ent->d_name);
            continue;
        }
        char **grown = realloc(names, (n + 1) * sizeof *grown);
        if (!grown) break;
        names = grown;
        const size_t len = strlen(dir_path) + strlen(ent->d_name) + 2;
        if ((names[n] = malloc(len))) snprintf(names[n++], len, "%s/%s", dir_path, ent->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, compare_strings);
    for (size_t i = 0; i < n; i++) load_program_plugin(names[i], true); /* each file opened once at most */
    ggmlc__free_list(names, n);
}
