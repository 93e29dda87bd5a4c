#include "fail.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *program = "climio-probe";

void fail_set_program(const char *name) { program = name; }

const char *fail_program(void) { return program; }

void fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: error: ", program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(CLIMIO_EXIT_USAGE);
}
