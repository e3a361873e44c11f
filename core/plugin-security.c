/*
 * plugin-security.c - open plugin and configuration files that another user
 * could not have replaced (see plugin-security.h).
 *
 * Checking a resolved path and then opening the path as given is a race: a
 * link in a folder another user can write may be swapped in between.  So
 * the path is walked here the way the kernel would walk it, but one
 * component at a time from descriptors of folders already checked: each
 * component is opened with O_PATH | O_NOFOLLOW (no side effects, links not
 * followed), fstat'ed and checked; a link's target is then walked the same
 * way.  Whoever can write to a folder on the way can swap what lies below
 * it, which is why every one of them counts, as in OpenSSH's checks of its
 * key files.  The file is finally opened from its checked folder with
 * O_NOFOLLOW and must be the very inode that was checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin-security.h"

static atomic_bool insecure_allowed;

void ggmlc__plugin_allow_insecure(bool allow) { atomic_store(&insecure_allowed, allow); }

#define PLUGIN_HINT "set allow_insecure_plugins = true in [ggmlc] of the configuration to load it anyway"
#define CONFIG_HINT "make it and its folders writable only by their owner, root or you"
/* Links followed in one walk at most, as the kernel's limit (ELOOP). */
#define MAX_LINKS 40

enum component { COMPONENT_FILE, COMPONENT_FOLDER, COMPONENT_LINK };

static const char NOT_REGULAR[] = "is not a regular file"; /* no permission can fix that: no hint */

/* Why st (a component of the kind given) is unsafe, or NULL. */
static const char *unsafe_because(const struct stat *st, enum component kind) {
    if (st->st_uid != 0 && st->st_uid != geteuid()) return "is owned by another user";
    if (kind == COMPONENT_LINK) return NULL; /* a link's own mode means nothing */
    if (kind == COMPONENT_FILE && !S_ISREG(st->st_mode)) return NOT_REGULAR;
    if (!(st->st_mode & (S_IWGRP | S_IWOTH))) return NULL;
    if (kind == COMPONENT_FOLDER && (st->st_mode & S_ISVTX)) return NULL; /* sticky: others cannot replace our entries */
    return st->st_mode & S_IWOTH ? "is writable by all users" : "is writable by its group";
}

/* One walk: the path as given, what is left of it, and the folder reached. */
struct walk {
    const char *path;
    enum ggmlc_secure_kind kind;
    bool check;         /* false while insecure plugins are allowed */
    int dir;            /* O_PATH descriptor of the folder reached (checked) */
    char *real;         /* its resolved path ("" for "/") */
    char todo[PATH_MAX]; /* the components still to walk */
    char *reason;
    size_t size;
};

static enum ggmlc_status refuse(struct walk *w, enum ggmlc_status status, const char *fmt, ...) GGML_ATTRIBUTE_FORMAT(3, 4);

/* One sentence "refusing to load plugin PATH: ..." into w->reason. */
static enum ggmlc_status refuse(struct walk *w, enum ggmlc_status status, const char *fmt, ...) {
    const bool plugin = w->kind == GGMLC_SECURE_PLUGIN;
    const int n = snprintf(w->reason, w->size, "refusing to %s %s: ", plugin ? "load plugin" : "read configuration file",
                           w->path);
    if (n >= 0 && (size_t)n < w->size) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(w->reason + n, w->size - (size_t)n, fmt, args);
        va_end(args);
    }
    return status;
}

static enum ggmlc_status refuse_errno(struct walk *w, const char *what, int err) {
    const enum ggmlc_status status = err == ENOENT || err == ENOTDIR ? GGMLC_ERR_NOT_FOUND
                                     : w->kind == GGMLC_SECURE_PLUGIN ? GGMLC_ERR_PLUGIN
                                                                     : GGMLC_ERR_CONFIG;
    /* "PATH: No such file or directory", as open() would have said it */
    if (!what[0] || strcmp(what, w->path) == 0) return snprintf(w->reason, w->size, "%s: %s", w->path, strerror(err)), status;
    return refuse(w, status, "%s: %s", what, strerror(err));
}

/* The check of one component whose resolved path is shown as `shown`. */
static enum ggmlc_status check_component(struct walk *w, const struct stat *st, enum component kind, const char *shown) {
    const char *why = w->check ? unsafe_because(st, kind) : NULL;
    if (!why) return GGMLC_OK;
    static const char *const what[] = {"it", "its folder ", "the link "};
    const char *hint = why == NOT_REGULAR ? "" : w->kind == GGMLC_SECURE_PLUGIN ? " (" PLUGIN_HINT ")" : " (" CONFIG_HINT ")";
    return refuse(w, w->kind == GGMLC_SECURE_PLUGIN ? GGMLC_ERR_PLUGIN : GGMLC_ERR_CONFIG, "%s%s %s%s", what[kind],
                  kind == COMPONENT_FILE ? "" : shown, why, hint);
}

/* Make fd (a checked folder whose resolved path is now w->real) the folder reached. */
static void enter(struct walk *w, int fd) {
    close(w->dir);
    w->dir = fd;
}

/* Start (again) at "/": for the path itself and for absolute link targets. */
static enum ggmlc_status enter_root(struct walk *w) {
    const int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        const int err = errno;
        if (fd >= 0) close(fd);
        return refuse_errno(w, "/", err);
    }
    w->real[0] = '\0';
    if (w->dir >= 0) close(w->dir);
    w->dir = fd;
    return check_component(w, &st, COMPONENT_FOLDER, "/");
}

/* The link fd (named name in the folder reached): walk its target before the rest. */
static enum ggmlc_status follow_link(struct walk *w, int fd, const struct stat *st, const char *name, const char *rest,
                                     int *links) {
    char shown[PATH_MAX + NAME_MAX + 2], target[PATH_MAX];
    snprintf(shown, sizeof shown, "%s/%s", w->real, name);
    enum ggmlc_status status = check_component(w, st, COMPONENT_LINK, shown);
    if (status != GGMLC_OK) return status;
    const ssize_t n = readlinkat(fd, "", target, sizeof target);
    if (n < 0) return refuse_errno(w, shown, errno);
    if ((size_t)n >= sizeof target || ++*links > MAX_LINKS)
        return refuse_errno(w, shown, (size_t)n >= sizeof target ? ENAMETOOLONG : ELOOP);
    target[n] = '\0';
    char todo[sizeof w->todo];
    if ((size_t)snprintf(todo, sizeof todo, "%s/%s", target, rest) >= sizeof todo) return refuse_errno(w, shown, ENAMETOOLONG);
    memcpy(w->todo, todo, sizeof todo);
    return target[0] == '/' ? enter_root(w) : GGMLC_OK;
}

/* ".." from the folder reached. */
static enum ggmlc_status enter_parent(struct walk *w) {
    const int fd = openat(w->dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        const int err = errno;
        if (fd >= 0) close(fd);
        return refuse_errno(w, w->real, err);
    }
    char *slash = strrchr(w->real, '/');
    if (slash) *slash = '\0';
    enter(w, fd);
    return check_component(w, &st, COMPONENT_FOLDER, w->real[0] ? w->real : "/");
}

/* Open the last component, name, from the folder reached: exactly the inode checked as pathst. */
static enum ggmlc_status open_file(struct walk *w, const char *name, const struct stat *pathst, struct ggmlc_secure_file *out) {
    char shown[PATH_MAX + NAME_MAX + 2];
    snprintf(shown, sizeof shown, "%s/%s", w->real, name);
    enum ggmlc_status status = check_component(w, pathst, COMPONENT_FILE, shown);
    if (status != GGMLC_OK) return status;
    /* O_NONBLOCK: should it have become a FIFO meanwhile, opening must not wait for a writer */
    const int fd = openat(w->dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        const int err = errno;
        if (fd >= 0) close(fd);
        return refuse_errno(w, w->path, err);
    }
    if (st.st_dev != pathst->st_dev || st.st_ino != pathst->st_ino) {
        close(fd);
        return refuse(w, w->kind == GGMLC_SECURE_PLUGIN ? GGMLC_ERR_PLUGIN : GGMLC_ERR_CONFIG,
                      "%s was replaced while it was being checked", shown);
    }
    const size_t len = strlen(shown);
    if ((status = check_component(w, &st, COMPONENT_FILE, shown)) != GGMLC_OK ||
        (len >= sizeof out->real && (status = refuse_errno(w, w->path, ENAMETOOLONG)) != GGMLC_OK)) {
        close(fd);
        return status;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    out->fd = fd;
    memcpy(out->real, shown, len + 1);
    return GGMLC_OK;
}

/* One step: the next component of w->todo.  *done once the file is open. */
static enum ggmlc_status step(struct walk *w, int *links, struct ggmlc_secure_file *out, bool *done) {
    char *name = w->todo + strspn(w->todo, "/");
    const size_t len = strcspn(name, "/");
    if (len == 0) return refuse_errno(w, w->path, EISDIR); /* the path ends on a folder */
    if (len > NAME_MAX) return refuse_errno(w, w->path, ENAMETOOLONG);
    char component[NAME_MAX + 1], rest[PATH_MAX];
    memcpy(component, name, len);
    component[len] = '\0';
    snprintf(rest, sizeof rest, "%s", name + len);
    const bool last = rest[strspn(rest, "/")] == '\0';
    memmove(w->todo, rest, strlen(rest) + 1);
    if (strcmp(component, ".") == 0) return last ? refuse_errno(w, w->path, EISDIR) : GGMLC_OK;
    if (strcmp(component, "..") == 0) return last ? refuse_errno(w, w->path, EISDIR) : enter_parent(w);

    const int fd = openat(w->dir, component, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        const int err = errno;
        if (fd >= 0) close(fd);
        return refuse_errno(w, w->path, err);
    }
    enum ggmlc_status status;
    if (S_ISLNK(st.st_mode)) {
        status = follow_link(w, fd, &st, component, w->todo, links);
        close(fd);
    } else if (S_ISDIR(st.st_mode)) {
        char shown[PATH_MAX + NAME_MAX + 2];
        const size_t n = (size_t)snprintf(shown, sizeof shown, "%s/%s", w->real, component);
        status = n >= PATH_MAX ? refuse_errno(w, w->path, ENAMETOOLONG) : check_component(w, &st, COMPONENT_FOLDER, shown);
        if (status == GGMLC_OK && last) status = refuse_errno(w, w->path, EISDIR);
        if (status != GGMLC_OK) {
            close(fd);
            return status;
        }
        memcpy(w->real, shown, n + 1);
        enter(w, fd);
    } else {
        status = last ? open_file(w, component, &st, out) : refuse_errno(w, w->path, ENOTDIR);
        close(fd);
        *done = status == GGMLC_OK;
    }
    return status;
}

enum ggmlc_status ggmlc__secure_open(const char *path, enum ggmlc_secure_kind kind, struct ggmlc_secure_file *out,
                                    char *reason, size_t size) {
    out->fd = -1;
    out->real[0] = '\0';
    struct walk *w = calloc(1, sizeof *w);
    char *real = malloc(PATH_MAX);
    if (!w || !real) {
        free(w);
        free(real);
        snprintf(reason, size, "%s: out of memory", path);
        return GGMLC_ERR_NOMEM;
    }
    *w = (struct walk){.path = path, .kind = kind, .dir = -1, .real = real, .reason = reason, .size = size};
    w->check = kind != GGMLC_SECURE_PLUGIN || !atomic_load(&insecure_allowed);
    enum ggmlc_status status;
    if (path[0] != '/') status = refuse(w, GGMLC_ERR_INTERNAL, "not an absolute path"); /* callers resolve paths */
    else if (strlen(path) >= sizeof w->todo) status = refuse_errno(w, path, ENAMETOOLONG);
    else status = enter_root(w);
    if (status == GGMLC_OK) snprintf(w->todo, sizeof w->todo, "%s", path);
    int links = 0;
    for (bool done = false; status == GGMLC_OK && !done;) status = step(w, &links, out, &done);
    if (w->dir >= 0) close(w->dir);
    free(real);
    free(w);
    return status;
}
