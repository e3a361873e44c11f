#!/bin/bash
# tools/source-copy.sh SRCDIR DEST - print a source tree to configure out of tree:
# SRCDIR itself when it is not configured in place, else a copy of its
# git-tracked files in DEST (Automake refuses a second, out-of-tree build of a
# source folder configured in place, as .ci/run's checkout is).
set -euo pipefail
src=$1 dest=$2
if [ ! -f "$src/config.status" ]; then echo "$src"; exit 0; fi
command -v git >/dev/null && git -C "$src" rev-parse >/dev/null 2>&1 ||
    { echo "source-copy: $src is configured in place and is no git checkout; run make distclean there" >&2; exit 1; }
mkdir -p "$dest"
git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -C "$dest" -xf -
(cd "$dest" && autoreconf -fi >/dev/null 2>&1)
echo "$dest"
