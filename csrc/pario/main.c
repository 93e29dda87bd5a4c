/* climio-pario: the MPI program of the parallel-write and parallel-read studies (README.md).
 * One binary with a driver table, as IOR has one binary with a table of backends: --op and
 * --mode choose the driver (benchio and model write, read reads), --backends the I/O backends
 * (backends.h) every driver goes through. main parses the one option table, answers --list,
 * --help and --version, builds the hints, checks --dir, and runs the driver. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "fail.h"
#include "support.h"

static const struct pario_driver drivers[] = {
    {"benchio", OP_WRITE, 1u << MODE_BENCHIO, write_main, benchio_run, benchio_params, benchio_metrics},
    {"model", OP_WRITE, 1u << MODE_MODEL, write_main, model_run, model_params, model_metrics},
    {"read", OP_READ, 1u << MODE_MPIIO | 1u << MODE_TASKS, read_main, NULL, NULL, NULL},
};

static const struct pario_driver *driver_for(int op, int mode)
{
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if ((int)drivers[i].op == op && (drivers[i].modes >> mode & 1u))
            return &drivers[i];
    return NULL;
}

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

int main(int argc, char **argv)
{
    int rank;
    struct cli c;
    char err[PARIO_ERR_LEN] = "";

    fail_set_program(PARIO_PROGRAM);
    /* Parsing needs no MPI, so --list and --help answer without MPI_Init: the Python side asks
     * for the backends without a launcher, also where a bare (singleton) MPI_Init cannot run. */
    int parsed = options_parse(argc, argv, &c, err, sizeof err);
    if (parsed == 0 && (c.list || c.help)) {
        if (c.list)
            options_list(stdout);
        else
            options_usage(stdout);
        return fflush(stdout) == 0 ? 0 : CLIMIO_EXIT_USAGE;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (parsed != 0)
        return pario_finish_error(PARIO_PROGRAM, err);
    if (c.version) {
        if (rank == 0) {
            pario_print_versions(stdout);
            fflush(stdout);
        }
        MPI_Finalize();
        return 0;
    }
    const struct pario_driver *d = driver_for(c.op, c.opt.mode);
    if (!d)   /* options_parse refuses a mode of the other op: a table without its row */
        return pario_finish_error(PARIO_PROGRAM, "no driver for this --op and --mode");

    MPI_Info hints = MPI_INFO_NULL;
    if (hints_build(c.hints_file, c.hint_items, c.nhints, &hints, err) != 0)
        return pario_finish_error(PARIO_PROGRAM, err);
    if (rank == 0 && c.opt.dir)
        check_dir(c.opt.dir, err);
    if (agree_failed(MPI_COMM_WORLD, err))
        return pario_finish_error(PARIO_PROGRAM, err);
    (void)pario_mpi_library();   /* before any timing: MPI_Get_library_version once */

    int rc = d->main(&c, d, hints);
    if (rc != 0)
        return rc;   /* pario_finish_error has finalized MPI */
    if (hints != MPI_INFO_NULL)
        MPI_Info_free(&hints);
    MPI_Finalize();
    return 0;
}
