/* Model-output mode: an emulator of how ocean models write their history and restart files,
 * after the MOM5/FMS parallel-I/O study (io_layout, I/O domains, chunking) and the ROMS I/O
 * report (small variables written by every rank, selective writing of records). MODEL.md
 * describes the mode for users; this comment is the reference for the values.
 *
 * Grid nx x ny x nz (x fastest), decomposed over px x py ranks; rank r owns tile
 * (ix, iy) = (r % px, r / px), x in [ix*nx/px, (ix+1)*nx/px), y likewise. Tiles live in memory
 * with a halo of MODEL_HALO points on each horizontal side (never written).
 *
 * Field values (the Python tests recompute them with numpy; only +, -, *, / on doubles, in
 * this order of evaluation, then a cast to float32; x, y, z are global 0-based indices):
 *
 *   rate_k  = 0.5 / (double)(1 << (2*k))              (0.5, 0.125, 0.03125, ... per record)
 *   g       = 1 + 0.001 * ((x*7 + y*13 + z*3) % 97)   (integer arithmetic inside the %)
 *   3-D diagnostic k (0-based), record t:
 *       base  = 10*k + 0.01*x + 0.02*y + 0.5*z
 *       value = (float)(base + rate_k * t * g)
 *   2-D diagnostic k, record t: the same with z = 0 and
 *       base  = 100 + 10*k + 0.01*x + 0.02*y
 *   restart k (float64, no time): (double)(1000*(k+1) + x + nx*(y + ny*z))
 *   time[t] = (double)t
 *   small variables: x[i] = 1000*i, y[j] = 1000*j (global indices), z[k] = -5 - 10*k,
 *       Cs_r[k] = -1 + (k + 0.5)/nz, Cs_w[k] = -1 + k/nz (float64), dt = 300, rho0 = 1025,
 *       theta_s = 7, Tcline = 50 (float64 scalars), ntimes = nt (int scalar)
 *   written_<name>[t] = 1 if record t of 3-D variable <name> was written, else 0 (--select)
 *
 * a + b * c + d is evaluated as in C and numpy: left to right, products first, no fused
 * multiply-add (contraction is switched off below).
 */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "support.h"

#define MODEL_HALO 2
#define MODEL_NSMALL 10
#define MODEL_NAME_LEN 32
/* Fields of every written record are computed before the timed region when they fit in
 * this many bytes per rank; otherwise each record is computed just before it is written
 * (between timed phases). */
#define MODEL_PRECOMPUTE_BUDGET ((size_t)256 << 20)
#define HALO_FILL (-9999.0)

/* ------------------------------------------------------------------ values */

static double rate_of(int k)
{
    double r = 0.5;
    for (int i = 0; i < k; i++)
        r = r / 4.0;                 /* 0.5 / (1 << 2k), exactly, for any k */
    return r;
}

static float val3d(int k, double rate, uint64_t t, uint64_t x, uint64_t y, uint64_t z)
{
    double g = 1.0 + 0.001 * (double)((x * 7 + y * 13 + z * 3) % 97);
    double base = 10.0 * k + 0.01 * (double)x + 0.02 * (double)y + 0.5 * (double)z;
    return (float)(base + rate * (double)t * g);
}

static float val2d(int k, double rate, uint64_t t, uint64_t x, uint64_t y)
{
    double g = 1.0 + 0.001 * (double)((x * 7 + y * 13) % 97);
    double base = 100.0 + 10.0 * k + 0.01 * (double)x + 0.02 * (double)y;
    return (float)(base + rate * (double)t * g);
}

static double valrs(int k, uint64_t nx, uint64_t ny, uint64_t x, uint64_t y, uint64_t z)
{
    return (double)(1000 * (uint64_t)(k + 1) + x + nx * (y + ny * z));
}

/* ------------------------------------------------------------------ geometry */

struct geom {
    int nranks, rank;
    uint64_t nx, ny, nz, nt;
    int px, py, iox, ioy;
    int ix, iy;                      /* this rank's tile */
    uint64_t tnx, tny, tx0, ty0;     /* tile size and origin */
    uint64_t hnx, hny;               /* tile with halo */
    int dtx, dty;                    /* tiles per I/O domain */
    int ndom, dom;
    uint64_t dnx, dny, dx0, dy0;     /* this rank's I/O domain */
    int gather;                      /* domains hold more than one tile */
    int root;                        /* this rank is its domain's root: a writer */
    uint64_t fnx, fny, fx0, fy0;     /* the grid of this rank's file */
    uint64_t bnx, bny, bx0, by0;     /* the block this rank writes (its domain, or its tile) */
};

static const char *const small_names[MODEL_NSMALL] = {"x", "y", "z", "Cs_r", "Cs_w",
                                                      "dt", "rho0", "theta_s", "Tcline", "ntimes"};

static void name3d(int k, char *buf)
{
    static const char *const n[4] = {"temp", "salt", "u", "v"};
    if (k < 4)
        snprintf(buf, MODEL_NAME_LEN, "%s", n[k]);
    else
        snprintf(buf, MODEL_NAME_LEN, "diag3d_%d", k + 1);
}

static void name2d(int k, char *buf)
{
    static const char *const n[3] = {"zeta", "sst", "ssh"};
    if (k < 3)
        snprintf(buf, MODEL_NAME_LEN, "%s", n[k]);
    else
        snprintf(buf, MODEL_NAME_LEN, "diag2d_%d", k + 1);
}

/* The chunk lengths asked for with --chunk CKX,CKY. main may store them as {ckx, cky} or as
 * the full {1, nz, cky, ckx}; both are accepted. */
static void chunk_xy(const struct pario_options *opt, uint64_t *ckx, uint64_t *cky)
{
    const uint64_t *c = opt->chunking.chunk;
    if (c[3] != 0) {
        *cky = c[2];
        *ckx = c[3];
    } else {
        *ckx = c[0];
        *cky = c[1];
    }
}

/* Resolve decomposition and I/O layout; one-line error in err. Local (no communication). */
/* long: a straight run of checks, each with its own one-line error, then the geometry fields in dependency order */
static int resolve(const struct pario_job *job, struct geom *g, char *err)
{
    const struct pario_options *opt = job->opt;
    memset(g, 0, sizeof *g);
    MPI_Comm_size(job->world, &g->nranks);
    MPI_Comm_rank(job->world, &g->rank);
    g->nx = opt->grid[0];
    g->ny = opt->grid[1];
    g->nz = opt->grid[2];
    g->nt = opt->nt;
    if (job->strategy == STRATEGY_FILE_PER_NODE) {
        snprintf(err, PARIO_ERR_LEN, "model mode writes shared, file-per-process (one file per I/O domain) or serial; use --io-layout");
        return -1;
    }
    if (g->nx == 0 || g->ny == 0 || g->nz == 0 || g->nt == 0) {
        snprintf(err, PARIO_ERR_LEN, "model mode: --grid and --nt must be positive (grid %llu,%llu,%llu, nt %llu)",
                 (unsigned long long)g->nx, (unsigned long long)g->ny, (unsigned long long)g->nz, (unsigned long long)g->nt);
        return -1;
    }
    if (opt->n3d < 0 || opt->n2d < 0 || opt->nrestart < 0 ||
        MODEL_NSMALL + 1 + 2 * opt->n3d + opt->n2d + opt->nrestart > PARIO_MAX_VARS) {
        snprintf(err, PARIO_ERR_LEN, "model mode: --vars %d,%d,%d: at most %d variables in all (with %d small, time and written_ flags)",
                 opt->n3d, opt->n2d, opt->nrestart, PARIO_MAX_VARS, MODEL_NSMALL);
        return -1;
    }
    if (opt->layout[0] > 0 && opt->layout[1] > 0) {
        g->px = opt->layout[0];
        g->py = opt->layout[1];
        if ((long long)g->px * g->py != g->nranks) {
            snprintf(err, PARIO_ERR_LEN, "model mode: --decomposition %d,%d needs %d ranks, the run has %d",
                     g->px, g->py, g->px * g->py, g->nranks);
            return -1;
        }
    } else {
        int dims[2] = {0, 0};
        MPI_Dims_create(g->nranks, 2, dims);
        g->px = dims[0];
        g->py = dims[1];
    }
    if (g->nx % (uint64_t)g->px || g->ny % (uint64_t)g->py) {
        snprintf(err, PARIO_ERR_LEN, "model mode: grid %llu x %llu is not divisible by the decomposition %d x %d",
                 (unsigned long long)g->nx, (unsigned long long)g->ny, g->px, g->py);
        return -1;
    }
    if (job->strategy == STRATEGY_SERIAL) {
        g->iox = g->ioy = 1;
    } else if (opt->io_layout[0] > 0 && opt->io_layout[1] > 0) {
        g->iox = opt->io_layout[0];
        g->ioy = opt->io_layout[1];
    } else {
        g->iox = g->px;
        g->ioy = g->py;
    }
    if (g->px % g->iox || g->py % g->ioy) {
        snprintf(err, PARIO_ERR_LEN, "model mode: --io-layout %d,%d must divide the decomposition %d,%d",
                 g->iox, g->ioy, g->px, g->py);
        return -1;
    }
    g->ix = g->rank % g->px;
    g->iy = g->rank / g->px;
    g->tnx = g->nx / g->px;
    g->tny = g->ny / g->py;
    g->tx0 = g->ix * g->tnx;
    g->ty0 = g->iy * g->tny;
    g->hnx = g->tnx + 2 * MODEL_HALO;
    g->hny = g->tny + 2 * MODEL_HALO;
    g->dtx = g->px / g->iox;
    g->dty = g->py / g->ioy;
    g->ndom = g->iox * g->ioy;
    int dxi = g->ix / g->dtx, dyi = g->iy / g->dty;
    g->dom = dxi + g->iox * dyi;
    g->dnx = g->nx / g->iox;
    g->dny = g->ny / g->ioy;
    g->dx0 = dxi * g->dnx;
    g->dy0 = dyi * g->dny;
    g->gather = g->dtx * g->dty > 1;
    g->root = g->ix % g->dtx == 0 && g->iy % g->dty == 0;
    if (job->strategy == STRATEGY_FILE_PER_PROCESS) {
        g->fnx = g->dnx, g->fny = g->dny, g->fx0 = g->dx0, g->fy0 = g->dy0;
    } else {
        g->fnx = g->nx, g->fny = g->ny, g->fx0 = 0, g->fy0 = 0;
    }
    if (g->gather) {
        g->bnx = g->dnx, g->bny = g->dny, g->bx0 = g->dx0, g->by0 = g->dy0;
    } else {
        g->bnx = g->tnx, g->bny = g->tny, g->bx0 = g->tx0, g->by0 = g->ty0;
    }
    if (g->hnx * g->hny * g->nz > (uint64_t)INT32_MAX || g->hny > (uint64_t)INT32_MAX) {
        snprintf(err, PARIO_ERR_LEN, "model mode: a tile of %llu x %llu x %llu points is too large for MPI counts",
                 (unsigned long long)g->tnx, (unsigned long long)g->tny, (unsigned long long)g->nz);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ state kept for metrics */

static struct {
    int valid;
    double threshold;
    uint64_t nt;
    int n3d;
    uint64_t candidates, skipped, bytes_saved;
    double decide_s;
    char (*names)[MODEL_NAME_LEN];
    double *rms;                     /* [k*nt + t], NaN for t = 0 */
    unsigned char *written;          /* [k*nt + t] */
    double *maxerr;                  /* [k] */
    uint64_t small_bytes, records_written;
    int precomputed;
} M;

static void metrics_reset(void)
{
    free(M.names);
    free(M.rms);
    free(M.written);
    free(M.maxerr);
    memset(&M, 0, sizeof M);
}

/* ------------------------------------------------------------------ the run */

struct ctx {
    const struct pario_job *job;
    const struct pario_options *opt;
    struct pario_outcome *out;
    struct geom g;
    struct pario_file f;
    int have_file;
    int filerank;                    /* rank in the file's communicator (writers) */
    char err[PARIO_ERR_LEN];
    MPI_Comm domcomm, filecomm;
    int dimid_t, dimid_z, dimid_y, dimid_x;
    int vid_small[MODEL_NSMALL], vid_time;
    int *vid_flag, *vid3d, *vid2d, *vidrs;
    unsigned char *written;          /* [k*nt + t] (all 1 without --select) */
    uint64_t small_bytes, bytes;
    /* tile fields: precomputed [k*nt + t] (NULL when the record is not written) or scratch */
    float **f3d, **f2d;
    double **frs;
    float *scr3d, *scr2d;
    double *scrrs;
    /* gather */
    MPI_Datatype send3f, send2f, send3d;
    void *recvbuf, *dombuf;
    char path[PARIO_PATH_LEN];
};

static void fail(struct ctx *c, const char *msg)
{
    if (!c->err[0])
        snprintf(c->err, PARIO_ERR_LEN, "%s", msg);
}

static void fail_file(struct ctx *c)
{
    fail(c, c->f.err[0] ? c->f.err : "backend call failed");
}

static void fill_tile3d(float *dst, const struct geom *g, int k, uint64_t t)
{
    double rate = rate_of(k);
    for (uint64_t z = 0; z < g->nz; z++)
        for (uint64_t j = 0; j < g->hny; j++) {
            float *row = dst + (z * g->hny + j) * g->hnx;
            for (uint64_t i = 0; i < g->hnx; i++) {
                if (j < MODEL_HALO || j >= g->tny + MODEL_HALO || i < MODEL_HALO || i >= g->tnx + MODEL_HALO)
                    row[i] = (float)HALO_FILL;
                else
                    row[i] = val3d(k, rate, t, g->tx0 + i - MODEL_HALO, g->ty0 + j - MODEL_HALO, z);
            }
        }
}

static void fill_tile2d(float *dst, const struct geom *g, int k, uint64_t t)
{
    double rate = rate_of(k);
    for (uint64_t j = 0; j < g->hny; j++) {
        float *row = dst + j * g->hnx;
        for (uint64_t i = 0; i < g->hnx; i++) {
            if (j < MODEL_HALO || j >= g->tny + MODEL_HALO || i < MODEL_HALO || i >= g->tnx + MODEL_HALO)
                row[i] = (float)HALO_FILL;
            else
                row[i] = val2d(k, rate, t, g->tx0 + i - MODEL_HALO, g->ty0 + j - MODEL_HALO);
        }
    }
}

static void fill_tilers(double *dst, const struct geom *g, int k)
{
    for (uint64_t z = 0; z < g->nz; z++)
        for (uint64_t j = 0; j < g->hny; j++) {
            double *row = dst + (z * g->hny + j) * g->hnx;
            for (uint64_t i = 0; i < g->hnx; i++) {
                if (j < MODEL_HALO || j >= g->tny + MODEL_HALO || i < MODEL_HALO || i >= g->tnx + MODEL_HALO)
                    row[i] = HALO_FILL;
                else
                    row[i] = valrs(k, g->nx, g->ny, g->tx0 + i - MODEL_HALO, g->ty0 + j - MODEL_HALO, z);
            }
        }
}

/* Selective writing (ROMS report): decide per 3-D variable and record whether the global RMS
 * change since the last written record reaches the threshold. Collective over world; runs
 * before the timed region (only the RMS computation and its reduction count as decide_s). */
static int select_records(struct ctx *c)
{
    const struct geom *g = &c->g;
    int n3d = c->opt->n3d;
    uint64_t nt = g->nt;
    double thr = c->opt->select_threshold;
    size_t n = (size_t)(g->tnx * g->tny * g->nz);
    double npts = (double)g->nx * (double)g->ny * (double)g->nz;
    float *cur = malloc(n * sizeof *cur), *last = malloc(n * sizeof *last);
    if (!cur || !last) {
        free(cur);
        free(last);
        fail(c, "model mode: out of memory for selective writing");
        return -1;
    }
    double decide = 0.0;
    for (int k = 0; k < n3d; k++) {
        double rate = rate_of(k);
        M.rms[(size_t)k * nt] = NAN;
        M.maxerr[k] = 0.0;
        for (uint64_t t = 0; t < nt; t++) {
            float *dst = t == 0 ? last : cur;
            size_t p = 0;
            for (uint64_t z = 0; z < g->nz; z++)
                for (uint64_t j = 0; j < g->tny; j++)
                    for (uint64_t i = 0; i < g->tnx; i++)
                        dst[p++] = val3d(k, rate, t, g->tx0 + i, g->ty0 + j, z);
            if (t == 0) {
                c->written[(size_t)k * nt] = 1;
                continue;
            }
            double t0 = MPI_Wtime();
            double s = 0.0;
            for (size_t q = 0; q < n; q++) {
                double d = (double)cur[q] - (double)last[q];
                s += d * d;
            }
            MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, c->job->world);
            double rms = sqrt(s / npts);
            int w = !(rms < thr);
            decide += MPI_Wtime() - t0;
            c->written[(size_t)k * nt + t] = (unsigned char)w;
            M.rms[(size_t)k * nt + t] = rms;
            if (w)
                memcpy(last, cur, n * sizeof *cur);
            /* The error a reader makes reconstructing record t by persistence (the last
             * written record, now in `last`), from the values. */
            double e = 0.0;
            for (size_t q = 0; q < n; q++) {
                double d = (double)cur[q] - (double)last[q];
                e += d * d;
            }
            MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_SUM, c->job->world);
            e = sqrt(e / npts);
            if (e > M.maxerr[k])
                M.maxerr[k] = e;
        }
    }
    free(cur);
    free(last);
    MPI_Allreduce(MPI_IN_PLACE, &decide, 1, MPI_DOUBLE, MPI_MAX, c->job->world);
    M.decide_s = decide;
    return 0;
}

/* Fields of the written records: computed up front when they fit the budget. */
static int prepare_fields(struct ctx *c)
{
    const struct geom *g = &c->g;
    const struct pario_options *opt = c->opt;
    uint64_t nt = g->nt;
    size_t e3 = (size_t)(g->hnx * g->hny * g->nz), e2 = (size_t)(g->hnx * g->hny);
    size_t need = 0;
    for (int k = 0; k < opt->n3d; k++)
        for (uint64_t t = 0; t < nt; t++)
            if (c->written[(size_t)k * nt + t])
                need += e3 * sizeof(float);
    need += (size_t)opt->n2d * nt * e2 * sizeof(float) + (size_t)opt->nrestart * e3 * sizeof(double);
    /* every rank takes the same decision */
    unsigned long long needmax = need;
    MPI_Allreduce(MPI_IN_PLACE, &needmax, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, c->job->world);
    int pre = needmax <= MODEL_PRECOMPUTE_BUDGET;
    c->f3d = calloc((size_t)opt->n3d * nt + 1, sizeof *c->f3d);
    c->f2d = calloc((size_t)opt->n2d * nt + 1, sizeof *c->f2d);
    c->frs = calloc((size_t)opt->nrestart + 1, sizeof *c->frs);
    if (!c->f3d || !c->f2d || !c->frs)
        goto oom;
    if (pre) {
        for (int k = 0; k < opt->n3d; k++)
            for (uint64_t t = 0; t < nt; t++)
                if (c->written[(size_t)k * nt + t]) {
                    float *p = malloc(e3 * sizeof *p);
                    if (!p)
                        goto oom;
                    fill_tile3d(p, g, k, t);
                    c->f3d[(size_t)k * nt + t] = p;
                }
        for (int k = 0; k < opt->n2d; k++)
            for (uint64_t t = 0; t < nt; t++) {
                float *p = malloc(e2 * sizeof *p);
                if (!p)
                    goto oom;
                fill_tile2d(p, g, k, t);
                c->f2d[(size_t)k * nt + t] = p;
            }
        for (int k = 0; k < opt->nrestart; k++) {
            double *p = malloc(e3 * sizeof *p);
            if (!p)
                goto oom;
            fill_tilers(p, g, k);
            c->frs[k] = p;
        }
    } else {
        c->scr3d = malloc(e3 * sizeof(float));
        c->scr2d = malloc(e2 * sizeof(float));
        c->scrrs = malloc(e3 * sizeof(double));
        if (!c->scr3d || !c->scr2d || !c->scrrs)
            goto oom;
    }
    M.precomputed = pre;
    return 0;
oom:
    fail(c, "model mode: out of memory for the fields");
    return -1;
}

static void free_fields(struct ctx *c)
{
    uint64_t nt = c->g.nt;
    if (c->f3d)
        for (size_t i = 0; i < (size_t)c->opt->n3d * nt; i++)
            free(c->f3d[i]);
    if (c->f2d)
        for (size_t i = 0; i < (size_t)c->opt->n2d * nt; i++)
            free(c->f2d[i]);
    if (c->frs)
        for (int i = 0; i < c->opt->nrestart; i++)
            free(c->frs[i]);
    free(c->f3d);
    free(c->f2d);
    free(c->frs);
    free(c->scr3d);
    free(c->scr2d);
    free(c->scrrs);
}

static const float *field3d(struct ctx *c, int k, uint64_t t)
{
    const float *p = c->f3d[(size_t)k * c->g.nt + t];
    if (p)
        return p;
    fill_tile3d(c->scr3d, &c->g, k, t);
    return c->scr3d;
}

static const float *field2d(struct ctx *c, int k, uint64_t t)
{
    const float *p = c->f2d[(size_t)k * c->g.nt + t];
    if (p)
        return p;
    fill_tile2d(c->scr2d, &c->g, k, t);
    return c->scr2d;
}

static const double *fieldrs(struct ctx *c, int k)
{
    if (c->frs[k])
        return c->frs[k];
    fill_tilers(c->scrrs, &c->g, k);
    return c->scrrs;
}

/* Gather the tiles of this rank's I/O domain into c->dombuf on the domain root (FMS's
 * mpp_gather onto the I/O PE): MPI_Gatherv of each tile's interior (a subarray datatype, so
 * the halo is skipped without a copy), then the root places the tiles in the domain array.
 * Timed as "gather" on every rank of the domain. */
static void gather_block(struct ctx *c, const void *src, int nlev, MPI_Datatype sendtype, size_t esize)
{
    const struct geom *g = &c->g;
    int ntiles = g->dtx * g->dty;
    size_t tile = (size_t)(g->tnx * g->tny) * nlev;
    int *counts = NULL, *displs = NULL;
    int droot = 0, drank;
    MPI_Comm_rank(c->domcomm, &drank);
    phase_begin(c->out, PHASE_GATHER);
    if (drank == droot) {
        counts = malloc(ntiles * sizeof *counts);
        displs = malloc(ntiles * sizeof *displs);
        for (int r = 0; r < ntiles; r++) {
            counts[r] = (int)tile;
            displs[r] = (int)(r * tile);
        }
    }
    MPI_Datatype etype = esize == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE;
    int rc = MPI_Gatherv(src, 1, sendtype, c->recvbuf, counts, displs, etype, droot, c->domcomm);
    if (rc != MPI_SUCCESS)
        fail(c, "model mode: MPI_Gatherv failed");
    if (drank == droot) {
        /* local tile r (ranks of the domain in world order) sits at (r % dtx, r / dtx) */
        const char *in = c->recvbuf;
        char *outp = c->dombuf;
        size_t row = (size_t)g->tnx * esize;
        for (int r = 0; r < ntiles; r++) {
            uint64_t lx = (uint64_t)(r % g->dtx) * g->tnx, ly = (uint64_t)(r / g->dtx) * g->tny;
            for (int z = 0; z < nlev; z++)
                for (uint64_t j = 0; j < g->tny; j++)
                    memcpy(outp + (((uint64_t)z * g->dny + ly + j) * g->dnx + lx) * esize,
                           in + ((size_t)r * tile + ((uint64_t)z * g->tny + j) * g->tnx) * esize, row);
        }
        free(counts);
        free(displs);
    }
    phase_end(c->out, PHASE_GATHER);
}

/* One timed put by this writer; errors are kept (first wins) and later puts still made, so
 * every rank keeps making the same collective calls. */
static void put(struct ctx *c, int varid, const uint64_t *start, const uint64_t *count,
                const struct pario_memory *mem, int collective, size_t esize, int ndims, int small)
{
    uint64_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= count[d];
    phase_begin(c->out, PHASE_WRITE);
    int rc = c->job->backend->put(&c->f, varid, start, count, mem, collective);
    phase_end(c->out, PHASE_WRITE);
    if (rc)
        fail_file(c);
    if (n > 0) {
        c->bytes += n * esize;
        c->out->writer = 1;
        if (small)
            c->small_bytes += n * esize;
    }
}

/* A small variable (or one record of time / written_ flags) of len elements (0-d: scalar).
 * Independent (--small independent, time-independent variables only): every writer puts the
 * whole of it (ROMS: same bytes at the same offsets from all ranks). Collective: one
 * collective put where only the file's rank 0 passes data and the others count zero; a 0-d
 * variable has no count to zero, so there every writer passes the (identical) value.
 * time and written_ flags are record variables, which netCDF-4/HDF5 can only extend
 * collectively: they are always written collectively, by every backend alike (ROMS's
 * duplicated independent writes concern the time-independent variables). */
static void put_small(struct ctx *c, int varid, int ndims, uint64_t start0, uint64_t len,
                      const void *buf, size_t esize, int collective)
{
    uint64_t start[1] = {start0}, count[1] = {len};
    if (collective && c->filerank != 0 && ndims > 0)
        count[0] = 0;
    struct pario_memory mem = {buf, NULL, NULL};
    put(c, varid, start, count, &mem, collective, esize, ndims, 1);
}

/* Independent puts of record t to a backend that can extend a record variable only
 * collectively (netCDF-4): one collective put of a single element (the first of the file
 * rank 0's block, the value it writes anyway) extends the variable first. Timed as write,
 * not counted in bytes. */
static void extend(struct ctx *c, int varid, const uint64_t *start, const uint64_t *count,
                   const struct pario_memory *mem, int ndims)
{
    const struct pario_backend *b = c->job->backend;
    /* hdf5.c documents the same limitation (H5Dset_extent is collective); it is named here in
     * case it does not set collective_extend. */
    if (!c->opt->independent || !(b->collective_extend || strcmp(b->name, "hdf5") == 0))
        return;
    uint64_t one[PARIO_MAX_DIMS];
    for (int d = 0; d < ndims; d++)
        one[d] = c->filerank == 0 && count[d] > 0 ? 1 : 0;
    phase_begin(c->out, PHASE_WRITE);
    int rc = b->put(&c->f, varid, start, one, mem, 1);
    phase_end(c->out, PHASE_WRITE);
    if (rc)
        fail_file(c);
}

static void small_values(const struct ctx *c, int s, double *d, int *iv, uint64_t *len)
{
    const struct geom *g = &c->g;
    *len = 0;
    switch (s) {
    case 0:
        *len = g->fnx;
        for (uint64_t i = 0; i < g->fnx; i++)
            d[i] = 1000.0 * (double)(g->fx0 + i);
        break;
    case 1:
        *len = g->fny;
        for (uint64_t j = 0; j < g->fny; j++)
            d[j] = 1000.0 * (double)(g->fy0 + j);
        break;
    case 2:
        *len = g->nz;
        for (uint64_t k = 0; k < g->nz; k++)
            d[k] = -5.0 - 10.0 * (double)k;
        break;
    case 3:
        *len = g->nz;
        for (uint64_t k = 0; k < g->nz; k++)
            d[k] = -1.0 + ((double)k + 0.5) / (double)g->nz;
        break;
    case 4:
        *len = g->nz;
        for (uint64_t k = 0; k < g->nz; k++)
            d[k] = -1.0 + (double)k / (double)g->nz;
        break;
    case 5: d[0] = 300.0; break;
    case 6: d[0] = 1025.0; break;
    case 7: d[0] = 7.0; break;
    case 8: d[0] = 50.0; break;
    default: *iv = (int)g->nt; break;
    }
}

static int define_file(struct ctx *c)
{
    const struct pario_backend *b = c->job->backend;
    const struct pario_options *opt = c->opt;
    const struct geom *g = &c->g;
    struct pario_file *f = &c->f;
    if (b->def_dim(f, "time", PARIO_UNLIMITED, &c->dimid_t) || b->def_dim(f, "z", g->nz, &c->dimid_z) ||
        b->def_dim(f, "y", g->fny, &c->dimid_y) || b->def_dim(f, "x", g->fnx, &c->dimid_x))
        return -1;
    struct pario_var_layout deflt;
    memset(&deflt, 0, sizeof deflt);
    for (int s = 0; s < MODEL_NSMALL; s++) {
        int dim = s == 0 ? c->dimid_x : s == 1 ? c->dimid_y : c->dimid_z;
        int nd = s < 5 ? 1 : 0;
        if (b->def_var(f, small_names[s], s == 9 ? PARIO_INT : PARIO_DOUBLE, nd, &dim, &deflt, &c->vid_small[s]))
            return -1;
    }
    if (b->def_var(f, "time", PARIO_DOUBLE, 1, &c->dimid_t, &deflt, &c->vid_time))
        return -1;
    char name[MODEL_NAME_LEN], fname[MODEL_NAME_LEN + 16];
    if (opt->select_threshold > 0)
        for (int k = 0; k < opt->n3d; k++) {
            name3d(k, name);
            snprintf(fname, sizeof fname, "written_%s", name);
            if (b->def_var(f, fname, PARIO_INT, 1, &c->dimid_t, &deflt, &c->vid_flag[k]))
                return -1;
        }
    /* the layout of the fields (--chunk) */
    struct pario_var_layout l3, l2, lr;
    memset(&l3, 0, sizeof l3);
    l3.kind = opt->chunking.kind;
    l2 = lr = l3;
    if (l3.kind == PARIO_CHUNK_GIVEN) {
        uint64_t ckx, cky;
        chunk_xy(opt, &ckx, &cky);
        if (ckx == 0 || ckx > g->fnx)
            ckx = g->fnx;
        if (cky == 0 || cky > g->fny)
            cky = g->fny;
        l3.chunk[0] = 1, l3.chunk[1] = g->nz, l3.chunk[2] = cky, l3.chunk[3] = ckx;
        l2.chunk[0] = 1, l2.chunk[1] = cky, l2.chunk[2] = ckx;
        lr.chunk[0] = g->nz, lr.chunk[1] = cky, lr.chunk[2] = ckx;
    }
    int d3[4] = {c->dimid_t, c->dimid_z, c->dimid_y, c->dimid_x};
    int d2[3] = {c->dimid_t, c->dimid_y, c->dimid_x};
    for (int k = 0; k < opt->n3d; k++) {
        name3d(k, name);
        if (b->def_var(f, name, PARIO_FLOAT, 4, d3, &l3, &c->vid3d[k]))
            return -1;
    }
    for (int k = 0; k < opt->n2d; k++) {
        name2d(k, name);
        if (b->def_var(f, name, PARIO_FLOAT, 3, d2, &l2, &c->vid2d[k]))
            return -1;
    }
    for (int k = 0; k < opt->nrestart; k++) {
        snprintf(name, sizeof name, "restart_%d", k + 1);
        if (b->def_var(f, name, PARIO_DOUBLE, 3, d3 + 1, &lr, &c->vidrs[k]))
            return -1;
    }
    return b->enddef(f);
}

/* The write phase: small variables, then record by record time, written_ flags, 3-D and 2-D
 * diagnostics, then the restart variables. Every rank takes part (gathers); writers put. */
/* long: the file's write order is what is measured: one block per kind of variable, in that order */
static void write_all(struct ctx *c)
{
    const struct pario_options *opt = c->opt;
    const struct geom *g = &c->g;
    uint64_t nt = g->nt;
    int writer = c->have_file;
    int coll = !opt->independent;
    size_t maxlen = g->fnx > g->fny ? g->fnx : g->fny;
    if (g->nz > maxlen)
        maxlen = g->nz;
    double *sbuf = malloc((maxlen + 1) * sizeof *sbuf);
    if (!sbuf) {
        fail(c, "model mode: out of memory");
        return;
    }
    if (writer)
        for (int s = 0; s < MODEL_NSMALL; s++) {
            int iv = 0;
            uint64_t len;
            small_values(c, s, sbuf, &iv, &len);
            put_small(c, c->vid_small[s], s < 5 ? 1 : 0, 0, s < 5 ? len : 1,
                      s == 9 ? (const void *)&iv : (const void *)sbuf, s == 9 ? sizeof(int) : sizeof(double),
                      !opt->small_independent);
        }

    /* where the writer's block goes in its file, and what memory holds it */
    uint64_t yoff = g->by0 - g->fy0, xoff = g->bx0 - g->fx0;
    uint64_t mshape3[4] = {1, g->nz, g->hny, g->hnx}, mstart3[4] = {0, 0, MODEL_HALO, MODEL_HALO};
    uint64_t mshape2[3] = {1, g->hny, g->hnx}, mstart2[3] = {0, MODEL_HALO, MODEL_HALO};
    for (uint64_t t = 0; t < nt; t++) {
        if (writer) {
            double tv = (double)t;
            put_small(c, c->vid_time, 1, t, 1, &tv, sizeof(double), 1);
            if (opt->select_threshold > 0)
                for (int k = 0; k < opt->n3d; k++) {
                    int w = c->written[(size_t)k * nt + t];
                    put_small(c, c->vid_flag[k], 1, t, 1, &w, sizeof(int), 1);
                }
        }
        for (int k = 0; k < opt->n3d; k++) {
            if (!c->written[(size_t)k * nt + t])
                continue;
            const float *src = field3d(c, k, t);
            uint64_t start[4] = {t, 0, yoff, xoff}, count[4] = {1, g->nz, g->bny, g->bnx};
            struct pario_memory mem = {src, mshape3, mstart3};
            if (g->gather) {
                gather_block(c, src, (int)g->nz, c->send3f, sizeof(float));
                mem.buf = c->dombuf, mem.mem_shape = NULL, mem.mem_start = NULL;
            }
            if (writer) {
                extend(c, c->vid3d[k], start, count, &mem, 4);
                put(c, c->vid3d[k], start, count, &mem, coll, sizeof(float), 4, 0);
            }
        }
        for (int k = 0; k < opt->n2d; k++) {
            const float *src = field2d(c, k, t);
            uint64_t start[3] = {t, yoff, xoff}, count[3] = {1, g->bny, g->bnx};
            struct pario_memory mem = {src, mshape2, mstart2};
            if (g->gather) {
                gather_block(c, src, 1, c->send2f, sizeof(float));
                mem.buf = c->dombuf, mem.mem_shape = NULL, mem.mem_start = NULL;
            }
            if (writer) {
                extend(c, c->vid2d[k], start, count, &mem, 3);
                put(c, c->vid2d[k], start, count, &mem, coll, sizeof(float), 3, 0);
            }
        }
    }
    for (int k = 0; k < opt->nrestart; k++) {
        const double *src = fieldrs(c, k);
        uint64_t start[3] = {0, yoff, xoff}, count[3] = {g->nz, g->bny, g->bnx};
        struct pario_memory mem = {src, mshape3 + 1, mstart3 + 1};
        if (g->gather) {
            gather_block(c, src, (int)g->nz, c->send3d, sizeof(double));
            mem.buf = c->dombuf, mem.mem_shape = NULL, mem.mem_start = NULL;
        }
        if (writer)
            put(c, c->vidrs[k], start, count, &mem, coll, sizeof(double), 3, 0);
    }
    free(sbuf);
}

/* Verification (after close, untimed): every writer re-opens its file and reads back what it
 * wrote, comparing with the formula exactly. Returns mismatches; -1 on a backend error. */
/* long: one block per kind of variable in write_all's order, sharing the read buffers and the one error exit */
static long long verify_file(struct ctx *c)
{
    const struct pario_backend *b = c->job->backend;
    const struct pario_options *opt = c->opt;
    const struct geom *g = &c->g;
    uint64_t nt = g->nt;
    struct pario_file rf;
    memset(&rf, 0, sizeof rf);
    rf.backend = b;
    rf.comm = c->filecomm;
    rf.info = c->job->hints;
    rf.fill = 0;
    if (b->open(&rf, c->path)) {
        fail(c, rf.err);
        return -1;
    }
    long long bad = 0;
    int rc = 0;
    size_t blk = (size_t)(g->bnx * g->bny * g->nz);
    size_t maxlen = g->fnx > g->fny ? g->fnx : g->fny;
    if (g->nz > maxlen)
        maxlen = g->nz;
    if (nt > maxlen)
        maxlen = nt;
    double *dbuf = malloc((blk > maxlen ? blk : maxlen) * sizeof(double) + sizeof(double));
    double *expect = malloc((maxlen + 1) * sizeof(double));
    float *fbuf = malloc(blk * sizeof(float) + sizeof(float));
    int *ibuf = malloc((nt + 1) * sizeof(int));
    if (!dbuf || !expect || !fbuf || !ibuf) {
        fail(c, "model mode: out of memory for verification");
        rc = -1;
        goto done;
    }
    /* small variables */
    for (int s = 0; s < MODEL_NSMALL && rc == 0; s++) {
        int iv = 0, got = 0;
        uint64_t len, start[1] = {0}, count[1];
        small_values(c, s, expect, &iv, &len);
        if (s == 9) {
            if ((rc = b->get(&rf, c->vid_small[s], start, count, &got, 0)) == 0 && got != iv)
                bad++;
            continue;
        }
        count[0] = s < 5 ? len : 1;
        if ((rc = b->get(&rf, c->vid_small[s], start, count, dbuf, 0)) == 0)
            for (uint64_t i = 0; i < count[0]; i++)
                bad += dbuf[i] != expect[i];
    }
    /* time and written_ flags */
    if (rc == 0) {
        uint64_t start[1] = {0}, count[1] = {nt};
        if ((rc = b->get(&rf, c->vid_time, start, count, dbuf, 0)) == 0)
            for (uint64_t t = 0; t < nt; t++)
                bad += dbuf[t] != (double)t;
        if (opt->select_threshold > 0)
            for (int k = 0; k < opt->n3d && rc == 0; k++)
                if ((rc = b->get(&rf, c->vid_flag[k], start, count, ibuf, 0)) == 0)
                    for (uint64_t t = 0; t < nt; t++)
                        bad += ibuf[t] != (int)c->written[(size_t)k * nt + t];
    }
    /* this writer's block of every written record */
    uint64_t yoff = g->by0 - g->fy0, xoff = g->bx0 - g->fx0;
    for (int k = 0; k < opt->n3d && rc == 0; k++) {
        double rate = rate_of(k);
        for (uint64_t t = 0; t < nt && rc == 0; t++) {
            if (!c->written[(size_t)k * nt + t])
                continue;
            uint64_t start[4] = {t, 0, yoff, xoff}, count[4] = {1, g->nz, g->bny, g->bnx};
            if ((rc = b->get(&rf, c->vid3d[k], start, count, fbuf, 0)))
                break;
            size_t p = 0;
            for (uint64_t z = 0; z < g->nz; z++)
                for (uint64_t j = 0; j < g->bny; j++)
                    for (uint64_t i = 0; i < g->bnx; i++)
                        bad += fbuf[p++] != val3d(k, rate, t, g->bx0 + i, g->by0 + j, z);
        }
    }
    for (int k = 0; k < opt->n2d && rc == 0; k++) {
        double rate = rate_of(k);
        for (uint64_t t = 0; t < nt && rc == 0; t++) {
            uint64_t start[3] = {t, yoff, xoff}, count[3] = {1, g->bny, g->bnx};
            if ((rc = b->get(&rf, c->vid2d[k], start, count, fbuf, 0)))
                break;
            size_t p = 0;
            for (uint64_t j = 0; j < g->bny; j++)
                for (uint64_t i = 0; i < g->bnx; i++)
                    bad += fbuf[p++] != val2d(k, rate, t, g->bx0 + i, g->by0 + j);
        }
    }
    for (int k = 0; k < opt->nrestart && rc == 0; k++) {
        uint64_t start[3] = {0, yoff, xoff}, count[3] = {g->nz, g->bny, g->bnx};
        if ((rc = b->get(&rf, c->vidrs[k], start, count, dbuf, 0)))
            break;
        size_t p = 0;
        for (uint64_t z = 0; z < g->nz; z++)
            for (uint64_t j = 0; j < g->bny; j++)
                for (uint64_t i = 0; i < g->bnx; i++)
                    bad += dbuf[p++] != valrs(k, g->nx, g->ny, g->bx0 + i, g->by0 + j, z);
    }
    if (rc)
        fail(c, rf.err);
done:
    if (b->close(&rf) && rc == 0) {
        fail(c, rf.err);
        rc = -1;
    }
    free(dbuf);
    free(expect);
    free(fbuf);
    free(ibuf);
    return rc ? -1 : bad;
}

static const char *strategy_tag(enum pario_strategy s)
{
    return s == STRATEGY_SERIAL ? "serial" : s == STRATEGY_FILE_PER_PROCESS ? "fpp" : "shared";
}

/* long: the rank-wide sequence (set-up, timed create/define/write/fsync/close, verify, metrics) whose
 * agree_failed() exits jump to the close and cleanup labels at the same step on every rank */
int model_run(const struct pario_job *job, struct pario_outcome *out)
{
    const struct pario_options *opt = job->opt;
    struct ctx C;
    struct ctx *c = &C;
    memset(c, 0, sizeof *c);
    c->job = job;
    c->opt = opt;
    c->out = out;
    c->domcomm = c->filecomm = MPI_COMM_NULL;
    c->send3f = c->send2f = c->send3d = MPI_DATATYPE_NULL;
    struct geom *g = &c->g;
    int ret = -1;

    if (resolve(job, g, c->err)) {       /* same verdict on every rank */
        outcome_fail(out, "%s", c->err);
        return -1;
    }
    uint64_t nt = g->nt;
    int n3d = opt->n3d;

    /* metrics state of this repetition */
    metrics_reset();
    M.threshold = opt->select_threshold;
    M.nt = nt;
    M.n3d = n3d;
    M.names = calloc((size_t)n3d + 1, sizeof *M.names);
    M.rms = calloc((size_t)n3d * nt + 1, sizeof *M.rms);
    M.written = calloc((size_t)n3d * nt + 1, 1);
    M.maxerr = calloc((size_t)n3d + 1, sizeof *M.maxerr);
    c->written = M.written;
    c->vid_flag = calloc((size_t)n3d + 1, sizeof(int));
    c->vid3d = calloc((size_t)n3d + 1, sizeof(int));
    c->vid2d = calloc((size_t)opt->n2d + 1, sizeof(int));
    c->vidrs = calloc((size_t)opt->nrestart + 1, sizeof(int));
    if (!M.names || !M.rms || !M.written || !M.maxerr || !c->vid_flag || !c->vid3d || !c->vid2d || !c->vidrs)
        fail(c, "model mode: out of memory");
    else {
        for (int k = 0; k < n3d; k++)
            name3d(k, M.names[k]);
        memset(M.written, 1, (size_t)n3d * nt);
    }
    if (!c->err[0] && opt->select_threshold > 0)
        select_records(c);
    if (!c->err[0])
        prepare_fields(c);

    /* communicators and gather buffers */
    if (g->gather) {
        MPI_Comm_split(job->world, g->dom, g->rank, &c->domcomm);
        int sizes[3] = {(int)g->nz, (int)g->hny, (int)g->hnx}, subs[3] = {(int)g->nz, (int)g->tny, (int)g->tnx};
        int starts[3] = {0, MODEL_HALO, MODEL_HALO};
        MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_FLOAT, &c->send3f);
        MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &c->send3d);
        MPI_Type_create_subarray(2, sizes + 1, subs + 1, starts + 1, MPI_ORDER_C, MPI_FLOAT, &c->send2f);
        MPI_Type_commit(&c->send3f);
        MPI_Type_commit(&c->send3d);
        MPI_Type_commit(&c->send2f);
        if (g->root) {
            size_t dbytes = (size_t)(g->dnx * g->dny * g->nz) * sizeof(double);
            c->recvbuf = malloc(dbytes);
            c->dombuf = malloc(dbytes);
            if (!c->recvbuf || !c->dombuf)
                fail(c, "model mode: out of memory for the I/O domain buffers");
            else if (g->dnx * g->dny * g->nz > (uint64_t)INT32_MAX)
                fail(c, "model mode: an I/O domain is too large for MPI_Gatherv counts");
        }
    }
    if (job->strategy == STRATEGY_SHARED) {
        MPI_Comm_split(job->world, g->root ? 0 : MPI_UNDEFINED, g->rank, &c->filecomm);
    } else if (g->root) {
        MPI_Comm_dup(MPI_COMM_SELF, &c->filecomm);
    }
    if (c->filecomm != MPI_COMM_NULL)
        MPI_Comm_rank(c->filecomm, &c->filerank);
    if (job->strategy == STRATEGY_FILE_PER_PROCESS)
        snprintf(c->path, sizeof c->path, "%s/model-%s-dom%04d.%s", opt->dir, job->backend->name, g->dom,
                 pario_extension(job->backend));
    else
        snprintf(c->path, sizeof c->path, "%s/model-%s-%s.%s", opt->dir, job->backend->name,
                 strategy_tag(job->strategy), pario_extension(job->backend));
    /* the big arrays go through collective calls over more than one rank only in a shared
     * file written by several I/O domain roots */
    out->collective = job->strategy == STRATEGY_SHARED && g->ndom > 1 && !opt->independent;
    c->f.backend = job->backend;
    c->f.comm = c->filecomm;
    c->f.info = job->hints;
    c->f.fill = 0;
    if (agree_failed(job->world, c->err))
        goto cleanup;

    /* ---- timed region ---- */
    MPI_Barrier(job->world);
    const struct pario_backend *b = job->backend;
    if (c->filecomm != MPI_COMM_NULL) {
        phase_begin(out, PHASE_OPEN);
        int rc = b->create(&c->f, c->path);
        phase_end(out, PHASE_OPEN);
        if (rc)
            fail_file(c);
        else {
            c->have_file = 1;
            if (c->filerank == 0)
                outcome_add_path(out, c->path);
        }
    }
    if (agree_failed(job->world, c->err))
        goto close;
    if (c->have_file) {
        phase_begin(out, PHASE_DEFINE);
        int rc = define_file(c);
        phase_end(out, PHASE_DEFINE);
        if (rc)
            fail_file(c);
    }
    if (agree_failed(job->world, c->err))
        goto close;
    write_all(c);
    if (c->have_file && opt->fsync) {
        phase_begin(out, PHASE_FSYNC);
        int rc = b->sync(&c->f);
        phase_end(out, PHASE_FSYNC);
        if (rc)
            fail_file(c);
    }
    if (c->have_file && out->hints_used == MPI_INFO_NULL) {
        MPI_Info used = MPI_INFO_NULL;
        if (b->hints(&c->f, &used) == 0)    /* untimed; a backend that cannot say is no failure */
            out->hints_used = used;
        c->f.err[0] = '\0';
    }
close:
    if (c->have_file) {
        phase_begin(out, PHASE_CLOSE);
        int rc = b->close(&c->f);
        phase_end(out, PHASE_CLOSE);
        if (rc)
            fail_file(c);
    }
    /* ---- end of timed region ---- */
    if (agree_failed(job->world, c->err))
        goto cleanup;

    out->bytes += c->bytes;
    out->verified = -1;
    if (opt->verify) {
        if (c->have_file) {            /* ranks without a file have nothing to check */
            long long bad = verify_file(c);
            if (bad > 0)
                out->mismatches += (uint64_t)bad;
            out->verified = bad == 0 ? 1 : 0;
        }
        if (agree_failed(job->world, c->err))
            goto cleanup;
    }

    /* metrics shared by all ranks */
    {
        unsigned long long sb = c->small_bytes;
        MPI_Allreduce(MPI_IN_PLACE, &sb, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, job->world);
        M.small_bytes = sb;
        uint64_t skipped = 0;
        for (size_t i = 0; i < (size_t)n3d * nt; i++)
            skipped += !M.written[i];
        M.candidates = (uint64_t)n3d * nt;
        M.skipped = skipped;
        M.bytes_saved = skipped * g->nx * g->ny * g->nz * sizeof(float);
        M.records_written = M.candidates - skipped + (uint64_t)opt->n2d * nt;
        M.valid = 1;
    }
    ret = 0;

cleanup:
    if (c->err[0]) {
        outcome_fail(out, "%s", c->err);
        ret = -1;
    }
    free_fields(c);
    free(c->recvbuf);
    free(c->dombuf);
    free(c->vid_flag);
    free(c->vid3d);
    free(c->vid2d);
    free(c->vidrs);
    if (c->send3f != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->send3f);
    if (c->send3d != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->send3d);
    if (c->send2f != MPI_DATATYPE_NULL)
        MPI_Type_free(&c->send2f);
    if (c->domcomm != MPI_COMM_NULL)
        MPI_Comm_free(&c->domcomm);
    if (c->filecomm != MPI_COMM_NULL)
        MPI_Comm_free(&c->filecomm);
    return ret;
}

/* ------------------------------------------------------------------ record members */

void model_params(struct jsonl *j, const struct pario_job *job)
{
    const struct pario_options *opt = job->opt;
    struct geom g;
    char err[PARIO_ERR_LEN];
    int ok = resolve(job, &g, err) == 0;
    jsonl_begin_array(j, "grid");
    for (int d = 0; d < 3; d++)
        jsonl_u64(j, NULL, opt->grid[d]);
    jsonl_end(j);
    jsonl_u64(j, "nt", opt->nt);
    if (ok) {
        jsonl_begin_array(j, "decomposition");
        jsonl_u64(j, NULL, (uint64_t)g.px);
        jsonl_u64(j, NULL, (uint64_t)g.py);
        jsonl_end(j);
        jsonl_begin_array(j, "io_layout");
        jsonl_u64(j, NULL, (uint64_t)g.iox);
        jsonl_u64(j, NULL, (uint64_t)g.ioy);
        jsonl_end(j);
    } else {
        jsonl_null(j, "decomposition");
        jsonl_null(j, "io_layout");
    }
    jsonl_str(j, "small_access", opt->small_independent ? "independent" : "collective");
    if (opt->chunking.kind == PARIO_CHUNK_GIVEN) {
        uint64_t ckx, cky;
        chunk_xy(opt, &ckx, &cky);
        jsonl_begin_array(j, "chunking");
        jsonl_u64(j, NULL, 1);
        jsonl_u64(j, NULL, opt->grid[2]);
        jsonl_u64(j, NULL, cky);
        jsonl_u64(j, NULL, ckx);
        jsonl_end(j);
    } else {
        jsonl_str(j, "chunking", opt->chunking.kind == PARIO_CHUNK_CONTIGUOUS ? "contiguous" : "default");
        if (opt->chunking.kind == PARIO_CHUNK_CONTIGUOUS)
            jsonl_str(j, "chunking_note", "record variables cannot be contiguous in netCDF-4/HDF5 (extendible datasets are chunked): they keep the library default; fixed-size variables are contiguous");
    }
    jsonl_str(j, "fill", "off");
    jsonl_begin(j, "variables");
    jsonl_u64(j, "3d", (uint64_t)opt->n3d);
    jsonl_u64(j, "2d", (uint64_t)opt->n2d);
    jsonl_u64(j, "restart", (uint64_t)opt->nrestart);
    jsonl_u64(j, "small", MODEL_NSMALL);
    jsonl_end(j);
    jsonl_double(j, "select_threshold", opt->select_threshold);
}

void model_metrics(struct jsonl *j, const struct pario_job *job)
{
    const struct pario_options *opt = job->opt;
    if (!M.valid) {
        jsonl_null(j, "select");
        jsonl_null(j, "small_bytes");
        jsonl_null(j, "records_written");
        return;
    }
    if (opt->select_threshold > 0) {
        jsonl_begin(j, "select");
        jsonl_double(j, "threshold", M.threshold);
        jsonl_u64(j, "records", M.nt);
        jsonl_u64(j, "candidates", M.candidates);
        jsonl_u64(j, "skipped", M.skipped);
        jsonl_u64(j, "bytes_saved", M.bytes_saved);
        jsonl_double(j, "decide_s", M.decide_s);
        jsonl_begin(j, "per_var");
        for (int k = 0; k < M.n3d; k++) {
            jsonl_begin(j, M.names[k]);
            jsonl_begin_array(j, "rms_change");
            for (uint64_t t = 0; t < M.nt; t++) {
                if (t == 0)
                    jsonl_null(j, NULL);
                else
                    jsonl_double(j, NULL, M.rms[(size_t)k * M.nt + t]);
            }
            jsonl_end(j);
            jsonl_begin_array(j, "written");
            for (uint64_t t = 0; t < M.nt; t++)
                jsonl_bool(j, NULL, M.written[(size_t)k * M.nt + t]);
            jsonl_end(j);
            jsonl_double(j, "max_error", M.maxerr[k]);
            jsonl_end(j);
        }
        jsonl_end(j);
        jsonl_end(j);
    } else {
        jsonl_null(j, "select");
    }
    jsonl_u64(j, "small_bytes", M.small_bytes);
    jsonl_u64(j, "records_written", M.records_written);
    jsonl_str(j, "fields", M.precomputed ? "precomputed" : "per-record");
}
