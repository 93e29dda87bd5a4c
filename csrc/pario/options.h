/* The command line of climio-pario-write (README.md). Parsing never exits: every rank parses
 * the same argv, gets the same verdict, and main turns an error into one line from rank 0 and
 * exit status 2 after MPI_Finalize. */
#ifndef CLIMIO_PARIO_OPTIONS_H
#define CLIMIO_PARIO_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "driver.h"

#define CLI_MAX_HINTS 256

struct cli {
    struct pario_options opt;
    const struct pario_backend *backends[4];
    int nbackends;
    enum pario_strategy strategies[STRATEGY_COUNT];
    int nstrategies;
    const char *hint_items[CLI_MAX_HINTS];   /* --hint values, in order (later ones win) */
    int nhints;
    const char *hints_file;
    int version, help;
};

/* 0, or -1 with a one-line message in err. */
int options_parse(int argc, char **argv, struct cli *c, char *err, size_t errlen);
void options_usage(FILE *fp);

#endif
