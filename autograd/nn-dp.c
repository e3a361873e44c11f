/*
 * nn-dp.c - data-parallel eager training: the gradients of a parameter list averaged over the
 * members of a communicator (ggmlc-dp.h), between ga_backward and the optimizer step, as
 * torch.nn.parallel.DistributedDataParallel does after backward.  Pending work is computed
 * first, so every gradient has its storage on its device; the all-reduce then rewrites that
 * storage in place (ggmlc_dp_allreduce_tensors, bucketed).
 */
#include <stdlib.h>

#include "ggmlc.h"
#include "ggmlc-dp.h"
#include "autograd-impl.h"
#include "nn-impl.h"

enum ggmlc_status ga_dp_allreduce_grads(ggmlc_comm *comm, ga_param_list params, float scale) {
    if (!comm || params.n < 0 || (params.n > 0 && !params.params))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_dp_allreduce_grads: NULL communicator or invalid list");
    struct ggml_tensor **grads = calloc((size_t)params.n + 1, sizeof *grads);
    if (!grads) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_dp_allreduce_grads: out of memory");
    enum ggmlc_status st = GGMLC_OK;
    for (int k = 0; k < params.n && st == GGMLC_OK; k++) {
        const ga_tensor *g = ggmlc__ga_check(params.params[k], "ga_dp_allreduce_grads")
                                 ? ga_grad(params.params[k])
                                 : NULL;
        /* only this replica's devices: other threads' replicas are busy with theirs */
        if (g && (g->pending_index >= 0 || !g->store)) st = ga_synchronize(g->dev);
        if (st != GGMLC_OK) break;
        if (!g || !g->store) { /* every member must send the same list: a gap is an error */
            st = ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                 "ga_dp_allreduce_grads: parameter %d (%s) has no gradient", k,
                                 params.names ? params.names[k] : "unnamed");
        } else {
            ggmlc__ga_host_forget((ga_tensor *)g); /* rewritten in place below */
            grads[k] = g->store;
        }
    }
    if (st == GGMLC_OK) st = ggmlc_dp_allreduce_tensors(comm, grads, params.n, scale, 0);
    free(grads);
    return st;
}
