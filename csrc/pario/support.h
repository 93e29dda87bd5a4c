/* Helpers of main.c and the drivers that are not part of the driver contract (driver.h): the
 * command line, MPI_Info hints from the command line and as JSON, node communicators, file
 * names, one-line MPI error strings. */
#ifndef CLIMIO_PARIO_SUPPORT_H
#define CLIMIO_PARIO_SUPPORT_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#include "driver.h"
#include "jsonl.h"
#include "pario.h"

#define PARIO_PROGRAM "climio-pario"

/* --- options.c: the command line (README.md), one table over csrc/common/options.c --- */
#define CLI_MAX_HINTS 256

/* The read driver's own options (--op read). */
enum { PAT_SEQUENTIAL = 0, PAT_STRIDING = 1, PAT_COUNT = 2 };
enum { ACC_INDEPENDENT = 0, ACC_COLLECTIVE = 1, ACC_COUNT = 2 };
enum { STACK_POSIX = 0, STACK_NETCDF = 1 };
extern const char *const pattern_names[PAT_COUNT];   /* "sequential", "striding" */
extern const char *const access_names[ACC_COUNT];    /* "independent", "collective" */
extern const char *const stack_names[2];             /* "c-posix", "c-netcdf" (climio.stack_names) */
struct pario_read_options {
    uint64_t size, buffer;           /* --size (mpiio), --buffer: bytes */
    int patterns[PAT_COUNT], npatterns;
    int access[ACC_COUNT], naccess;
    double settle_s;                 /* --settle (mpiio) */
    int stack;                       /* --stack (tasks) */
    const char *files;               /* --files: a path, %d replaced by the rank */
    int split;                       /* --split: one shared file, N contiguous pieces */
    const char *file_set;            /* recorded as params.file_set */
    const char *var;                 /* --var: the netCDF variable */
    int stall_rank;                  /* --stall RANK:SECONDS (-1: none) */
    double stall_s;
};

struct cli {
    int op;                                  /* --op: enum pario_op */
    struct pario_options opt;                /* opt.mode: enum pario_mode */
    struct pario_read_options rd;
    const struct pario_backend *backends[PARIO_NBACKENDS];
    int nbackends;
    enum pario_strategy strategies[STRATEGY_COUNT];
    int nstrategies;
    const char *hint_items[CLI_MAX_HINTS];   /* --hint values, in order (later ones win) */
    int nhints;
    const char *hints_file;
    int version, help, list;
    /* raw values, resolved once the mode is known */
    int mode;                                /* --mode: index in mode_names (-1: not given) */
    const char *chunk;                       /* --chunk */
    int vars[3];                             /* --vars N3D,N2D,NRESTART */
};

/* Parsing never exits and needs no MPI: every rank parses the same argv and gets the same
 * verdict, and main turns an error into one line from rank 0 and exit status 2 after
 * MPI_Finalize. 0, or -1 with a one-line message in err. */
int options_parse(int argc, char **argv, struct cli *c, char *err, size_t errlen);
/* --help: the generated option list, then the backends. */
void options_usage(FILE *fp);
/* --list: one line per backend, "NAME<TAB>DESCRIPTION", in the default order. */
void options_list(FILE *fp);

/* --- common.c --- */
/* Every error path ends here on every rank: one line "PROGRAM: error: MSG" from rank 0, then
 * MPI_Finalize and exit status 2 (no MPI_Abort, whose multi-line dump would bury the message). */
int pario_finish_error(const char *program, const char *msg);
/* --version: the MPI library and every backend's library version as one JSON line. */
void pario_print_versions(FILE *fp);
/* Seconds to add to MPI_Wtime() for the wall-clock (epoch) time. */
double pario_realtime_offset(void);

/* --- hints.c --- */
/* Split "KEY=VALUE" (or ROMIO's "KEY VALUE" when allow_space) into trimmed key/value;
 * 0, or -1 with a message in err. */
int hints_split(const char *item, int allow_space, char *key, size_t keylen, char *value, size_t vallen,
                char *err, size_t errlen);
/* Add the KEY=VALUE lines of a hints file's text (# comments, blank lines) to *info,
 * creating it if it is MPI_INFO_NULL. */
int hints_add_text(MPI_Info *info, const char *text, const char *source, char *err, size_t errlen);
/* Add one KEY=VALUE item. */
int hints_add_item(MPI_Info *info, const char *item, char *err, size_t errlen);
/* The MPI_Info of --hints-file (read by rank 0, up to 1 MiB, broadcast) then the --hint items
 * (later ones win); collective over MPI_COMM_WORLD. 0, or -1 with err (PARIO_ERR_LEN) on every rank. */
int hints_build(const char *hints_file, const char *const *items, int nitems, MPI_Info *info, char *err);
/* Every key/value of info as a JSON object member `key` ({} for MPI_INFO_NULL). */
void hints_json(struct jsonl *j, const char *key, MPI_Info info);
/* Flatten info to "k\0v\0k\0v\0..." (malloc'd, *len bytes) and back, to send it between ranks. */
char *hints_pack(MPI_Info info, int *len);
MPI_Info hints_unpack(const char *buf, int len);

/* --- common.c --- */
/* This rank's node: a communicator of the ranks sharing its memory (MPI_COMM_TYPE_SHARED),
 * the node's index (0.. in order of the lowest world rank on it) and the number of nodes.
 * Collective over world; the caller frees *node. */
int pario_node_comm(MPI_Comm world, MPI_Comm *node, int *node_index, int *nnodes);
/* File-name extension of a backend's files: "dat", "h5" or "nc". */
const char *pario_extension(const struct pario_backend *b);
/* One-line text of an MPI error code. */
const char *pario_mpi_error(int code, char *buf, size_t len);
/* "PREFIX x.y.z" from the first word of a library's version text, formatted once into buf. */
const char *pario_version_text(char *buf, size_t len, const char *prefix, const char *libvers);
/* A zeroed backend state of `size` bytes in f->impl; NULL with "<backend>: out of memory". */
void *pario_new_state(struct pario_file *f, size_t size);
/* The first line of MPI_Get_library_version (static storage). */
const char *pario_mpi_library(void);

#endif
