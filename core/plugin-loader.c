/*
 * plugin-loader.c - open a plugin file through a descriptor of the very file
 * that passed the security check, check its entry symbol and descriptor
 * (plain data) before calling any function of it, then probe() and init().
 * Every failure becomes one reason sentence for the caller.
 *
 * What runs before the checks: dlopen runs the object's ELF constructors and,
 * with RTLD_NOW, the IFUNC resolvers of its relocations; dlsym runs the
 * resolver of an IFUNC entry symbol.  No loader can prevent that short of not
 * loading the file.  What is guaranteed is that no function the descriptor
 * names (probe, init, fini) is called before the symbol and the descriptor
 * passed every check below, and that no file failing the security check is
 * opened by the dynamic linker at all.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-file.h"
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

void ggmlc__plugin_note_new_reg(ggml_backend_reg_t reg) {
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
    ggmlc__errors_quiet(true);
    const bool can_run = desc->probe() != 0;
    ggmlc__errors_quiet(false);
    return can_run;
}

/* Free the registries a plugin's init created but did not hand over (all of them on failure). */
static size_t free_pending_regs(ggml_backend_reg_t keep) {
    size_t freed = 0;
    for (size_t i = 0; i < pending.n; i++) {
        if (pending.regs[i] == keep) continue;
        ggmlc__reg_free(pending.regs[i]);
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
    ggmlc__errors_quiet(true); /* the plugin's own error becomes part of our single report */
    pending.active = true;
    pending.n = 0;
    enum ggmlc_status status = desc->init(opts, &reg);
    ggmlc__errors_quiet(false);
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

/* ------------------------------------------------ the object's segments */

struct segment_query {
    ElfW(Addr) base;       /* the object's load bias */
    const char *name;      /* and its name, as the dynamic linker has it */
    uintptr_t addr;
    int flags;             /* PF_R, PF_X: what the segment must allow */
    size_t room;           /* out: bytes from addr to the end of its segment */
};

static int find_segment(struct dl_phdr_info *info, size_t size, void *data) {
    struct segment_query *q = data;
    if (info->dlpi_addr != q->base || strcmp(info->dlpi_name, q->name) != 0) return 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & q->flags) == (ElfW(Word))q->flags && q->addr >= lo && q->addr < hi)
            q->room = hi - q->addr;
    }
    return 1;
}

/* Bytes from p to the end of the segment of map (with flags) holding p; 0 when none does. */
static size_t room_in_object(const struct link_map *map, const void *p, int flags) {
    struct segment_query q = {.base = map->l_addr, .name = map->l_name, .addr = (uintptr_t)p, .flags = flags};
    dl_iterate_phdr(find_segment, &q);
    return q.room;
}

/* ---------------------------------------------------------- the entry */

/* The entry symbol must be data of this very object, as large as the
 * descriptor it holds: an absolute symbol (SHN_ABS, any address the plugin
 * likes) or one of a few bytes would make the loader read whatever lies there. */
static enum ggmlc_status check_entry_symbol(const char *path, void *handle, const void *entry, size_t *sym_size,
                                            char *reason, size_t size) {
    struct link_map *map = NULL, *holder = NULL;
    const ElfW(Sym) *sym = NULL;
    Dl_info info;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return fail(reason, size, GGMLC_ERR_PLUGIN, "%s: the dynamic linker gives no map of the loaded object", path);
    if (!dladdr1(entry, &info, (void **)&holder, RTLD_DL_LINKMAP) || holder != map ||
        !dladdr1(entry, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || info.dli_saddr != entry)
        return fail(reason, size, GGMLC_ERR_ABI, "%s: the entry symbol %s (at %p) does not lie inside the plugin", path,
                    GGMLC_PLUGIN_ENTRY_NAME, entry);
    if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT)
        return fail(reason, size, GGMLC_ERR_ABI, "%s: the entry symbol %s is not a data object (ELF type %u)", path,
                    GGMLC_PLUGIN_ENTRY_NAME, (unsigned)ELF64_ST_TYPE(sym->st_info));
    if (sym->st_size < DESC_V1_SIZE)
        return fail(reason, size, GGMLC_ERR_ABI,
                    "%s: the entry symbol %s has %zu bytes, fewer than the %zu of a descriptor", path,
                    GGMLC_PLUGIN_ENTRY_NAME, (size_t)sym->st_size, (size_t)DESC_V1_SIZE);
    if (room_in_object(map, entry, PF_R) < sym->st_size)
        return fail(reason, size, GGMLC_ERR_ABI,
                    "%s: the entry symbol %s does not lie inside a readable segment of the plugin", path,
                    GGMLC_PLUGIN_ENTRY_NAME);
    *sym_size = sym->st_size;
    return GGMLC_OK;
}

/* A function of the descriptor: NULL, or code of the plugin itself. */
static bool is_plugin_code(const struct link_map *map, void (*fn)(void)) {
    return !fn || room_in_object(map, (const void *)(uintptr_t)fn, PF_X) > 0;
}

/* A string of the descriptor: NULL, or terminated inside a readable segment of the plugin. */
static bool is_plugin_string(const struct link_map *map, const char *s) {
    const size_t room = s ? room_in_object(map, s, PF_R) : 1;
    return !s || (room > 0 && memchr(s, '\0', room));
}

/* The descriptor's pointers are called and printed: each must point into the plugin. */
static enum ggmlc_status check_desc_pointers(const char *path, void *handle, const struct ggmlc_plugin_desc *desc,
                                             char *reason, size_t size) {
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return fail(reason, size, GGMLC_ERR_PLUGIN, "%s: the dynamic linker gives no map of the loaded object", path);
    if (!is_plugin_string(map, desc->name) || !is_plugin_string(map, desc->version) ||
        !is_plugin_string(map, desc->description))
        return fail(reason, size, GGMLC_ERR_ABI, "%s: a string of the plugin descriptor points outside the plugin",
                    path);
    if (!is_plugin_code(map, (void (*)(void))desc->probe) || !is_plugin_code(map, (void (*)(void))desc->init) ||
        !is_plugin_code(map, desc->fini))
        return fail(reason, size, GGMLC_ERR_ABI,
                    "%s: a function of the plugin descriptor points outside the plugin's code", path);
    return GGMLC_OK;
}

/* ------------------------------------------------------------ loading */

/* A duplicate of fd numbered higher than any before it, or -1.  dlopen looks
 * an object up by name before it opens anything: a name "/proc/self/fd/N"
 * under which an object still loaded was once opened would give that object
 * back instead of the file behind N.  So each number, and each name, is used
 * once in the life of the process. */
static int fresh_fd(int fd) {
    static atomic_int next_fd = 3;
    const int dup = fcntl(fd, F_DUPFD_CLOEXEC, atomic_load(&next_fd));
    if (dup >= 0) atomic_store(&next_fd, dup + 1);
    return dup;
}

/* dlopen the checked file itself: through /proc/self/fd/N the dynamic linker
 * opens that very inode.  Without /proc (or once the descriptor numbers run
 * out), the resolved path: every folder on it passed the check, so no other
 * user can change what it names. */
static void *open_checked(const char *path, const struct ggmlc_secure_file *file) {
    char by_fd[64];
    const int fd = fresh_fd(file->fd);
    snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", fd);
    const bool through_fd = fd >= 0 && access(by_fd, F_OK) == 0;
    if (!through_fd)
        GGMLC_TRACE_LOADER("%s: cannot load through /proc/self/fd; opening %s, whose folders were checked\n", path,
                           file->real);
    dlerror();
    void *handle = dlopen(through_fd ? by_fd : file->real, RTLD_NOW | RTLD_LOCAL);
    if (fd >= 0) close(fd);
    return handle;
}

/* dlopen path after the security check; NULL with the reason set (*not_a_plugin: dlopen refused it). */
static void *open_plugin(const char *path, bool *not_a_plugin, enum ggmlc_status *status, char *reason, size_t size) {
    struct ggmlc_secure_file file;
    if ((*status = ggmlc__secure_open(path, GGMLC_SECURE_PLUGIN, &file, reason, size)) != GGMLC_OK) return NULL;
    void *handle = open_checked(path, &file);
    close(file.fd);
    if (!handle) {
        const char *err = dlerror();
        *not_a_plugin = true;
        *status = fail(reason, size, GGMLC_ERR_PLUGIN, "cannot load %s: %s", path, err ? err : "unknown dlopen error");
    }
    return handle;
}

/* The entry and its descriptor, checked; NULL with the reason set (*not_a_plugin: no entry symbol). */
static const struct ggmlc_plugin_desc *find_desc(const char *path, void *handle, bool *not_a_plugin, enum ggmlc_status *status,
                                                 char *reason, size_t size) {
    const struct ggmlc_plugin_desc *desc = dlsym(handle, GGMLC_PLUGIN_ENTRY_NAME);
    size_t sym_size = 0;
    *not_a_plugin = desc == NULL;
    if (!desc) {
        *status = fail(reason, size, GGMLC_ERR_PLUGIN, "%s is not a ggmlc plugin: it has no symbol %s", path,
                       GGMLC_PLUGIN_ENTRY_NAME);
    } else if ((*status = check_entry_symbol(path, handle, desc, &sym_size, reason, size)) != GGMLC_OK ||
               (*status = check_desc(path, desc, reason, size)) != GGMLC_OK) {
        /* reason is set */
    } else if (desc->struct_size > sym_size) {
        *status = fail(reason, size, GGMLC_ERR_ABI, "%s: the plugin descriptor claims %u bytes, but its symbol has %zu", path,
                       desc->struct_size, sym_size);
    } else {
        *status = check_desc_pointers(path, handle, desc, reason, size);
    }
    return *status == GGMLC_OK ? desc : NULL;
}

enum ggmlc_status ggmlc__plugin_load(const char *path, const struct ggmlc_plugin_options *opts, ggml_backend_reg_t *reg_out,
                                    const char **version, bool *not_a_plugin, char *reason, size_t size) {
    *reg_out = NULL;
    *version = NULL;
    bool unused;
    if (!not_a_plugin) not_a_plugin = &unused;
    *not_a_plugin = false;
    GGMLC_TRACE_LOADER("trying plugin %s\n", path);
    enum ggmlc_status status;
    void *handle = open_plugin(path, not_a_plugin, &status, reason, size);
    if (!handle) return status;
    const struct ggmlc_plugin_desc *desc = find_desc(path, handle, not_a_plugin, &status, reason, size);
    if (!desc) {
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

void ggmlc__plugin_unload(ggml_backend_reg_t reg) {
    if (!reg) return;
    void *handle = reg->dl_handle;
    const struct ggmlc_plugin_desc *desc = reg->desc;
    ggmlc__reg_free(reg);
    if (desc && desc->fini) desc->fini();
    if (handle) dlclose(handle);
}
