/*
 * file-replace.c - crash-safe replacement of files (file-replace.h) and
 * ggmlc_check_writable, which runs the same checks before a long job.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "file-replace.h"

enum {
    MAX_LINK_DEPTH = 40, /* the kernel's own limit for a chain of symbolic links */
    CREATE_TRIES = 100,  /* temporary names tried before giving up */
    RANDOM_CHARS = 6,
};
#define TMP_MARK ".tmp-" /* temporary name: <start of the target's name>.tmp-<random> */

static enum ggmlc_status replace_error(const char *who, const char *path, const char *reason) {
    return ggmlc_set_error(GGMLC_ERR_IO, "%s: cannot write %s: %s", who, path, reason);
}

static enum ggmlc_status out_of_memory(const char *who) { return ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", who); }

/* The folder part of path, "." when there is none; *base: where the last component starts. */
static char *folder_of(const char *path, const char **base) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    return slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
}

/* What a symbolic link points to, as a path usable from here (relative links are
 * relative to the link's folder). */
static enum ggmlc_status read_link(const char *who, const char *link, char **out) {
    char to[PATH_MAX];
    const ssize_t n = readlink(link, to, sizeof to - 1);
    if (n < 0) return replace_error(who, link, strerror(errno));
    to[n] = '\0';
    const char *base;
    char *folder = to[0] == '/' ? strdup("") : folder_of(link, &base);
    *out = folder ? malloc(strlen(folder) + (size_t)n + 2) : NULL;
    if (*out) sprintf(*out, "%s%s%s", folder, *folder && folder[strlen(folder) - 1] != '/' ? "/" : "", to);
    free(folder);
    return *out ? GGMLC_OK : out_of_memory(who);
}

/* Follow symbolic links from path to the file they finally name (which may not exist yet):
 * that file is replaced and the links stay as they are. */
static enum ggmlc_status follow_links(const char *who, const char *path, char **out) {
    char *cur = strdup(path);
    for (int depth = 0; cur; depth++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) {
            *out = cur;
            return GGMLC_OK;
        }
        char *next = NULL;
        enum ggmlc_status status = depth < MAX_LINK_DEPTH ? read_link(who, cur, &next)
                                                          : replace_error(who, path, "too many levels of symbolic links");
        free(cur);
        if (status != GGMLC_OK) return status;
        cur = next;
    }
    return out_of_memory(who);
}

/* The longest file name the folder's file system takes. */
static long name_limit(const char *folder) {
    const long limit = pathconf(folder, _PC_NAME_MAX);
    return limit > 0 ? limit : NAME_MAX;
}

static const char *kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* Everything that can be known before writing: a valid name, an existing folder, and a
 * target that is absent or a regular file this user may replace. */
static enum ggmlc_status check_target(struct ggmlc_file_replace *r, const char *folder, const char *base, long name_max) {
    char why[PATH_MAX + 128];
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return replace_error(r->who, r->target, "it names a folder, not a file");
    if ((long)strlen(base) > name_max) {
        snprintf(why, sizeof why, "the file name has %zu bytes, more than the %ld the file system allows", strlen(base), name_max);
        return replace_error(r->who, r->target, why);
    }
    struct stat dir;
    const bool found = stat(folder, &dir) == 0;
    if (!found || !S_ISDIR(dir.st_mode)) {
        snprintf(why, sizeof why, "the folder %s: %s", folder, found ? "not a folder" : strerror(errno));
        return replace_error(r->who, r->target, why);
    }
    r->had_target = lstat(r->target, &r->old) == 0;
    if (!r->had_target && errno != ENOENT) return replace_error(r->who, r->target, strerror(errno));
    if (r->had_target && !S_ISREG(r->old.st_mode)) {
        snprintf(why, sizeof why, "it is %s; only regular files are replaced", kind_of(r->old.st_mode));
        return replace_error(r->who, r->target, why);
    }
    /* In a sticky folder (/tmp) only the owner of the file or of the folder may replace it. */
    const uid_t me = geteuid();
    if (r->had_target && (dir.st_mode & S_ISVTX) && me != 0 && r->old.st_uid != me && dir.st_uid != me)
        return replace_error(r->who, r->target, "it belongs to another user in a folder with the sticky bit");
    return GGMLC_OK;
}

/* Random letters and digits; unpredictability is not needed (O_EXCL refuses existing names). */
static void fill_random(char *x, size_t n) {
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 24) ^ ((uint64_t)getpid() << 40) ^
                 (atomic_fetch_add(&counter, 1) + 1) * 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = chars[s % (sizeof chars - 1)];
    }
}

/* The temporary file's name: the target's name cut (at a UTF-8 character boundary) so that
 * the whole name fits name_max bytes, then TMP_MARK and the random characters. */
static char *temp_name(const char *target, const char *base, long name_max) {
    const size_t tail = strlen(TMP_MARK) + RANDOM_CHARS, folder_len = (size_t)(base - target);
    size_t keep = strlen(base);
    if ((long)(keep + tail) > name_max) keep = name_max > (long)tail ? (size_t)name_max - tail : 0;
    while (keep > 0 && ((unsigned char)base[keep] & 0xC0) == 0x80) keep--;
    char *name = malloc(folder_len + keep + tail + 1);
    if (name) sprintf(name, "%.*s%.*s%s%*s", (int)folder_len, target, (int)keep, base, TMP_MARK, RANDOM_CHARS, "");
    return name;
}

/* Create the temporary file beside the target: 0600 while an old file's mode is to be
 * copied at the end, else 0666 less the umask (applied by the kernel, no umask() race). */
static enum ggmlc_status create_temp(struct ggmlc_file_replace *r, const char *folder, const char *base, long name_max) {
    r->tmp = temp_name(r->target, base, name_max);
    if (!r->tmp) return out_of_memory(r->who);
    char *random_part = r->tmp + strlen(r->tmp) - RANDOM_CHARS;
    int fd = -1;
    for (int i = 0; fd < 0 && i < CREATE_TRIES; i++) {
        fill_random(random_part, RANDOM_CHARS);
        fd = open(r->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, r->had_target ? 0600 : 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    r->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (r->f) return GGMLC_OK;
    char why[PATH_MAX + 128];
    snprintf(why, sizeof why, "cannot create a temporary file in %s: %s", folder, strerror(errno));
    if (fd >= 0) close(fd), unlink(r->tmp);
    free(r->tmp);
    r->tmp = NULL;
    return replace_error(r->who, r->target, why);
}

enum ggmlc_status ggmlc__file_replace_open(struct ggmlc_file_replace *r, const char *path, const char *who) {
    *r = (struct ggmlc_file_replace){.who = who};
    if (!path || !*path) return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: no file name", who);
    enum ggmlc_status status = follow_links(who, path, &r->target);
    if (status != GGMLC_OK) return status;
    const char *base;
    char *folder = folder_of(r->target, &base);
    const long name_max = folder ? name_limit(folder) : 0;
    status = !folder ? out_of_memory(who) : check_target(r, folder, base, name_max);
    if (status == GGMLC_OK) status = create_temp(r, folder, base, name_max);
    free(folder);
    if (status != GGMLC_OK) free(r->target), r->target = NULL;
    return status;
}

/* The new file takes the old one's owner, group and permission bits.  Only root may give a
 * file away; other users keep the group when they belong to it.  A set-id bit whose owner or
 * group could not be kept is dropped rather than granted to the writer's ids. */
static int keep_owner_and_mode(int fd, const struct stat *old) {
    struct stat now;
    if (fstat(fd, &now) != 0) return errno;
    bool uid_kept = now.st_uid == old->st_uid, gid_kept = now.st_gid == old->st_gid;
    if (!uid_kept || !gid_kept) {
        if (fchown(fd, old->st_uid, old->st_gid) == 0) uid_kept = gid_kept = true;
        else if (!gid_kept && fchown(fd, (uid_t)-1, old->st_gid) == 0) gid_kept = true;
    }
    const mode_t mode = (old->st_mode & 07777) & ~(uid_kept ? 0 : S_ISUID) & ~(gid_kept ? 0 : S_ISGID);
    return fchmod(fd, mode) == 0 ? 0 : errno;
}

/* Make the rename itself durable: sync the folder that holds the file (best effort). */
static void sync_folder(const char *path) {
    const char *base;
    char *folder = folder_of(path, &base);
    const int fd = folder ? open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(folder);
}

static int finish_file(struct ggmlc_file_replace *r, bool written) {
    int err = written ? 0 : errno ? errno : EIO;
    if (!err && (ferror(r->f) || fflush(r->f) != 0 || fsync(fileno(r->f)) != 0)) err = errno ? errno : EIO;
    if (!err && r->had_target) err = keep_owner_and_mode(fileno(r->f), &r->old);
    if (fclose(r->f) != 0 && !err) err = errno;
    r->f = NULL;
    return err;
}

enum ggmlc_status ggmlc__file_replace_commit(struct ggmlc_file_replace *r, bool written) {
    int err = finish_file(r, written);
    if (!err && rename(r->tmp, r->target) != 0) err = errno;
    if (!err) sync_folder(r->target);
    const enum ggmlc_status status = err ? replace_error(r->who, r->target, strerror(err)) : GGMLC_OK;
    if (err) unlink(r->tmp);
    free(r->tmp);
    free(r->target);
    r->tmp = r->target = NULL;
    return status;
}

void ggmlc__file_replace_abort(struct ggmlc_file_replace *r) {
    if (r->f) fclose(r->f);
    if (r->tmp) unlink(r->tmp);
    free(r->tmp);
    free(r->target);
    *r = (struct ggmlc_file_replace){0};
}

enum ggmlc_status ggmlc_check_writable(const char *path) {
    struct ggmlc_file_replace r;
    const enum ggmlc_status status = ggmlc__file_replace_open(&r, path, "ggmlc_check_writable");
    if (status == GGMLC_OK) ggmlc__file_replace_abort(&r);
    return status;
}
