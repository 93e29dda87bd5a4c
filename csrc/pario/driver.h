/* What main.c shares with the drivers: the driver table's row, the parsed options, and for
 * the two write drivers (benchio.c, model.c, run by write.c's loop) one job (backend x
 * strategy x repetition), the per-rank outcome that write.c reduces across ranks into a
 * record, and the helpers every driver needs (phase clock, communicators per strategy,
 * agreed errors). The read driver (read.c) runs its whole operation itself. */
#ifndef CLIMIO_PARIO_DRIVER_H
#define CLIMIO_PARIO_DRIVER_H

#include <mpi.h>
#include <stdint.h>

#include "jsonl.h"
#include "pario.h"

struct cli;
struct pario_job;
struct pario_outcome;

/* --op: what the run does; --mode: which workload of that operation. */
enum pario_op { OP_WRITE = 0, OP_READ = 1 };
enum pario_mode { MODE_BENCHIO = 0, MODE_MODEL = 1, MODE_MPIIO = 2, MODE_TASKS = 3, MODE_COUNT = 4 };
extern const char *const mode_names[MODE_COUNT];           /* "benchio", "model", "mpiio", "tasks" */

enum pario_strategy {
    STRATEGY_SHARED = 0,             /* one file, every writer, collective unless --independent */
    STRATEGY_FILE_PER_PROCESS = 1,   /* model mode with an io_layout: one file per I/O domain */
    STRATEGY_FILE_PER_NODE = 2,      /* MPI_COMM_TYPE_SHARED: one file per node, collective within it */
    STRATEGY_SERIAL = 3,             /* gather to rank 0, which writes one file alone */
    STRATEGY_COUNT = 4
};
extern const char *const strategy_names[STRATEGY_COUNT];   /* "shared", "file-per-process", ... */

/* Phases timed on every rank (seconds, MPI_Wtime). Absent phases stay 0 and are reported only
 * when some rank spent time in them (gather: serial and io_layout; fsync: --fsync). */
enum pario_phase { PHASE_OPEN = 0, PHASE_DEFINE, PHASE_GATHER, PHASE_WRITE, PHASE_FSYNC, PHASE_CLOSE, PHASE_COUNT };
extern const char *const phase_names[PHASE_COUNT];          /* "open", "define", "gather", "write", "fsync", "close" */

struct pario_options {
    enum pario_mode mode;
    const char *dir;                 /* --dir: where files are written (must exist) */
    uint64_t reps;                   /* --reps, default 10 */
    int fsync;                       /* --fsync: sync before close, timed as its own phase */
    int verify;                      /* default on; --no-verify */
    int keep;                        /* --keep: leave the files of the last repetition */
    int independent;                 /* --independent: shared-file puts of the big arrays independent */
    const char *platform_id;
    /* benchio mode */
    uint64_t local[3];               /* --local n1,n2,n3 (weak scaling; default 128,128,128) */
    uint64_t global[3];              /* --global N1,N2,N3 (strong scaling); all 0 when weak */
    /* model mode */
    uint64_t grid[3];                /* --grid nx,ny,nz (default 192,128,20) */
    uint64_t nt;                     /* --nt records (default 4) */
    int layout[2];                   /* --decomposition px,py; 0,0: MPI_Dims_create */
    int io_layout[2];                /* --io-layout ix,iy; 0,0: px,py (every rank its own domain) */
    int small_independent;           /* --small independent|collective (default collective) */
    struct pario_var_layout chunking;/* --chunk default|contiguous|CKX,CKY (2 numbers: [1,nz,cky,ckx]) */
    int n3d, n2d, nrestart;          /* --vars N3D,N2D,NRESTART (default 4,3,2) */
    double select_threshold;         /* --select RMS (0 = write every record) */
    /* --straggler RANK:SECONDS: that rank sleeps at the end of every write phase, so the
     * per-rank statistics can be checked against a known imbalance (-1: none). */
    int straggler_rank;
    double straggler_s;
    /* --verify-access collective|independent: how benchio's verification reads (get) its
     * blocks back (default independent; collective exercises the backends' collective get). */
    int verify_collective;
};

/* A row of the driver table (main.c): the --op it serves and the --mode values it runs.
 * main runs `main` after MPI_Init, the hints and the --dir check; it returns 0, or the exit
 * status of pario_finish_error (which has finalized MPI). The write drivers share write.c's
 * loop as `main` and give it one repetition (run) and their own record members (params,
 * metrics: called on rank 0 only, after the outcomes are gathered; metrics may use MPI
 * reductions done inside run and kept in static state of the driver). */
struct pario_driver {
    const char *name;                /* benchio, model, read */
    enum pario_op op;
    unsigned modes;                  /* bit m set: --mode mode_names[m] */
    int (*main)(const struct cli *c, const struct pario_driver *d, MPI_Info hints);
    int (*run)(const struct pario_job *job, struct pario_outcome *out);
    void (*params)(struct jsonl *j, const struct pario_job *job);
    void (*metrics)(struct jsonl *j, const struct pario_job *job);
};

/* One configuration and repetition. */
struct pario_job {
    const struct pario_driver *driver;
    const struct pario_options *opt;
    const struct pario_backend *backend;
    enum pario_strategy strategy;
    uint64_t rep;
    MPI_Info hints;                  /* requested hints (MPI_INFO_NULL if none) */
    MPI_Comm world;                  /* all ranks of the run */
    int nodes;                       /* distinct nodes (MPI_COMM_TYPE_SHARED split) */
};

/* A file path this rank created (for eviction and removal by main). */
#define PARIO_MAX_FILES 16
#define PARIO_PATH_LEN 1024

struct pario_outcome {
    double phase[PHASE_COUNT];       /* this rank's seconds in each phase */
    double start, end;               /* this rank's first start and last end, MPI_Wtime after a common barrier */
    uint64_t bytes;                  /* payload bytes this rank handed to put (the sum is the study's bytes) */
    int writer;                      /* this rank called put with data */
    int nfiles;                      /* files this rank created (paths[]) */
    char paths[PARIO_MAX_FILES][PARIO_PATH_LEN];
    MPI_Info hints_used;             /* the hints in effect, from one file of this rank (or MPI_INFO_NULL) */
    int verified;                    /* 1 checked and equal, 0 mismatch, -1 not checked (--no-verify) */
    uint64_t mismatches;             /* values that differed on this rank */
    char err[PARIO_ERR_LEN];         /* non-empty: this rank failed (first message wins) */
    /* Added after the first version of this header: main cannot tell on its own whether the
     * big arrays went through a collective call over more than one rank (model mode's I/O
     * domains). 1 yes, 0 no; main starts it at -1 (the driver does not say), and then infers
     * it from the strategy (shared or file-per-node over >1 rank and not --independent). */
    int collective;
};

/* The drivers (rows of main.c's table). run: one repetition of job on every rank of
 * job->world (collective). */
int write_main(const struct cli *c, const struct pario_driver *d, MPI_Info hints);
int read_main(const struct cli *c, const struct pario_driver *d, MPI_Info hints);
int benchio_run(const struct pario_job *job, struct pario_outcome *out);
void benchio_params(struct jsonl *j, const struct pario_job *job);
void benchio_metrics(struct jsonl *j, const struct pario_job *job);
int model_run(const struct pario_job *job, struct pario_outcome *out);
void model_params(struct jsonl *j, const struct pario_job *job);
void model_metrics(struct jsonl *j, const struct pario_job *job);

/* Phase clock: phase_begin/phase_end add MPI_Wtime differences to out->phase[p] and widen
 * [out->start, out->end]. phase_set_straggler(s): this rank's write phases last s longer. */
void phase_set_straggler(double seconds);
void phase_begin(struct pario_outcome *out, enum pario_phase p);
void phase_end(struct pario_outcome *out, enum pario_phase p);

/* Every rank of comm learns whether any rank failed; the first failing rank's message is
 * copied into every rank's err. Returns 1 if any failed. Call outside timed regions. */
int agree_failed(MPI_Comm comm, char *err /* PARIO_ERR_LEN, "" if this rank is fine */);

/* Record a created file in out->paths (fails the rank if more than PARIO_MAX_FILES). */
void outcome_add_path(struct pario_outcome *out, const char *path);

/* Set out->err once (printf style); later messages are dropped. */
void outcome_fail(struct pario_outcome *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
