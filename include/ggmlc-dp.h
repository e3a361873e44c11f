/*
 * ggmlc-dp.h - data-parallel training: replicas of a model on several devices of one process
 * (one thread per device, running at the same time) and over processes and machines (MPI),
 * with gradients averaged by an all-reduce after each backward pass.
 *
 * A communicator (ggmlc_comm) joins the replicas: each replica holds its own member, of rank
 * 0..size-1.  In one process ggmlc_comm_threads makes the members of a group of threads; over
 * MPI, libggmlc-mpi (built with configure --with-mpi) makes one member per process
 * (ggmlc_comm_mpi); a thread group may sit on top of another communicator (several devices in
 * each MPI process): its ranks then count over all processes.  Any other transport plugs in
 * through struct ggmlc_comm_ops.
 *
 * The model API trains replicas with ggmlc_model_fit_dp:
 *
 *     ggmlc_model *r[2] = {model_on("CPU"), model_on("Vulkan0")};   // same layers, compiled
 *     struct ggmlc_dp_options dp = ggmlc_dp_defaults();
 *     ggmlc_model_fit_dp(r, 2, NULL, &dp, x, x_len, y, y_len, n, &fit_options, &history);
 *
 * Every step splits the global batch (fit_options.batch_size samples) across all replicas in
 * proportion to their weights; each replica computes its gradients, the all-reduce sums them
 * weighted by each replica's share of the batch, and every replica applies the same optimizer
 * step to the same weights: the result is single-device training on the whole batch, up to the
 * order of floating-point sums (batch normalisation and dropout excepted: their statistics and
 * masks are per replica).
 *
 * Eager training loops call ggmlc_dp_allreduce_tensors (or _floats) on their gradients between
 * the backward pass and the optimizer step.
 *
 * Failures never hang: every collective call waits at most the communicator's timeout; a
 * replica that fails aborts the communicator, and the others' calls then fail with its message.
 */
#ifndef GGMLC_DP_H
#define GGMLC_DP_H

#include "ggmlc-nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggmlc_comm ggmlc_comm;

enum ggmlc_reduce_op { GGMLC_REDUCE_SUM, GGMLC_REDUCE_MAX };

/* A transport: what a communicator asks of it.  allreduce combines n floats of data elementwise
 * over all members, leaving the same result in every member's data (identical bits on every
 * member, so that replicas stay identical), waiting at most timeout_s seconds; abort makes the
 * other members' pending and later calls fail (or, over MPI, ends the job); free releases impl. */
struct ggmlc_comm_ops {
    const char *name; /* "threads", "mpi" */
    enum ggmlc_status (*allreduce)(void *impl, float *data, size_t n, enum ggmlc_reduce_op op,
                                   double timeout_s);
    void (*abort)(void *impl, const char *why);
    void (*free)(void *impl);
};

/* A member of rank `rank` among `size` over a transport; the communicator owns impl. */
GGML_API ggmlc_comm *ggmlc_comm_new(const struct ggmlc_comm_ops *ops, void *impl, int rank,
                                    int size);
/* n members joining n threads of this process, written to members[0..n-1]; each thread uses its
 * own member.  With outer (may be NULL) the group spans processes: member 0 reduces the group's
 * sum over outer, and ranks run over all of them (outer's rank * n + member); every process
 * must then have the same n.  The members own nothing of outer: free it after them. */
GGML_API enum ggmlc_status ggmlc_comm_threads(int n, ggmlc_comm *outer, ggmlc_comm **members);
/* Rank of the member and the number of members (all processes). */
GGML_API int ggmlc_comm_rank(const ggmlc_comm *comm);
GGML_API int ggmlc_comm_size(const ggmlc_comm *comm);
/* The longest a collective call may wait for the other members (default 120 s, or
 * $GGMLC_DP_TIMEOUT in seconds); beyond it the call fails with GGMLC_ERR_BACKEND. */
GGML_API void ggmlc_comm_set_timeout(ggmlc_comm *comm, double seconds);
GGML_API double ggmlc_comm_timeout(const ggmlc_comm *comm);
/* Elementwise sum or maximum of n floats over all members, in place. */
GGML_API enum ggmlc_status ggmlc_comm_allreduce(ggmlc_comm *comm, float *data, size_t n,
                                                enum ggmlc_reduce_op op);
/* Give up on the group (a failed device): the others' collective calls fail with why. */
GGML_API void ggmlc_comm_abort(ggmlc_comm *comm, const char *why);
GGML_API void ggmlc_comm_free(ggmlc_comm *comm);

/* One member per process of MPI_COMM_WORLD, from libggmlc-mpi (link -lggmlc-mpi; present when
 * ggmlc was configured with MPI).  Initialises MPI (argc, argv may be NULL) unless the program
 * did; freeing the communicator finalises what it initialised.  Collective calls poll with the
 * timeout, and past it, or on abort, end the whole job (MPI_Abort) with the message, since MPI
 * cannot recover a collective left half done.  NULL (error set) when MPI does not start. */
GGML_API ggmlc_comm *ggmlc_comm_mpi(int *argc, char ***argv);
/* Whether this process was started by an MPI launcher (mpirun sets its environment). */
GGML_API bool ggmlc_comm_mpi_launched(void);

/* ------------------------------------------------------ gradients */

/* Replace each of the n float32 tensors (on any backend) by the sum over all members of
 * scale * tensor: scale = 1 / size averages equal shares; a member that computed its gradient
 * on k of a batch's B samples passes k / B.  The tensors are packed, in the order given, into
 * buckets of bucket_bytes (0: 4 MiB) reduced one after another; every member must pass tensors
 * of the same shapes in the same order. */
GGML_API enum ggmlc_status ggmlc_dp_allreduce_tensors(ggmlc_comm *comm,
                                                      struct ggml_tensor *const *tensors, int n,
                                                      float scale, size_t bucket_bytes);
/* The same on host buffers: bufs[i] holds lens[i] floats. */
GGML_API enum ggmlc_status ggmlc_dp_allreduce_floats(ggmlc_comm *comm, float *const *bufs,
                                                     const size_t *lens, int n, float scale);

/* ------------------------------------------------------ model API */

struct ggmlc_dp_options {
    /* Relative speed of each of this process's replicas (n_replicas entries): replica r gets
     * weight[r] / (sum over all replicas of all processes) of each batch.  NULL: measured
     * when measure is set, else equal shares. */
    const float *weights;
    /* Measure the weights first: a few timed forward passes on each replica (warmup_batches,
     * default 3), weight = 1 / time. */
    bool measure;
    int warmup_batches;
    /* Gradients are reduced in buckets of this many bytes (0: 4 MiB), each sent as soon as the
     * backward pass has produced all of its gradients, while it goes on with the others. */
    size_t bucket_bytes;
    /* Collective timeout in seconds (0: the communicator's). */
    double timeout_s;
    /* CPU threads per replica on the CPU (0: the machine's cores divided among the CPU
     * replicas of all the job's processes on it, as mpirun's environment counts them). */
    int cpu_threads;
};

/* No weights (equal shares), no measuring, 4 MiB buckets. */
GGML_API struct ggmlc_dp_options ggmlc_dp_defaults(void);

/* Train n_replicas replicas of one model, one thread each, as ggmlc_model_fit trains one: the
 * replicas are models with the same layers compiled with the same options (each on its own
 * device: compile option `backend`).  Replica 0 of rank 0's weights, optimizer state, step
 * count and learning rate are copied to all others first; replicas whose models differ
 * (parameter names or shapes) are refused with GGMLC_ERR_INVALID_ARG on every rank.
 * outer (NULL: this process alone) joins other processes, each calling this with its own
 * replicas (the same number in each) and the same data, all of it: each epoch's permutation comes
 * from the compile seed and the epoch number alone, so the sharding is deterministic and a
 * checkpoint resumes on any number of replicas.  Global replica 0 alone prints progress
 * (fo->verbose), runs the callbacks (on its model; a stop or a learning rate they set goes to
 * all replicas) and receives the history; batch callbacks are not called.  Validation data
 * are split across the replicas too.  A global batch whose samples cannot give every replica
 * one (the last, smaller batch of an epoch) is left out.  After the call all replicas hold
 * the same weights. */
GGML_API enum ggmlc_status ggmlc_model_fit_dp(ggmlc_model *const *replicas, int n_replicas,
                                              ggmlc_comm *outer, const struct ggmlc_dp_options *dp,
                                              const float *x, size_t x_len, const float *y,
                                              size_t y_len, int64_t n,
                                              const struct ggmlc_fit_options *fo,
                                              ggmlc_history **history);

/* What the calling thread's last ggmlc_model_fit_dp measured on this process's replica 0, per
 * step: the time its gradient all-reduce calls took (in the worker thread, partly hidden behind
 * the backward pass; it includes waiting for slower replicas), and the time the step itself lost
 * to data parallelism (copying and scaling gradients, waiting for the sums after the backward
 * pass, writing them back).  For benchmarks. */
struct ggmlc_dp_stats {
    double allreduce_us, overhead_us;
    int64_t steps;
};
GGML_API struct ggmlc_dp_stats ggmlc_dp_last_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_DP_H */
