/* The command line of climio-pario (README.md): one option table for both operations, read
 * by the common parser (csrc/common/options.c), which also generates --help from it. What a
 * row cannot say is here: the comma lists (backends, strategies, patterns, access), the
 * hints, RANK:SECONDS, and the checks across options (--op against --mode, each mode's own
 * options, --local vs --global, --chunk against --grid, whole float64 elements). */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* A row that belongs to some modes carries their bits in .groups (all are enabled while
 * parsing: the op and the mode are known only afterwards, and an option of another mode is
 * refused then). */
#define BENCHIO (1u << MODE_BENCHIO)
#define MODEL (1u << MODE_MODEL)
#define MPIIO (1u << MODE_MPIIO)
#define TASKS (1u << MODE_TASKS)
#define WRITE (BENCHIO | MODEL)
#define READ (MPIIO | TASKS)

/* A comma list of names into idx[] (positions in names[]), no repeats; `option` names it in
 * the messages. */
static int parse_names(const char *s, const char *const *names, int n, int *idx, int *count, const char *what,
                       const char *option, char *err, size_t errlen)
{
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof buf)
        return opt_error(err, errlen, "--%s too long", option);
    snprintf(buf, sizeof buf, "%s", s);
    *count = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], t) == 0)
                k = i;
        if (k < 0) {
            char choices[128] = "";
            for (int i = 0; i < n; i++)
                snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", i ? ", " : "", names[i]);
            return opt_error(err, errlen, "unknown %s '%s': choose from %s", what, t, choices);
        }
        for (int i = 0; i < *count; i++)
            if (idx[i] == k)
                return opt_error(err, errlen, "%s '%s' listed twice in --%s", what, t, option);
        idx[(*count)++] = k;
    }
    if (*count == 0)
        return opt_error(err, errlen, "--%s is empty", option);
    return 0;
}

static int parse_backends(void *dest, const char *s, char *err, size_t errlen)
{
    struct cli *c = dest;
    const char *names[PARIO_NBACKENDS];
    int idx[PARIO_NBACKENDS];
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        names[i] = pario_registry[i].name;
    if (parse_names(s, names, PARIO_NBACKENDS, idx, &c->nbackends, "backend", "backends", err, errlen) != 0)
        return -1;
    for (int i = 0; i < c->nbackends; i++)
        c->backends[i] = pario_registry[idx[i]].backend;
    return 0;
}

static int parse_strategies(void *dest, const char *s, char *err, size_t errlen)
{
    struct cli *c = dest;
    int idx[STRATEGY_COUNT];
    if (parse_names(s, strategy_names, STRATEGY_COUNT, idx, &c->nstrategies, "strategy", "strategies", err, errlen))
        return -1;
    for (int i = 0; i < c->nstrategies; i++)
        c->strategies[i] = (enum pario_strategy)idx[i];
    return 0;
}

static int parse_patterns(void *dest, const char *s, char *err, size_t errlen)
{
    struct pario_read_options *r = &((struct cli *)dest)->rd;
    return parse_names(s, pattern_names, PAT_COUNT, r->patterns, &r->npatterns, "pattern", "patterns", err, errlen);
}

static int parse_access(void *dest, const char *s, char *err, size_t errlen)
{
    struct pario_read_options *r = &((struct cli *)dest)->rd;
    return parse_names(s, access_names, ACC_COUNT, r->access, &r->naccess, "access", "access", err, errlen);
}

static int add_hint(void *dest, const char *s, char *err, size_t errlen)
{
    struct cli *c = dest;
    if (c->nhints >= CLI_MAX_HINTS)
        return opt_error(err, errlen, "more than %d --hint options", CLI_MAX_HINTS);
    c->hint_items[c->nhints++] = s;   /* checked by hints_add_item, after MPI_Init */
    return 0;
}

static int parse_size(void *dest, const char *s, char *err, size_t errlen)
{
    return opt_u64(s, 8, 0, "--size", &((struct cli *)dest)->rd.size, err, errlen);
}

/* RANK:SECONDS (--straggler, --stall). */
static int rank_seconds(const char *s, const char *option, int *rank, double *seconds, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long r = strtol(s, &end, 10);
    double d = (*end == ':') ? strtod(end + 1, &end) : -1;
    if (errno || *end || r < 0 || r > INT_MAX || !isfinite(d) || d < 0 || d > 3600)
        return opt_error(err, errlen, "--%s '%s' must be RANK:SECONDS", option, s);
    *rank = (int)r;
    *seconds = d;
    return 0;
}

static int parse_straggler(void *dest, const char *s, char *err, size_t errlen)
{
    struct pario_options *o = &((struct cli *)dest)->opt;
    return rank_seconds(s, "straggler", &o->straggler_rank, &o->straggler_s, err, errlen);
}

static int parse_stall(void *dest, const char *s, char *err, size_t errlen)
{
    struct pario_read_options *r = &((struct cli *)dest)->rd;
    return rank_seconds(s, "stall", &r->stall_rank, &r->stall_s, err, errlen);
}

#define AT(field) offsetof(struct cli, field)

/* In the order of --help. */
static const struct opt_spec rows[] = {
    {.name = "op", .metavar = "write|read", .help = "what the run does: write files, or read them back",
     .kind = OPT_CHOICE, .offset = AT(op), .choices = "write|read", .flags = OPT_REQUIRED},
    {.name = "mode", .metavar = "MODE", .help = "write: benchio or model; read: mpiio or tasks (see below)", .kind = OPT_CHOICE,
     .offset = AT(mode), .choices = "benchio|model|mpiio|tasks", .def = "write: required; read: mpiio"},
    {.name = "dir", .metavar = "DIR", .help = "where the files are written (must exist; write, read --mode mpiio)",
     .kind = OPT_STRING, .offset = AT(opt.dir), .groups = WRITE | MPIIO},
    {.name = "backends", .metavar = "LIST", .help = "comma list of the backends below", .kind = OPT_CALL,
     .handler = parse_backends, .def = PARIO_BACKEND_LIST, .groups = WRITE | MPIIO},
    {.name = "reps", .metavar = "N", .help = "repetitions of each configuration (read: cold)", .kind = OPT_U64,
     .offset = AT(opt.reps), .min = 1, .def = "write 10, read 3"},
    {.name = "hint", .metavar = "KEY=VALUE", .help = "MPI-IO hint for every file open (repeatable)",
     .kind = OPT_CALL, .handler = add_hint, .groups = WRITE | MPIIO},
    {.name = "hints-file", .metavar = "FILE", .help = "hints, one KEY=VALUE (or KEY VALUE) a line; --hint wins",
     .kind = OPT_STRING, .offset = AT(hints_file), .groups = WRITE | MPIIO},
    {.name = "keep", .help = "leave the files of the last repetition", .kind = OPT_SET, .offset = AT(opt.keep),
     .groups = WRITE | MPIIO},
    {.name = "platform-id", .metavar = "ID", .help = "copied into the records", .kind = OPT_TEXT,
     .offset = AT(opt.platform_id)},
    {.help = " writing (--op write):"},
    {.name = "strategies", .metavar = "LIST", .help = "comma list of shared, file-per-process, file-per-node, serial",
     .kind = OPT_CALL, .handler = parse_strategies, .def = "all; model mode: no file-per-node", .groups = WRITE},
    {.name = "fsync", .help = "sync before close, timed as a phase of its own", .kind = OPT_SET,
     .offset = AT(opt.fsync), .groups = WRITE},
    {.name = "no-verify", .help = "do not read the files back", .kind = OPT_CLEAR, .offset = AT(opt.verify),
     .groups = WRITE},
    {.name = "independent", .help = "write the big arrays with independent calls", .kind = OPT_SET,
     .offset = AT(opt.independent), .groups = WRITE},
    {.help = "  mode benchio (EPCC benchio):"},
    {.name = "local", .metavar = "n1,n2,n3", .help = "weak scaling: each rank's block", .kind = OPT_U64S,
     .offset = AT(opt.local), .n = 3, .min = 1, .def = "128,128,128", .groups = BENCHIO},
    {.name = "global", .metavar = "N1,N2,N3", .help = "strong scaling: the array split over the ranks",
     .kind = OPT_U64S, .offset = AT(opt.global), .n = 3, .min = 1, .groups = BENCHIO},
    {.help = "  mode model (the model-output emulator):"},
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
    {.help = " reading (--op read):"},
    {.name = "buffer", .metavar = "BYTES", .help = "bytes per get (a multiple of 8)", .kind = OPT_U64,
     .offset = AT(rd.buffer), .min = 8, .def = "1048576", .groups = READ},
    {.help = "  mode mpiio (experiment B, one shared file through a backend; the default):"},
    {.name = "size", .metavar = "BYTES", .help = "bytes of the float64 variable", .kind = OPT_CALL,
     .handler = parse_size, .def = "67108864", .groups = MPIIO},
    {.name = "patterns", .metavar = "LIST", .help = "sequential,striding", .kind = OPT_CALL,
     .handler = parse_patterns, .def = "both", .groups = MPIIO},
    {.name = "access", .metavar = "LIST", .help = "independent,collective", .kind = OPT_CALL,
     .handler = parse_access, .def = "both", .groups = MPIIO},
    {.name = "settle", .metavar = "SECONDS", .help = "wait after writing a file before reading it (storage below a VM "
     "may still be writing it back)", .kind = OPT_NUMBER, .offset = AT(rd.settle_s), .def = "0", .groups = MPIIO},
    {.help = "  mode tasks (experiment A, independent tasks):"},
    {.name = "stack", .metavar = "c-posix|c-netcdf", .help = "pread(2) of a raw file, or nc_get_vara_double",
     .kind = OPT_CHOICE, .offset = AT(rd.stack), .choices = "c-posix|c-netcdf", .def = "c-posix", .groups = TASKS},
    {.name = "files", .metavar = "PATH", .help = "the file of each rank, %d = rank (or one file with --split)",
     .kind = OPT_STRING, .offset = AT(rd.files), .groups = TASKS},
    {.name = "split", .help = "one shared file, rank r reads its contiguous r-th of N pieces", .kind = OPT_SET,
     .offset = AT(rd.split), .groups = TASKS},
    {.name = "file-set", .metavar = "NAME", .help = "recorded as params.file_set", .kind = OPT_STRING,
     .offset = AT(rd.file_set), .groups = TASKS},
    {.name = "var", .metavar = "NAME", .help = "netCDF variable", .kind = OPT_STRING, .offset = AT(rd.var),
     .def = "var", .groups = TASKS},
    {.help = " diagnostics:"},
    {.name = "straggler", .metavar = "RANK:SECONDS", .help = "that rank's write phases last SECONDS longer",
     .kind = OPT_CALL, .handler = parse_straggler, .groups = WRITE},
    {.name = "verify-access", .metavar = "independent|collective", .help = "how benchio reads its files back",
     .kind = OPT_CHOICE, .offset = AT(opt.verify_collective), .choices = "independent|collective",
     .def = "independent", .groups = WRITE},
    {.name = "stall", .metavar = "RANK:SECONDS", .help = "that rank sleeps SECONDS inside its read phase",
     .kind = OPT_CALL, .handler = parse_stall, .groups = READ},
    {.name = "version", .help = "print the library versions as JSON and exit", .kind = OPT_SET,
     .offset = AT(version), .flags = OPT_ALONE},
    {.name = "list", .help = "print the backends, NAME<TAB>DESCRIPTION a line, and exit", .kind = OPT_SET,
     .offset = AT(list), .flags = OPT_ALONE},
    {.name = "help", .short_name = 'h', .help = "print this help and exit", .kind = OPT_SET, .offset = AT(help),
     .flags = OPT_ALONE},
};
#define NROWS (sizeof rows / sizeof rows[0])

static const struct opt_table table = {PARIO_PROGRAM, rows, NROWS, WRITE | READ};

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

/* --op write: the mode's own checks (--local vs --global, --chunk against --grid, strategies). */
static int write_checks(struct cli *c, const unsigned *seen, char *err, size_t errlen)
{
    struct pario_options *o = &c->opt;
    if (!o->dir)
        return opt_error(err, errlen, "--dir DIR is required");
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

/* --op read: whole float64 elements, and what each mode needs. */
static int read_checks(struct cli *c, char *err, size_t errlen)
{
    struct pario_read_options *r = &c->rd;
    if (r->buffer % 8)
        return opt_error(err, errlen, "--buffer %llu is not a multiple of 8 (float64 elements)",
                         (unsigned long long)r->buffer);
    if (c->opt.mode == MODE_MPIIO) {
        if (!c->opt.dir)
            return opt_error(err, errlen, "--mode mpiio needs --dir");
        if (r->size % 8)
            return opt_error(err, errlen, "--size %llu is not a multiple of 8 (float64 elements)",
                             (unsigned long long)r->size);
    } else {
        if (!r->files)
            return opt_error(err, errlen, "--mode tasks needs --files");
        if (!r->file_set)
            r->file_set = r->split ? "shared" : "per-task";
    }
    return 0;
}

int options_parse(int argc, char **argv, struct cli *c, char *err, size_t errlen)
{
    struct pario_options *o = &c->opt;
    struct pario_read_options *r = &c->rd;
    unsigned seen[NROWS];

    memset(c, 0, sizeof *c);
    c->mode = -1;
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
    r->buffer = 1 << 20;
    r->size = 64 << 20;
    r->var = "var";
    r->stall_rank = -1;
    r->patterns[0] = PAT_SEQUENTIAL; r->patterns[1] = PAT_STRIDING; r->npatterns = 2;
    r->access[0] = ACC_INDEPENDENT; r->access[1] = ACC_COLLECTIVE; r->naccess = 2;

    if (opt_parse(&table, argc, argv, c, seen, err, errlen) != 0)
        return -1;
    if (c->version || c->help || c->list)
        return 0;
    const char *op = c->op == OP_READ ? "read" : "write";
    unsigned ops = c->op == OP_READ ? READ : WRITE;
    if (c->mode < 0) {
        if (c->op == OP_WRITE)
            return opt_error(err, errlen, "--mode benchio|model is required with --op write");
        c->mode = MODE_MPIIO;
    }
    if (!(ops & (1u << c->mode)))
        return opt_error(err, errlen, "--mode %s does not apply to --op %s (choose %s)", mode_names[c->mode], op,
                         c->op == OP_READ ? "mpiio or tasks" : "benchio or model");
    o->mode = (enum pario_mode)c->mode;
    if (!opt_count(&table, seen, "reps"))
        o->reps = c->op == OP_READ ? 3 : 10;
    o->n3d = c->vars[0]; o->n2d = c->vars[1]; o->nrestart = c->vars[2];

    /* An option of another mode would be silently ignored: refuse it instead. */
    for (size_t i = 0; i < NROWS; i++)
        if (seen[i] && rows[i].groups && !(rows[i].groups & (1u << o->mode)))
            return opt_error(err, errlen, "--%s does not apply to --mode %s", rows[i].name, mode_names[o->mode]);
    return c->op == OP_READ ? read_checks(c, err, errlen) : write_checks(c, seen, err, errlen);
}
