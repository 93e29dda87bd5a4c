/* The command line of climio-pario-write (README.md): one option table read by the common
 * parser (csrc/common/options.c), which also generates --help from it. What a row cannot say
 * is here: the lists of backends and strategies, the hints, --straggler, and the checks
 * across options (the mode's own options, --local vs --global, --chunk against --grid). */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* Rows that belong to one mode carry its bit in .groups (both are enabled while parsing: the
 * mode is known only afterwards, and an option of the other mode is refused then). */
#define BENCHIO (1u << MODE_BENCHIO)
#define MODEL (1u << MODE_MODEL)

static int parse_backends(void *dest, const char *s, char *err, size_t errlen)
{
    struct cli *c = dest;
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof buf)
        return opt_error(err, errlen, "--backends too long");
    snprintf(buf, sizeof buf, "%s", s);
    c->nbackends = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const struct pario_backend *b = pario_backend_named(t);
        if (!b)
            return opt_error(err, errlen, "unknown backend '%s': choose from %s", t, PARIO_BACKEND_CHOICES);
        for (int i = 0; i < c->nbackends; i++)
            if (c->backends[i] == b)
                return opt_error(err, errlen, "backend '%s' listed twice in --backends", t);
        c->backends[c->nbackends++] = b;
    }
    if (c->nbackends == 0)
        return opt_error(err, errlen, "--backends is empty");
    return 0;
}

static int parse_strategies(void *dest, const char *s, char *err, size_t errlen)
{
    struct cli *c = dest;
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof buf)
        return opt_error(err, errlen, "--strategies too long");
    snprintf(buf, sizeof buf, "%s", s);
    c->nstrategies = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; i < STRATEGY_COUNT; i++)
            if (strcmp(strategy_names[i], t) == 0)
                k = i;
        if (k < 0)
            return opt_error(err, errlen, "unknown strategy '%s': choose from shared, file-per-process, file-per-node, serial", t);
        for (int i = 0; i < c->nstrategies; i++)
            if ((int)c->strategies[i] == k)
                return opt_error(err, errlen, "strategy '%s' listed twice in --strategies", t);
        c->strategies[c->nstrategies++] = (enum pario_strategy)k;
    }
    if (c->nstrategies == 0)
        return opt_error(err, errlen, "--strategies is empty");
    return 0;
}

static int add_hint(void *dest, const char *s, char *err, size_t errlen)
{
    struct cli *c = dest;
    if (c->nhints >= CLI_MAX_HINTS)
        return opt_error(err, errlen, "more than %d --hint options", CLI_MAX_HINTS);
    c->hint_items[c->nhints++] = s;   /* checked by hints_add_item, after MPI_Init */
    return 0;
}

static int parse_straggler(void *dest, const char *s, char *err, size_t errlen)
{
    struct pario_options *o = &((struct cli *)dest)->opt;
    char *end;
    errno = 0;
    long r = strtol(s, &end, 10);
    double d = (*end == ':') ? strtod(end + 1, &end) : -1;
    if (errno || *end || r < 0 || r > INT_MAX || !isfinite(d) || d < 0 || d > 3600)
        return opt_error(err, errlen, "--straggler '%s' must be RANK:SECONDS", s);
    o->straggler_rank = (int)r;
    o->straggler_s = d;
    return 0;
}

#define AT(field) offsetof(struct cli, field)

/* In the order of --help. */
static const struct opt_spec rows[] = {
    {.name = "mode", .metavar = "benchio|model", .help = "EPCC benchio, or the model-output emulator",
     .kind = OPT_CHOICE, .offset = AT(mode), .choices = "benchio|model", .flags = OPT_REQUIRED},
    {.name = "dir", .metavar = "DIR", .help = "where the files are written (must exist)", .kind = OPT_STRING,
     .offset = AT(opt.dir), .flags = OPT_REQUIRED},
    {.name = "backends", .metavar = "LIST", .help = "comma list of the backends below", .kind = OPT_CALL,
     .handler = parse_backends, .def = PARIO_BACKEND_LIST},
    {.name = "strategies", .metavar = "LIST", .help = "comma list of shared, file-per-process, file-per-node, serial",
     .kind = OPT_CALL, .handler = parse_strategies, .def = "all; model mode: no file-per-node"},
    {.name = "reps", .metavar = "N", .help = "repetitions of each backend x strategy", .kind = OPT_U64,
     .offset = AT(opt.reps), .min = 1, .def = "10"},
    {.name = "hint", .metavar = "KEY=VALUE", .help = "MPI-IO hint for every file open (repeatable)",
     .kind = OPT_CALL, .handler = add_hint},
    {.name = "hints-file", .metavar = "FILE", .help = "hints, one KEY=VALUE (or KEY VALUE) a line; --hint wins",
     .kind = OPT_STRING, .offset = AT(hints_file)},
    {.name = "fsync", .help = "sync before close, timed as a phase of its own", .kind = OPT_SET,
     .offset = AT(opt.fsync)},
    {.name = "no-verify", .help = "do not read the files back", .kind = OPT_CLEAR, .offset = AT(opt.verify)},
    {.name = "keep", .help = "leave the files of the last repetition", .kind = OPT_SET, .offset = AT(opt.keep)},
    {.name = "independent", .help = "write the big arrays with independent calls", .kind = OPT_SET,
     .offset = AT(opt.independent)},
    {.name = "platform-id", .metavar = "ID", .help = "copied into the records", .kind = OPT_TEXT,
     .offset = AT(opt.platform_id)},
    {.help = " benchio mode:"},
    {.name = "local", .metavar = "n1,n2,n3", .help = "weak scaling: each rank's block", .kind = OPT_U64S,
     .offset = AT(opt.local), .n = 3, .min = 1, .def = "128,128,128", .groups = BENCHIO},
    {.name = "global", .metavar = "N1,N2,N3", .help = "strong scaling: the array split over the ranks",
     .kind = OPT_U64S, .offset = AT(opt.global), .n = 3, .min = 1, .groups = BENCHIO},
    {.help = " model mode:"},
    {.name = "grid", .metavar = "nx,ny,nz", .help = "the model grid", .kind = OPT_U64S, .offset = AT(opt.grid),
     .n = 3, .min = 1, .def = "192,128,20", .groups = MODEL},
    {.name = "nt", .metavar = "N", .help = "records written", .kind = OPT_U64, .offset = AT(opt.nt), .min = 1,
     .def = "4", .groups = MODEL},
    {.name = "decomposition", .metavar = "px,py", .help = "process grid", .kind = OPT_INTS,
     .offset = AT(opt.layout), .n = 2, .min = 1, .max = 1u << 20, .def = "MPI_Dims_create", .groups = MODEL},
    {.name = "io-layout", .metavar = "ix,iy", .help = "I/O domains (FMS io_layout)", .kind = OPT_INTS,
     .offset = AT(opt.io_layout), .n = 2, .min = 1, .max = 1u << 20, .def = "one per rank", .groups = MODEL},
    {.name = "small", .metavar = "collective|independent", .help = "how the small variables are written",
     .kind = OPT_CHOICE, .offset = AT(opt.small_independent), .choices = "collective|independent",
     .def = "collective", .groups = MODEL},
    {.name = "chunk", .metavar = "default|contiguous|CKX,CKY", .help = "chunk layout of the record variables",
     .kind = OPT_STRING, .offset = AT(chunk), .def = "default, the library's", .groups = MODEL},
    {.name = "vars", .metavar = "N3D,N2D,NRESTART", .help = "variables of each kind", .kind = OPT_INTS,
     .offset = AT(vars), .n = 3, .min = 0, .max = PARIO_MAX_VARS, .def = "4,3,2", .groups = MODEL},
    {.name = "select", .metavar = "RMS", .help = "skip records that changed less (0: write all)",
     .kind = OPT_NUMBER, .offset = AT(opt.select_threshold), .def = "0", .groups = MODEL},
    {.help = " diagnostics:"},
    {.name = "straggler", .metavar = "RANK:SECONDS", .help = "that rank's write phases last SECONDS longer",
     .kind = OPT_CALL, .handler = parse_straggler},
    {.name = "verify-access", .metavar = "independent|collective", .help = "how benchio reads its files back",
     .kind = OPT_CHOICE, .offset = AT(opt.verify_collective), .choices = "independent|collective",
     .def = "independent"},
    {.name = "version", .help = "print the library versions as JSON and exit", .kind = OPT_SET,
     .offset = AT(version), .flags = OPT_ALONE},
    {.name = "list", .help = "print the backends, NAME<TAB>DESCRIPTION a line, and exit", .kind = OPT_SET,
     .offset = AT(list), .flags = OPT_ALONE},
    {.name = "help", .short_name = 'h', .help = "print this help and exit", .kind = OPT_SET, .offset = AT(help),
     .flags = OPT_ALONE},
};
#define NROWS (sizeof rows / sizeof rows[0])

static const struct opt_table table = {PARIO_PROGRAM, rows, NROWS, BENCHIO | MODEL};

void options_usage(FILE *fp)
{
    opt_help(&table, fp);
    fprintf(fp, " backends:\n");
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        fprintf(fp, "  %-9s %s\n", pario_registry[i].name, pario_registry[i].description);
}

void options_list(FILE *fp)
{
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        fprintf(fp, "%s\t%s\n", pario_registry[i].name, pario_registry[i].description);
}

int options_parse(int argc, char **argv, struct cli *c, char *err, size_t errlen)
{
    struct pario_options *o = &c->opt;
    unsigned seen[NROWS];

    memset(c, 0, sizeof *c);
    o->reps = 10;
    o->straggler_rank = -1;
    o->verify = 1;
    o->platform_id = "";
    o->local[0] = o->local[1] = o->local[2] = 128;
    o->grid[0] = 192; o->grid[1] = 128; o->grid[2] = 20;
    o->nt = 4;
    c->vars[0] = 4; c->vars[1] = 3; c->vars[2] = 2;
    o->chunking.kind = PARIO_CHUNK_DEFAULT;
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        c->backends[i] = pario_registry[i].backend;
    c->nbackends = PARIO_NBACKENDS;

    if (opt_parse(&table, argc, argv, c, seen, err, errlen) != 0)
        return -1;
    if (c->version || c->help || c->list)
        return 0;
    o->mode = c->mode == MODE_MODEL ? MODE_MODEL : MODE_BENCHIO;
    o->n3d = c->vars[0]; o->n2d = c->vars[1]; o->nrestart = c->vars[2];

    /* An option of the other mode would be silently ignored: refuse it instead. */
    for (size_t i = 0; i < NROWS; i++)
        if (seen[i] && rows[i].groups && !(rows[i].groups & (1u << o->mode)))
            return opt_error(err, errlen, "--%s does not apply to --mode %s", rows[i].name,
                       o->mode == MODE_BENCHIO ? "benchio" : "model");

    if (o->mode == MODE_BENCHIO) {
        if (opt_count(&table, seen, "local") && opt_count(&table, seen, "global"))
            return opt_error(err, errlen, "give --local (weak scaling) or --global (strong scaling), not both");
        if (opt_count(&table, seen, "global"))
            o->local[0] = o->local[1] = o->local[2] = 0;   /* known once the process grid is */
    } else if (c->chunk) {
        if (strcmp(c->chunk, "default") == 0) {
            o->chunking.kind = PARIO_CHUNK_DEFAULT;
        } else if (strcmp(c->chunk, "contiguous") == 0) {
            o->chunking.kind = PARIO_CHUNK_CONTIGUOUS;
        } else {
            uint64_t v[2];
            if (opt_u64_list(c->chunk, 2, 1, 0, v) != 0)
                return opt_error(err, errlen, "--chunk '%s' must be default, contiguous or CKX,CKY (integers >= 1)", c->chunk);
            o->chunking.kind = PARIO_CHUNK_GIVEN;
            o->chunking.chunk[0] = 1;
            o->chunking.chunk[1] = o->grid[2];
            o->chunking.chunk[2] = v[1];
            o->chunking.chunk[3] = v[0];
        }
    }
    if (!opt_count(&table, seen, "strategies")) {
        /* model mode has no file-per-node strategy (parallel_write.MODEL_STRATEGIES) */
        c->nstrategies = 0;
        for (int i = 0; i < STRATEGY_COUNT; i++)
            if (o->mode == MODE_BENCHIO || i != STRATEGY_FILE_PER_NODE)
                c->strategies[c->nstrategies++] = (enum pario_strategy)i;
    }
    return 0;
}
