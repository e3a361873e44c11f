/*
 * file-replace.h - replacing a file so that a crash never leaves half of it:
 * the new contents go to a temporary file beside the target, are flushed
 * and synced, and the temporary file is renamed over the target.
 *
 * What is replaced: the regular file the path names after following
 * symbolic links (the links stay).  Device nodes, FIFOs, sockets and folders
 * are refused, never replaced.  The new file keeps the old file's permission
 * bits, and its owner and group where the caller may set them (root); a new
 * file gets 0666 less the umask.  Temporary names stay within the file
 * system's name limit however long the target's name is.
 */
#ifndef GGMLC_FILE_REPLACE_H
#define GGMLC_FILE_REPLACE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "ggmlc.h"
#include "hidden.h"

struct ggmlc_file_replace {
    FILE *f;          /* the new contents are written here */
    char *target;     /* the regular file replaced on commit (symbolic links followed) */
    char *tmp;        /* the temporary file beside it */
    const char *who;  /* what error messages start with ("gguf_write_to_file") */
    bool had_target;  /* target existed at open: old holds its status */
    struct stat old;
};

/* Check path (see ggmlc_check_writable) and open a temporary file beside its target
 * for writing; on failure the error is recorded and nothing is left behind. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__file_replace_open(struct ggmlc_file_replace *r, const char *path, const char *who);
/* Finish: when written (the caller's writes succeeded), flush, sync, give the file the
 * old mode and owner and rename it over the target; otherwise, or when any step fails,
 * remove the temporary file, keep the target as it was and record the error. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__file_replace_commit(struct ggmlc_file_replace *r, bool written);
/* Give up silently: remove the temporary file, the target stays as it was. */
GGMLC_HIDDEN void ggmlc__file_replace_abort(struct ggmlc_file_replace *r);

#endif /* GGMLC_FILE_REPLACE_H */
