# dp-faults.sh - shell helpers that the data-parallel TAP scripts source to break a rank on purpose.

# rank_fault_script FILE SIGNAL: writes FILE, a wrapper for mpirun to start each rank through;
# it sends SIGNAL (KILL: the rank dies, STOP: it hangs) to MPI rank 1 three seconds after it starts.
rank_fault_script() {
    cat >"$1" <<SH
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 3; kill -$2 \$\$) & fi
exec "\$@"
SH
    chmod +x "$1"
}

# run_timed COMMAND...: runs COMMAND, leaving its exit status in $st and its wall time in
# seconds in $took.
run_timed() {
    _start=$(date +%s)
    "$@"
    st=$?
    took=$(($(date +%s) - _start))
}
