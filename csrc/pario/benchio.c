/* benchio mode: EPCC's benchio (the ARCHER parallel-write white paper). Every rank holds an
 * n1 x n2 x n3 block of float64 with a halo of depth 1, the ranks form a 3-D Cartesian grid,
 * and the blocks are written as one global array (shared), one file per rank, one file per
 * node, or gathered to rank 0 (serial). The halo is never written: the put describes the
 * interior block of the halo array (mem_shape/mem_start), as a model would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "support.h"

#define VERIFY_SLAB_BYTES (16u << 20)

/* The last run's geometry, for benchio_params (the same on every rank). */
static struct {
    int dims[3];
    uint64_t local[3], global[3];
    int strong;
} geo;

/* What every element of the global array holds: its C-order index. */
static inline double value_at(uint64_t i, uint64_t j, uint64_t k)
{
    return (double)((i * geo.global[1] + j) * geo.global[2] + k);
}

void benchio_params(struct jsonl *j, const struct pario_job *job)
{
    (void)job;
    jsonl_begin_array(j, "decomposition");
    for (int d = 0; d < 3; d++)
        jsonl_u64(j, NULL, (uint64_t)geo.dims[d]);
    jsonl_end(j);
    jsonl_begin_array(j, "local");
    for (int d = 0; d < 3; d++)
        jsonl_u64(j, NULL, geo.local[d]);
    jsonl_end(j);
    jsonl_begin_array(j, "global");
    for (int d = 0; d < 3; d++)
        jsonl_u64(j, NULL, geo.global[d]);
    jsonl_end(j);
    jsonl_str(j, "scaling", geo.strong ? "strong" : "weak");
    jsonl_u64(j, "halo", 1);
    jsonl_str(j, "dtype", "float64");
}

void benchio_metrics(struct jsonl *j, const struct pario_job *job)
{
    (void)j;
    (void)job;
}

/* Everything one run needs, set up before the clock starts. */
struct run {
    const struct pario_job *job;
    int rank, size, coords[3];
    uint64_t n[3], off[3];           /* local size, global offset of the block */
    double *halo;                    /* (n1+2)(n2+2)(n3+2) */
    double *global;                  /* serial: the gathered array on rank 0 */
    MPI_Comm node;                   /* file-per-node */
    int node_rank, node_size, node_index;
    MPI_Comm fcomm;                  /* the file's communicator; MPI_COMM_NULL: this rank opens no file */
    int root;                        /* this rank is rank 0 of fcomm */
    char path[PARIO_PATH_LEN];
    int fdims;                       /* 3, or 4 with file-per-node's rank dimension */
    uint64_t fshape[4], start[4], count[4], mshape[4], mstart[4];
    int collective;                  /* the put's collective flag */
};

/* long: the process grid and halo array, then one switch case per strategy setting the same fields of struct run */
static int setup(struct run *r, struct pario_outcome *out)
{
    const struct pario_job *job = r->job;
    const struct pario_options *opt = job->opt;
    int periods[3] = {0, 0, 0};
    MPI_Comm cart;

    MPI_Comm_rank(job->world, &r->rank);
    MPI_Comm_size(job->world, &r->size);
    memset(geo.dims, 0, sizeof geo.dims);
    MPI_Dims_create(r->size, 3, geo.dims);
    geo.strong = opt->global[0] != 0;
    for (int d = 0; d < 3; d++) {
        if (geo.strong) {
            geo.global[d] = opt->global[d];
            geo.local[d] = opt->global[d] / (uint64_t)geo.dims[d];
        } else {
            geo.local[d] = opt->local[d];
            geo.global[d] = opt->local[d] * (uint64_t)geo.dims[d];
        }
    }
    if (geo.strong && (opt->global[0] % geo.dims[0] || opt->global[1] % geo.dims[1] || opt->global[2] % geo.dims[2])) {
        outcome_fail(out, "--global %llu,%llu,%llu is not divisible by the process grid %d x %d x %d of %d ranks",
                     (unsigned long long)opt->global[0], (unsigned long long)opt->global[1],
                     (unsigned long long)opt->global[2], geo.dims[0], geo.dims[1], geo.dims[2], r->size);
        return -1;
    }
    /* reorder = 0: the Cartesian rank is the world rank, so the serial gather and the node
     * slots can use world ranks. */
    MPI_Cart_create(job->world, 3, geo.dims, periods, 0, &cart);
    MPI_Cart_coords(cart, r->rank, 3, r->coords);
    MPI_Comm_free(&cart);
    for (int d = 0; d < 3; d++) {
        r->n[d] = geo.local[d];
        r->off[d] = (uint64_t)r->coords[d] * geo.local[d];
    }

    uint64_t h1 = r->n[0] + 2, h2 = r->n[1] + 2, h3 = r->n[2] + 2;
    r->halo = malloc(sizeof(double) * h1 * h2 * h3);
    if (!r->halo) {
        outcome_fail(out, "cannot allocate the %llux%llux%llu local array", (unsigned long long)h1,
                     (unsigned long long)h2, (unsigned long long)h3);
        return -1;
    }
    for (uint64_t a = 0; a < h1; a++)
        for (uint64_t b = 0; b < h2; b++)
            for (uint64_t c = 0; c < h3; c++) {
                int inside = a >= 1 && a <= r->n[0] && b >= 1 && b <= r->n[1] && c >= 1 && c <= r->n[2];
                r->halo[(a * h2 + b) * h3 + c] =
                    inside ? value_at(r->off[0] + a - 1, r->off[1] + b - 1, r->off[2] + c - 1) : -1.0;
            }

    const char *bname = job->backend->name, *ext = pario_extension(job->backend);
    const char *dir = opt->dir;
    r->fcomm = MPI_COMM_NULL;
    r->fdims = 3;
    for (int d = 0; d < 3; d++) {
        r->count[d] = r->n[d];
        r->mshape[d] = r->n[d] + 2;
        r->mstart[d] = 1;
        r->start[d] = 0;
        r->fshape[d] = r->n[d];
    }
    switch (job->strategy) {
    case STRATEGY_SHARED:
        r->fcomm = job->world;
        r->root = r->rank == 0;
        for (int d = 0; d < 3; d++) {
            r->fshape[d] = geo.global[d];
            r->start[d] = r->off[d];
        }
        r->collective = !opt->independent;
        out->collective = r->collective && r->size > 1;
        snprintf(r->path, sizeof r->path, "%s/benchio-%s-shared.%s", dir, bname, ext);
        break;
    case STRATEGY_FILE_PER_PROCESS:
        r->fcomm = MPI_COMM_SELF;
        r->root = 1;
        r->collective = 1;   /* over one rank: no difference, and no extra handle */
        out->collective = 0;
        snprintf(r->path, sizeof r->path, "%s/benchio-%s-fpp-r%06d.%s", dir, bname, r->rank, ext);
        break;
    case STRATEGY_FILE_PER_NODE: {
        int nnodes;
        if (pario_node_comm(job->world, &r->node, &r->node_index, &nnodes) != 0) {
            outcome_fail(out, "cannot split the ranks by node");
            return -1;
        }
        MPI_Comm_rank(r->node, &r->node_rank);
        MPI_Comm_size(r->node, &r->node_size);
        r->fcomm = r->node;
        r->root = r->node_rank == 0;
        /* [ranks on the node, n1, n2, n3], this rank's slot first */
        r->fdims = 4;
        for (int d = 3; d > 0; d--) {
            r->fshape[d] = r->n[d - 1];
            r->count[d] = r->n[d - 1];
            r->start[d] = 0;
            r->mshape[d] = r->n[d - 1] + 2;
            r->mstart[d] = 1;
        }
        r->fshape[0] = (uint64_t)r->node_size;
        r->start[0] = (uint64_t)r->node_rank;
        r->count[0] = 1;
        r->mshape[0] = 1;
        r->mstart[0] = 0;
        r->collective = !opt->independent;
        out->collective = r->collective && r->node_size > 1;
        snprintf(r->path, sizeof r->path, "%s/benchio-%s-fpn-node%03d.%s", dir, bname, r->node_index, ext);
        break;
    }
    case STRATEGY_SERIAL:
        out->collective = 0;
        if (r->rank == 0) {
            r->fcomm = MPI_COMM_SELF;
            r->root = 1;
            r->collective = 1;
            uint64_t total = geo.global[0] * geo.global[1] * geo.global[2];
            if (total > (uint64_t)2147483647)
                outcome_fail(out, "serial: the global array has more than 2^31-1 elements (MPI_Gatherv displacements)");
            else if (!(r->global = malloc(sizeof(double) * total)))
                outcome_fail(out, "serial: cannot allocate the %llu-element global array on rank 0",
                             (unsigned long long)total);
            for (int d = 0; d < 3; d++)
                r->fshape[d] = r->count[d] = geo.global[d];
            snprintf(r->path, sizeof r->path, "%s/benchio-%s-serial.%s", dir, bname, ext);
        }
        break;
    default:
        outcome_fail(out, "unknown strategy");
        return -1;
    }
    return out->err[0] ? -1 : 0;
}

/* The gather of the serial strategy: each rank sends the interior of its halo array, rank 0
 * receives every block straight into its place of the global array (a subarray type resized
 * to one element, so Gatherv's displacements are element offsets). */
static void gather(struct run *r)
{
    int sizes[3], subs[3], starts[3] = {1, 1, 1};
    MPI_Datatype send, block, recv = MPI_DATATYPE_NULL;
    int *counts = NULL, *displs = NULL;
    for (int d = 0; d < 3; d++) {
        sizes[d] = (int)r->n[d] + 2;
        subs[d] = (int)r->n[d];
    }
    MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &send);
    MPI_Type_commit(&send);
    if (r->rank == 0) {
        int gs[3], zero[3] = {0, 0, 0}, c[3];
        for (int d = 0; d < 3; d++)
            gs[d] = (int)geo.global[d];
        MPI_Type_create_subarray(3, gs, subs, zero, MPI_ORDER_C, MPI_DOUBLE, &block);
        MPI_Type_create_resized(block, 0, sizeof(double), &recv);
        MPI_Type_commit(&recv);
        MPI_Type_free(&block);
        counts = malloc(sizeof(int) * (size_t)r->size);
        displs = malloc(sizeof(int) * (size_t)r->size);
        for (int p = 0; p < r->size; p++) {
            /* reorder = 0 in setup: the Cartesian coordinates of world rank p */
            c[2] = p % geo.dims[2];
            c[1] = (p / geo.dims[2]) % geo.dims[1];
            c[0] = p / (geo.dims[2] * geo.dims[1]);
            counts[p] = 1;
            displs[p] = (int)(((uint64_t)c[0] * r->n[0] * geo.global[1] + (uint64_t)c[1] * r->n[1]) * geo.global[2]
                              + (uint64_t)c[2] * r->n[2]);
        }
    }
    MPI_Gatherv(r->halo, 1, send, r->global, counts, displs, recv, 0, r->job->world);
    MPI_Type_free(&send);
    if (r->rank == 0)
        MPI_Type_free(&recv);
    free(counts);
    free(displs);
}

/* Re-open the file and compare this rank's block (serial: rank 0 the whole array, in slabs)
 * with the formula. Outside the timed region. */
static void verify(struct run *r, struct pario_outcome *out)
{
    struct pario_file f = {.backend = r->job->backend, .comm = r->fcomm, .info = r->job->hints, .fill = 0};
    const struct pario_backend *b = r->job->backend;
    uint64_t mism = 0;
    if (b->open(&f, r->path) != 0) {
        outcome_fail(out, "verify: %s", f.err);
        return;
    }
    uint64_t start[4] = {0}, count[4] = {0};
    memcpy(start, r->start, sizeof start);
    memcpy(count, r->count, sizeof count);
    int serial = r->job->strategy == STRATEGY_SERIAL;
    uint64_t plane = r->n[1] * r->n[2];
    uint64_t planes = serial ? geo.global[0] : r->n[0];
    if (serial) {
        plane = geo.global[1] * geo.global[2];
        uint64_t per = VERIFY_SLAB_BYTES / (plane * sizeof(double));
        count[0] = per < 1 ? 1 : per > planes ? planes : per;
    }
    double *buf = malloc(sizeof(double) * plane * (serial ? count[0] : planes));
    if (!buf) {
        outcome_fail(out, "verify: out of memory");
        b->close(&f);
        return;
    }
    /* Every rank of the file verifies and serial's rank 0 is alone on its file, so each get can be
     * collective when asked (--verify-access collective): the same number of gets everywhere. */
    int fail = 0, coll = r->job->opt->verify_collective;
    if (!serial) {
        /* one get of the block; element (a,b,c) of it is global (off+a, off+b, off+c) */
        if (b->get(&f, 0, start, count, buf, coll) != 0) {
            outcome_fail(out, "verify: %s", f.err);
            fail = 1;
        } else {
            for (uint64_t a = 0; a < r->n[0]; a++)
                for (uint64_t bb = 0; bb < r->n[1]; bb++)
                    for (uint64_t c = 0; c < r->n[2]; c++)
                        if (buf[(a * r->n[1] + bb) * r->n[2] + c] != value_at(r->off[0] + a, r->off[1] + bb, r->off[2] + c))
                            mism++;
        }
    } else {
        uint64_t per = count[0];
        for (uint64_t i0 = 0; i0 < planes && !fail; i0 += per) {
            start[0] = i0;
            count[0] = i0 + per > planes ? planes - i0 : per;
            if (b->get(&f, 0, start, count, buf, coll) != 0) {
                outcome_fail(out, "verify: %s", f.err);
                fail = 1;
                break;
            }
            for (uint64_t a = 0; a < count[0]; a++)
                for (uint64_t j = 0; j < geo.global[1]; j++)
                    for (uint64_t k = 0; k < geo.global[2]; k++)
                        if (buf[(a * geo.global[1] + j) * geo.global[2] + k] != value_at(i0 + a, j, k))
                            mism++;
        }
    }
    free(buf);
    if (b->close(&f) != 0 && !fail) {
        outcome_fail(out, "verify: %s", f.err);
        fail = 1;
    }
    if (!fail) {
        out->mismatches += mism;
        out->verified = mism == 0;
    }
}

/* long: the timed region (gather, create, define, write, fsync, close) is one block with no barrier inside, where
 * every rank still makes the same collective calls after a failure; kept whole so its start and end show */
int benchio_run(const struct pario_job *job, struct pario_outcome *out)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.job = job;
    r.node = MPI_COMM_NULL;
    const struct pario_backend *b = job->backend;

    setup(&r, out);
    if (agree_failed(job->world, out->err))
        goto done;

    struct pario_file f = {.backend = b, .comm = r.fcomm, .info = job->hints, .fill = 0};
    uint64_t elements = r.count[0] * r.count[1] * r.count[2] * (r.fdims == 4 ? r.count[3] : 1);
    struct pario_memory mem = {r.halo, r.mshape, r.mstart};
    if (job->strategy == STRATEGY_SERIAL)
        mem = (struct pario_memory){r.global, NULL, NULL};
    if (r.fcomm != MPI_COMM_NULL && r.root)
        outcome_add_path(out, r.path);

    MPI_Barrier(job->world);
    /* ---- timed: no barrier from here to the end of close ---- */
    if (job->strategy == STRATEGY_SERIAL) {
        phase_begin(out, PHASE_GATHER);
        gather(&r);
        phase_end(out, PHASE_GATHER);
    }
    if (r.fcomm != MPI_COMM_NULL) {
        static const char *const names[4] = {"x", "y", "z", NULL};
        int dimids[4], varid, ok;
        phase_begin(out, PHASE_OPEN);
        ok = b->create(&f, r.path) == 0;
        phase_end(out, PHASE_OPEN);
        if (!ok) {
            outcome_fail(out, "%s", f.err);
            goto untimed;
        }
        phase_begin(out, PHASE_DEFINE);
        if (r.fdims == 4)
            ok = b->def_dim(&f, "rank", r.fshape[0], &dimids[0]) == 0;
        for (int d = r.fdims - 3; ok && d < r.fdims; d++)
            ok = b->def_dim(&f, names[d - (r.fdims - 3)], r.fshape[d], &dimids[d]) == 0;
        struct pario_var_layout layout = {.kind = PARIO_CHUNK_DEFAULT};
        ok = ok && b->def_var(&f, "data", PARIO_DOUBLE, r.fdims, dimids, &layout, &varid) == 0;
        ok = ok && b->enddef(&f) == 0;
        phase_end(out, PHASE_DEFINE);
        if (ok) {
            /* between the phases: what the library made of the hints (a local query) */
            if (out->hints_used == MPI_INFO_NULL && b->hints(&f, &out->hints_used) != 0)
                out->hints_used = MPI_INFO_NULL;
            f.err[0] = '\0';
            phase_begin(out, PHASE_WRITE);
            ok = b->put(&f, varid, r.start, r.count, &mem, r.collective) == 0;
            phase_end(out, PHASE_WRITE);
            out->writer = 1;
            out->bytes += elements * sizeof(double);
        }
        if (!ok)
            outcome_fail(out, "%s", f.err);
        /* After a failed put the other ranks still sync and close: keep the collectives matched. */
        if (job->opt->fsync) {
            phase_begin(out, PHASE_FSYNC);
            if (b->sync(&f) != 0)
                outcome_fail(out, "%s", f.err);
            phase_end(out, PHASE_FSYNC);
        }
        phase_begin(out, PHASE_CLOSE);
        if (b->close(&f) != 0)
            outcome_fail(out, "%s", f.err);
        phase_end(out, PHASE_CLOSE);
    }
untimed:
    /* ---- untimed ---- */
    if (agree_failed(job->world, out->err))
        goto done;
    if (job->opt->verify && r.fcomm != MPI_COMM_NULL)
        verify(&r, out);

done:
    free(r.halo);
    free(r.global);
    if (r.node != MPI_COMM_NULL)
        MPI_Comm_free(&r.node);
    return out->err[0] ? -1 : 0;
}
