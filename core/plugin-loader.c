/*
 * plugin-loader.c - dlopen a plugin from a resolved path, check its
 * descriptor (plain data) before calling any of its code, then probe()
 * and init().  Every failure becomes one reason sentence for the caller.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "plugin-loader.h"
#include "plugin-security.h"

/* The descriptor as ABI 1.0 defined it ends with fini. */
#define DESC_V1_SIZE (offsetof(struct ggmlc_plugin_desc, fini) + sizeof(void (*)(void)))

/* Registries created by ggmlc_reg_new during a plugin's init on this thread. */
#define MAX_PENDING_REGS 16
static _Thread_local struct {
    bool active;
    size_t n;
    ggml_backend_reg_t regs[MAX_PENDING_REGS];
} pending;

void ggmlc_plugin_note_new_reg(ggml_backend_reg_t reg) {
    if (pending.active && pending.n < MAX_PENDING_REGS) pending.regs[pending.n++] = reg;
}

static enum ggmlc_status fail(char *reason, size_t size, enum ggmlc_status status, const char *fmt, ...)
    GGML_ATTRIBUTE_FORMAT(4, 5);

static enum ggmlc_status fail(char *reason, size_t size, enum ggmlc_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(reason, size, fmt, args);
    va_end(args);
    return status;
}

/* The descriptor's header is data: check it before trusting any of its pointers. */
static enum ggmlc_status check_desc(const char *path, const struct ggmlc_plugin_desc *desc, char *reason, size_t size) {
    if (desc->magic != GGMLC_PLUGIN_MAGIC)
        return fail(reason, size, GGMLC_ERR_ABI, "%s: bad plugin magic 0x%08x (expected 0x%08x)", path, desc->magic,
                    GGMLC_PLUGIN_MAGIC);
    if (desc->abi_major != GGMLC_PLUGIN_ABI_MAJOR)
        return fail(reason, size, GGMLC_ERR_ABI,
                    "%s was built for plugin ABI %u.%u, but this libggmlc has ABI %d.%d (the major versions must match)", path,
                    desc->abi_major, desc->abi_minor, GGMLC_PLUGIN_ABI_MAJOR, GGMLC_PLUGIN_ABI_MINOR);
    if (desc->abi_minor > GGMLC_PLUGIN_ABI_MINOR)
        return fail(reason, size, GGMLC_ERR_ABI, "%s was built for plugin ABI %u.%u, newer than this libggmlc's ABI %d.%d", path,
                    desc->abi_major, desc->abi_minor, GGMLC_PLUGIN_ABI_MAJOR, GGMLC_PLUGIN_ABI_MINOR);
    if (desc->struct_size < DESC_V1_SIZE)
        return fail(reason, size, GGMLC_ERR_ABI, "%s: plugin descriptor of %u bytes is smaller than the %zu bytes of ABI %d.0",
                    path, desc->struct_size, (size_t)DESC_V1_SIZE, GGMLC_PLUGIN_ABI_MAJOR);
    if (!desc->init)
        return fail(reason, size, GGMLC_ERR_PLUGIN, "%s: the plugin descriptor has no init function", path);
    return GGMLC_OK;
}

/* probe(), with the plugin's own error (if it gives one) kept for our single report. */
static bool run_probe(const struct ggmlc_plugin_desc *desc) {
    if (!desc->probe) return true;
    ggmlc_clear_error();
    ggmlc_errors_quiet(true);
    const bool can_run = desc->probe() != 0;
    ggmlc_errors_quiet(false);
    return can_run;
}

/* Free the registries a plugin's init created but did not hand over (all of them on failure). */
static size_t free_pending_regs(ggml_backend_reg_t keep) {
    size_t freed = 0;
    for (size_t i = 0; i < pending.n; i++) {
        if (pending.regs[i] == keep) continue;
        ggmlc_reg_free(pending.regs[i]);
        freed++;
    }
    pending.n = 0;
    pending.active = false;
    return freed;
}

static enum ggmlc_status run_init(const char *path, void *handle, const struct ggmlc_plugin_desc *desc,
                                  const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out, char *reason,
                                  size_t size) {
    ggml_backend_reg_t reg = NULL;
    ggmlc_clear_error();
    ggmlc_errors_quiet(true); /* the plugin's own error becomes part of our single report */
    pending.active = true;
    pending.n = 0;
    enum ggmlc_status status = desc->init(opts, &reg);
    ggmlc_errors_quiet(false);
    if (status == GGMLC_OK && !reg) {
        status = fail(reason, size, GGMLC_ERR_PLUGIN, "%s: init succeeded but created no registry", path);
    } else if (status != GGMLC_OK) {
        const char *why = ggmlc_last_error()[0] ? ggmlc_last_error() : ggmlc_status_str(status);
        fail(reason, size, status, "%s: init failed: %s", path, why);
    }
    if (status != GGMLC_OK) {
        /* whatever init left behind; a reg it returned but did not create through ggmlc_reg_new is not ours */
        const size_t freed = free_pending_regs(NULL);
        if (freed) GGMLC_TRACE_LOADER("%s: freed %zu registries left behind by the failed init\n", path, freed);
        return status;
    }
    if (ggmlc_last_status() != GGMLC_OK) /* an error the plugin recovered from: shown, not lost */
        GGMLC_LOG_WARN("ggmlc: %s: %s\n", path, ggmlc_last_error());
    const size_t extra = free_pending_regs(reg);
    if (extra) GGMLC_LOG_WARN("ggmlc: %s: init created %zu registries it did not return; they were freed\n", path, extra);
    reg->dl_handle = handle;
    reg->desc = desc;
    *reg_out = reg;
    return GGMLC_OK;
}

enum ggmlc_status ggmlc_plugin_load(const char *path, const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out,
                                    const char **version, char *reason, size_t size) {
    *reg_out = NULL;
    *version = NULL;
    GGMLC_TRACE_LOADER("trying plugin %s\n", path);
    if (path[0] != '/') /* the callers resolve paths; a relative one here would be a bug */
        return fail(reason, size, GGMLC_ERR_INTERNAL, "%s: plugin paths must be absolute", path);
    if (access(path, F_OK) != 0)
        return fail(reason, size, GGMLC_ERR_NOT_FOUND, "%s: %s", path, strerror(errno));
    const enum ggmlc_status secure = ggmlc_plugin_check_secure(path, reason, size);
    if (secure != GGMLC_OK) return secure;
    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *err = dlerror();
        return fail(reason, size, GGMLC_ERR_PLUGIN, "cannot load %s: %s", path, err ? err : "unknown dlopen error");
    }
    const struct ggmlc_plugin_desc *desc = dlsym(handle, GGMLC_PLUGIN_ENTRY_NAME);
    enum ggmlc_status status;
    if (!desc) {
        status = fail(reason, size, GGMLC_ERR_PLUGIN, "%s is not a ggmlc plugin: it has no symbol %s", path,
                      GGMLC_PLUGIN_ENTRY_NAME);
    } else if ((status = check_desc(path, desc, reason, size)) != GGMLC_OK) {
        /* reason is set */
    } else if (!run_probe(desc)) {
        status = fail(reason, size, GGMLC_ERR_UNSUPPORTED, "%s: probe() says the plugin cannot run on this machine%s%s", path,
                      ggmlc_last_error()[0] ? ": " : "", ggmlc_last_error());
    } else if ((status = run_init(path, handle, desc, opts, reg_out, reason, size)) == GGMLC_OK) {
        *version = desc->version ? desc->version : "?";
        GGMLC_TRACE_LOADER("loaded %s (%s %s)\n", path, desc->name ? desc->name : "?", *version);
        return GGMLC_OK;
    }
    dlclose(handle);
    return status;
}

bool ggmlc_plugin_has_entry(const char *path) {
    char unsafe[512];
    if (ggmlc_plugin_check_secure(path, unsafe, sizeof unsafe) != GGMLC_OK) {
        GGMLC_TRACE_LOADER("%s\n", unsafe);
        return true; /* not opened here: ggmlc_plugin_load refuses it with that reason */
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        GGMLC_TRACE_LOADER("%s: not loadable: %s\n", path, dlerror());
        return false;
    }
    const bool has = dlsym(handle, GGMLC_PLUGIN_ENTRY_NAME) != NULL;
    GGMLC_TRACE_LOADER("%s: %s\n", path, has ? "a ggmlc plugin" : "no plugin entry symbol, skipped");
    dlclose(handle);
    return has;
}

void ggmlc_plugin_unload(ggml_backend_reg_t reg) {
    if (!reg) return;
    void *handle = reg->dl_handle;
    const struct ggmlc_plugin_desc *desc = reg->desc;
    ggmlc_reg_free(reg);
    if (desc && desc->fini) desc->fini();
    if (handle) dlclose(handle);
}
