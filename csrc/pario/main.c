/* climio-pario-write: the parallel-write study's MPI program (README.md).
 * main parses the command line, builds the hints, and runs every backend x strategy x
 * repetition through a mode driver (benchio.c, model.c); between repetitions, outside the
 * timed region, it agrees on failures, reduces the outcomes into one record (record.c),
 * and evicts and removes the files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "driver.h"
#include "fail.h"
#include "record.h"
#include "support.h"


/* --dir must exist and take a new file: try one (access(2) says yes to root on a read-only
 * mode and says nothing about a read-only mount). */
static void check_dir(const char *dir, char *err)
{
    char probe[PARIO_PATH_LEN];
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, PARIO_ERR_LEN, "cannot write in %s: %s", dir, strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, PARIO_ERR_LEN, "cannot write in %s: %s", dir, strerror(ENOTDIR));
        return;
    }
    snprintf(probe, sizeof probe, "%s/.%s-probe-%ld", dir, PARIO_PROGRAM, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, PARIO_ERR_LEN, "cannot write in %s: %s", dir, strerror(errno));
        return;
    }
    close(fd);
    unlink(probe);
}

static void remove_files(const struct pario_outcome *out)
{
    for (int i = 0; i < out->nfiles; i++)
        (void)unlink(out->paths[i]);
}

int main(int argc, char **argv)
{
    int rank, size;
    struct cli c;
    char err[PARIO_ERR_LEN] = "";

    fail_set_program(PARIO_PROGRAM);
    /* Parsing needs no MPI, so --list answers without MPI_Init: the Python side asks for the
     * backends without a launcher, also where a bare (singleton) MPI_Init cannot run. */
    int parsed = options_parse(argc, argv, &c, err, sizeof err);
    if (parsed == 0 && c.list) {
        options_list(stdout);
        return fflush(stdout) == 0 ? 0 : CLIMIO_EXIT_USAGE;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parsed != 0)
        return pario_finish_error(PARIO_PROGRAM, err);
    if (c.help || c.version) {
        if (rank == 0) {
            if (c.help)
                options_usage(stdout);
            else
                pario_print_versions(stdout);
            fflush(stdout);
        }
        MPI_Finalize();
        return 0;
    }

    struct record_context ctx = {MPI_INFO_NULL, 0.0, 1};
    if (hints_build(c.hints_file, c.hint_items, c.nhints, &ctx.hints_requested, err) != 0)
        return pario_finish_error(PARIO_PROGRAM, err);
    if (rank == 0)
        check_dir(c.opt.dir, err);
    if (agree_failed(MPI_COMM_WORLD, err))
        return pario_finish_error(PARIO_PROGRAM, err);

    MPI_Comm node;
    int node_index, nnodes, node_ranks;
    if (pario_node_comm(MPI_COMM_WORLD, &node, &node_index, &nnodes) != 0)
        return pario_finish_error(PARIO_PROGRAM, "cannot split MPI_COMM_WORLD by node (MPI_COMM_TYPE_SHARED)");
    MPI_Comm_size(node, &node_ranks);
    MPI_Allreduce(&node_ranks, &ctx.max_node_ranks, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
    ctx.realtime_offset = pario_realtime_offset();
    (void)pario_mpi_library();   /* before any timing: MPI_Get_library_version once */

    for (int bi = 0; bi < c.nbackends; bi++) {
        for (int si = 0; si < c.nstrategies; si++) {
            for (uint64_t rep = 0; rep < c.opt.reps; rep++) {
                struct pario_job job = {
                    .opt = &c.opt, .backend = c.backends[bi], .strategy = c.strategies[si], .rep = rep,
                    .hints = ctx.hints_requested, .world = MPI_COMM_WORLD, .nodes = nnodes,
                };
                static struct pario_outcome out;   /* 16 paths of 1 KiB: not on the stack */
                memset(&out, 0, sizeof out);
                out.start = INFINITY;
                out.end = -INFINITY;
                out.hints_used = MPI_INFO_NULL;
                out.verified = -1;
                out.collective = -1;

                phase_set_straggler(rank == c.opt.straggler_rank ? c.opt.straggler_s : 0.0);
                MPI_Barrier(MPI_COMM_WORLD);
                int rc = c.opt.mode == MODE_BENCHIO ? benchio_run(&job, &out) : model_run(&job, &out);
                if (rc != 0 && !out.err[0])
                    outcome_fail(&out, "the %s driver failed without a message",
                                 c.opt.mode == MODE_BENCHIO ? "benchio" : "model");

                /* Outside the timed region from here on. */
                uint64_t file_bytes = 0;
                for (int i = 0; i < out.nfiles && !out.err[0]; i++) {
                    struct stat st;
                    if (stat(out.paths[i], &st) != 0)
                        outcome_fail(&out, "cannot stat %s after close: %s", out.paths[i], strerror(errno));
                    else
                        file_bytes += (uint64_t)st.st_size;
                }
                int last = rep + 1 == c.opt.reps;
                if (agree_failed(MPI_COMM_WORLD, out.err)) {
                    if (!c.opt.keep)
                        remove_files(&out);
                    if (out.hints_used != MPI_INFO_NULL)
                        MPI_Info_free(&out.hints_used);
                    char msg[PARIO_ERR_LEN + 64];
                    snprintf(msg, sizeof msg, "%s %s rep %llu: %s", job.backend->name, strategy_names[job.strategy],
                             (unsigned long long)rep, out.err);
                    return pario_finish_error(PARIO_PROGRAM, msg);
                }
                /* Write back and drop this repetition's pages so the next one starts from the same
                 * page-cache state rather than competing with the previous one's write-back. */
                int evicted = 1;
                for (int i = 0; i < out.nfiles; i++) {
                    char e[256];
                    if (cache_evict(out.paths[i], e, sizeof e) != 0)
                        evicted = 0;
                }
                record_emit(&job, &out, &ctx, file_bytes, evicted);
                if (!(c.opt.keep && last))
                    remove_files(&out);
                if (out.hints_used != MPI_INFO_NULL)
                    MPI_Info_free(&out.hints_used);
                /* Removals done everywhere before the next repetition creates the same names. */
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
    }

    if (ctx.hints_requested != MPI_INFO_NULL)
        MPI_Info_free(&ctx.hints_requested);
    MPI_Finalize();
    return 0;
}
