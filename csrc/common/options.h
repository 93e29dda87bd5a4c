/* One table-driven command line for every native program (the probes through args.c, and
 * climio-pario). Each option is one row of a table: long and short name, metavar,
 * help, the default shown in --help, whether it is required, and how its value is stored.
 * getopt_long's struct option array, its short-option string, the usage line and the --help
 * text are all generated from that table, so they cannot disagree.
 *
 * opt_parse never exits: climio-pario has to finish MPI before it leaves, so it gets
 * the one-line message back. The probes use opt_parse_or_fail, which ends through fail()
 * ("PROGRAM: error: ..." on stderr, exit status 2). */
#ifndef CLIMIO_OPTIONS_H
#define CLIMIO_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPT_MAX_ROWS 64
#define OPT_ERRLEN 512

/* How a row stores its value at `offset` in the caller's destination struct. */
enum opt_kind {
    OPT_HEADING = 0,  /* not an option: `help` is a heading line of --help */
    OPT_SET,          /* no value; int = 1 */
    OPT_CLEAR,        /* no value; int = 0 (--no-verify) */
    OPT_STRING,       /* const char * = the value, which must not be empty */
    OPT_TEXT,         /* const char * = the value, possibly empty (--platform-id "") */
    OPT_U64,          /* uint64_t, decimal digits only, in [min, max] (max 0: no limit) */
    OPT_U64S,         /* uint64_t[n], exactly n comma-separated integers in [min, max] */
    OPT_INTS,         /* int[n], likewise (max 0: INT_MAX) */
    OPT_NUMBER,       /* double, finite and >= 0 */
    OPT_CHOICE,       /* int = index of the value in `choices` ("cold|warm": cold 0, warm 1) */
    OPT_CALL,         /* handler(dest, value, err, errlen): 0, or -1 with a message in err */
};

/* Row flags. */
#define OPT_REQUIRED 1u  /* must be given, unless an OPT_ALONE row is */
#define OPT_ALONE    2u  /* an action that needs no other option (--help, --version, --list) */

struct opt_spec {
    const char *name;     /* long name without "--" (NULL for a heading) */
    int short_name;       /* 0: none */
    const char *metavar;  /* the value's name in --help; NULL: the option takes no value */
    const char *help;
    enum opt_kind kind;
    size_t offset;        /* offsetof(destination struct, field) */
    unsigned flags;
    const char *def;      /* default shown in --help as "(default DEF)", or NULL */
    uint64_t min, max;    /* OPT_U64, OPT_U64S, OPT_INTS */
    int n;                /* OPT_U64S, OPT_INTS: how many values */
    const char *choices;  /* OPT_CHOICE: "a|b|c" */
    int (*handler)(void *dest, const char *value, char *err, size_t errlen);   /* OPT_CALL */
    unsigned groups;      /* 0: always; else only when the table enables one of these bits */
};

struct opt_table {
    const char *program;          /* in the usage line */
    const struct opt_spec *rows;
    size_t nrows;
    unsigned enabled;             /* the groups this program uses */
};

/* Parse argv into dest (which holds the defaults already). seen, if not NULL, has nrows
 * counters: how often each row was given. 0, or -1 with one line in err (no "error:"). */
int opt_parse(const struct opt_table *t, int argc, char **argv, void *dest, unsigned *seen,
              char *err, size_t errlen);
/* The same, ending through fail() on bad input. */
void opt_parse_or_fail(const struct opt_table *t, int argc, char **argv, void *dest, unsigned *seen);

/* "usage: PROGRAM --required VALUE ... [options]" and one line per enabled row. */
void opt_help(const struct opt_table *t, FILE *fp);

/* How often the enabled row `name` was given (after opt_parse with seen). */
unsigned opt_count(const struct opt_table *t, const unsigned *seen, const char *name);

/* Strict number parsers for handlers (what names the value in the message, e.g. "--seed"):
 * 0, or -1 with "WHAT must be ..., not 'TEXT'" in err. */
int opt_u64(const char *text, uint64_t min, uint64_t max, const char *what, uint64_t *out,
            char *err, size_t errlen);
/* Format a one-line error into err (errlen bytes); returns -1, so a handler can `return opt_error(...)`. */
int opt_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int opt_number(const char *text, const char *what, double *out, char *err, size_t errlen);
/* Exactly n comma-separated integers in [min, max] (max 0: no limit), digits only, no blanks
 * or empty items: 0, or -1. */
int opt_u64_list(const char *text, int n, uint64_t min, uint64_t max, uint64_t *out);

#endif
