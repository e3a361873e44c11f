/*
 * comm-mpi.c - libggmlc-mpi: the MPI transport of data-parallel training (ggmlc-dp.h), one
 * communicator member per process of MPI_COMM_WORLD.  A library of its own, so that libggmlc
 * never depends on libmpi: programs that train over MPI link -lggmlc-mpi.
 *
 * Each all-reduce is a reduction to rank 0 followed by a broadcast of rank 0's result, so that
 * every rank gets the same bits (MPI's allreduce may associate the sums differently on different
 * ranks, and replicas would drift apart).  Both are non-blocking calls polled against the
 * communicator's timeout: past it, the job ends (MPI_Abort) with a message naming the rank,
 * since an MPI collective left half done cannot be taken back.  A rank that dies is noticed by
 * mpirun, which ends the job; the timeout covers a rank that hangs.
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ggmlc-dp.h"

struct mpi_member {
    bool initialized_here;
    int rank;
};

static void end_job(const struct mpi_member *m, const char *why) {
    fprintf(stderr, "ggmlc: MPI rank %d: %s; ending the job\n", m->rank, why);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Poll a request until it completes or the deadline passes (then the job ends). */
static void wait_bounded(const struct mpi_member *m, MPI_Request *req, double timeout_s,
                         const char *what) {
    const double start = MPI_Wtime(), deadline = start + timeout_s;
    int done = 0;
    while (!done) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) break;
        if (MPI_Wtime() > deadline) {
            char why[160];
            snprintf(why, sizeof why, "%s did not complete within %.1f s (a rank hangs or is gone)",
                     what, timeout_s);
            end_job(m, why);
        }
        /* MPI progresses a non-blocking collective only inside MPI_Test: poll at once for 2 ms,
         * then every 20 us, leaving the cores to the backward pass of the other layers */
        if (MPI_Wtime() - start > 0.002) nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

static enum ggmlc_status mpi_allreduce(void *impl, float *data, size_t n, enum ggmlc_reduce_op op,
                                       double timeout_s) {
    const struct mpi_member *m = impl;
    const MPI_Op mop = op == GGMLC_REDUCE_MAX ? MPI_MAX : MPI_SUM;
    for (size_t off = 0; off < n;) {
        const int count = n - off > (size_t)INT_MAX ? INT_MAX : (int)(n - off);
        MPI_Request req;
        void *send = m->rank == 0 ? MPI_IN_PLACE : (void *)(data + off);
        if (MPI_Ireduce(send, data + off, count, MPI_FLOAT, mop, 0, MPI_COMM_WORLD, &req) !=
            MPI_SUCCESS)
            return ggmlc_set_error(GGMLC_ERR_BACKEND, "MPI_Ireduce failed");
        wait_bounded(m, &req, timeout_s, "a reduction");
        if (MPI_Ibcast(data + off, count, MPI_FLOAT, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
            return ggmlc_set_error(GGMLC_ERR_BACKEND, "MPI_Ibcast failed");
        wait_bounded(m, &req, timeout_s, "a broadcast");
        off += (size_t)count;
    }
    return GGMLC_OK;
}

static void mpi_abort(void *impl, const char *why) { end_job(impl, why); }

static void mpi_free(void *impl) {
    struct mpi_member *m = impl;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (m->initialized_here && !finalized) MPI_Finalize();
    free(m);
}

static const struct ggmlc_comm_ops mpi_ops = {"mpi", mpi_allreduce, mpi_abort, mpi_free};

/* Replicas reduce from a worker thread and from their own thread, one at a time: SERIALIZED. */
ggmlc_comm *ggmlc_comm_mpi(int *argc, char ***argv) {
    struct mpi_member *m = calloc(1, sizeof *m);
    if (!m) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_comm_mpi: out of memory");
        return NULL;
    }
    int initialized = 0, provided = 0, size = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
            free(m);
            ggmlc_set_error(GGMLC_ERR_BACKEND, "ggmlc_comm_mpi: MPI does not start");
            return NULL;
        }
        m->initialized_here = true;
    } else {
        MPI_Query_thread(&provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_SERIALIZED) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED,
                        "ggmlc_comm_mpi: this MPI gives thread level %d, data-parallel training "
                        "needs MPI_THREAD_SERIALIZED (%d)",
                        provided, MPI_THREAD_SERIALIZED);
        mpi_free(m);
        return NULL;
    }
    ggmlc_comm *c = ggmlc_comm_new(&mpi_ops, m, m->rank, size);
    if (!c) mpi_free(m);
    return c;
}
