#!/bin/sh
# test-shipped-lib.sh - the libggmlc that `make install` ships carries no test hooks
# (core/fault-inject.h): no fault-injection functions, no --wrap'd allocators, no
# GGMLC_FAULT_ALLOC reader; the test build of the library (tests/hooks/) carries them all,
# under the same soname, so that a test loading a plugin keeps one core (TAP).

: "${GGMLC_BUILDDIR:?run through make check}"
shipped="$GGMLC_BUILDDIR/.libs/libggmlc.so"
hooks="$GGMLC_BUILDDIR/tests/hooks/.libs/libggmlc.so"
for tool in nm objdump; do
    command -v $tool >/dev/null 2>&1 || { echo "1..0 # SKIP $tool (binutils) not found"; exit 0; }
done

n=0
failed=0
ok() { # ok STATUS "description"
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
# Names defined only by core/fault-inject.c, and the names --wrap links against.
hook_names='ggmlc_fault_fail_alloc_at|ggmlc_fault_alloc_count|ggmlc_fault_triggered|ggmlc_fault_simulate_secure_mode|__wrap_|__real_'
exported() { nm -D --defined-only "$1" 2>/dev/null | grep -E " ggmlc_fault_| __wrap_"; }   # FILE
symbols() { { nm "$1" 2>/dev/null; nm -D "$1" 2>/dev/null; } | grep -E " ($hook_names)"; } # FILE
soname() { objdump -p "$1" | awk '$1 == "SONAME" { print $2 }'; }                         # FILE

[ -f "$shipped" ] && [ -f "$hooks" ]
ok $? "both libraries are built: $shipped and $hooks"

found=$(exported "$shipped")
[ -z "$found" ]
ok $? "the shipped libggmlc exports no ggmlc_fault_* and no __wrap_* function"
[ -n "$found" ] && echo "$found" | sed 's/^/# /'
found=$(symbols "$shipped")
[ -z "$found" ]
ok $? "the shipped libggmlc defines and references none of the hooks' symbols (symbol table included)"
[ -n "$found" ] && echo "$found" | sed 's/^/# /'
nm -D --undefined-only "$shipped" | grep -Eq ' malloc(@|$)'
ok $? "the shipped libggmlc calls the C library's malloc directly"
! grep -aq GGMLC_FAULT_ALLOC "$shipped"
ok $? "the shipped libggmlc does not read GGMLC_FAULT_ALLOC"

# Controls: the checks above see the hooks where they are.
exported "$hooks" | grep -q ' ggmlc_fault_fail_alloc_at' && exported "$hooks" | grep -q ' ggmlc_fault_simulate_secure_mode'
ok $? "control: the test build exports the fault-injection and secure-mode functions"
nm "$hooks" | grep -q ' __wrap_malloc' && nm -D --undefined-only "$hooks" | grep -Eq ' malloc(@|$)' \
    && grep -aq GGMLC_FAULT_ALLOC "$hooks"
ok $? "control: the test build wraps malloc and reads GGMLC_FAULT_ALLOC"

[ "$(soname "$shipped")" = libggmlc.so.0 ] && [ "$(soname "$hooks")" = libggmlc.so.0 ]
ok $? "both have the soname libggmlc.so.0 (a plugin's DT_NEEDED binds to whichever is loaded)"

echo "1..$n"
exit $failed
