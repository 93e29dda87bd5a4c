/* mpi_write FILE BYTES: every rank writes BYTES at offset rank*BYTES with MPI_File_write_at_all,
 * then reads its block back with MPI_File_read_at (traced by test_trace_lib.py). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) { fprintf(stderr, "usage: mpi_write FILE BYTES\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int n = atoi(argv[2]);
    char *buf = malloc((size_t)n);
    memset(buf, 'a' + rank, (size_t)n);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "1");
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Status st;
    rc |= MPI_File_write_at_all(fh, (MPI_Offset)rank * n, buf, n, MPI_BYTE, &st);
    rc |= MPI_File_read_at(fh, (MPI_Offset)rank * n, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    rc |= MPI_File_close(&fh);
    MPI_Info_free(&info);
    free(buf);
    MPI_Finalize();
    return rc != MPI_SUCCESS;
}
