#!/bin/sh
# test-api-list.sh - ggmlc's headers declare every function (with ggml's exact
# prototype), enumeration constant, struct, enum and typedef of ggml's public
# C API as recorded in tests/api/ggml-api.list (see tests/api/README).
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
. "$GGMLC_TEST_DATA/taplib.sh"
list="$srcdir/tests/api/ggml-api.list"
cc=${CC:-cc}
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT

# One C file that uses every recorded name the way a client does.
{
    for h in ggml.h ggml-alloc.h ggml-backend.h ggml-cpu.h ggml-opt.h gguf.h; do echo "#include \"$h\""; done
    awk -F '\t' '
        /^#/ { next }
        $1 == "F" { printf "%s (*chk_%s)(%s) = %s;\n", $3, $2, $4, $2; next }
        $1 == "S" { printf "size_t size_%s = sizeof(struct %s);\n", $2, $2; next }
        $1 == "N" { printf "size_t size_enum_%s = sizeof(enum %s);\n", $2, $2; next }
        $1 == "T" { printf "%s *ptr_%s;\n", $2, $2; next }
        $1 == "E" { printf "long const_%s = (long)(%s);\n", $2, $2; next }
    ' "$list"
} > "$work/api.c"

n_decl=$(grep -c '^[FSNTE]	' "$list")
[ "$n_decl" -gt 500 ]
ok $? "the recorded list holds ggml's API ($n_decl declarations)"
if "$cc" -std=c11 -fsyntax-only -fmax-errors=0 -Werror=incompatible-pointer-types -Wno-deprecated-declarations \
     -I"$srcdir/include" "$work/api.c" 2> "$work/errors"; then
    ok 0 "ggmlc's headers declare all $n_decl of them with ggml's prototypes"
else
    # each error with the declaration it comes from
    grep -E '^[^:]*api\.c:[0-9]+:[0-9]+: error' "$work/errors" | head -80 | while IFS=: read -r _ line _ msg; do
        echo "# $(sed -n "${line}p" "$work/api.c" | cut -c1-160)"
        echo "#  ->$msg"
    done
    ok 1 "ggmlc's headers declare all $n_decl of them with ggml's prototypes ($(grep -c error "$work/errors") errors)"
fi
tap_done
