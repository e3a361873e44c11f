#!/bin/sh
# test-nn-includes.sh - nn/ (the model API) includes only public headers (include/), its own
# (nn/) and the core headers declared for it: core/ggmlc-internal.h and what that header
# includes.  Followed through every quoted include, so a header declared for nn/ that pulls in
# a private one (ggml-impl.h, backend-impl.h, ...) fails too (TAP, one line per file).

: "${GGMLC_TEST_DATA:?run through make check}"
top=$(cd "$GGMLC_TEST_DATA/.." && pwd)
. "$GGMLC_TEST_DATA/taplib.sh"
allowed_core="ggmlc-internal.h optimizer.h file-replace.h hidden.h"

# where NAME: the file a quoted include of NAME reaches from nn/, or "private:NAME"
where() {
    for dir in "$top/include" "$top/nn"; do
        [ -f "$dir/$1" ] && { echo "$dir/$1"; return; }
    done
    for name in $allowed_core; do
        [ "$1" = "$name" ] && { echo "$top/core/$1"; return; }
    done
    echo "private:$1"
}

# bad_includes FILE: the private headers FILE reaches, transitively (empty when none)
bad_includes() {
    seen=" " todo="$1" bad=""
    while [ -n "$todo" ]; do
        set -- $todo
        file=$1; shift; todo="$*"
        for name in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file"); do
            path=$(where "$name")
            case "$path" in
            private:*) bad="$bad ${path#private:}" ;;
            *) case "$seen" in *" $path "*) ;; *) seen="$seen$path "; todo="$todo $path" ;; esac ;;
            esac
        done
    done
    echo $bad
}

for f in "$top"/nn/*.c "$top"/nn/*.h; do
    bad=$(bad_includes "$f")
    [ -z "$bad" ]
    ok $? "nn/$(basename "$f") reaches no private core header${bad:+ (it reaches:$bad)}"
done
tap_done
