# taplib.sh - TAP helpers for the shell tests; source it with
#   . "$GGMLC_TEST_DATA/taplib.sh"
# then call ok STATUS "description" per test and tap_done at the end.

n=0
failed=0
ok() { # ok STATUS "description"
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
# The plan, and the exit status: 1 when a test failed.
tap_done() {
    echo "1..$n"
    exit $failed
}
