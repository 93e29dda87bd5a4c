#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

void options_usage(FILE *fp)
{
    fprintf(fp,
        "usage: " PARIO_PROGRAM " --mode benchio|model --dir DIR [--backends mpiio,hdf5,netcdf4,pnetcdf]\n"
        "         [--strategies shared,file-per-process,file-per-node,serial] [--reps N]\n"
        "         [--hint KEY=VALUE]... [--hints-file FILE] [--fsync] [--no-verify] [--keep] [--independent]\n"
        "         [--platform-id ID]\n"
        "  benchio: [--local n1,n2,n3 | --global N1,N2,N3]\n"
        "  model:   [--grid nx,ny,nz] [--nt N] [--decomposition px,py] [--io-layout ix,iy]\n"
        "           [--small collective|independent] [--chunk default|contiguous|CKX,CKY]\n"
        "           [--vars N3D,N2D,NRESTART] [--select RMS]\n"
        "   diagnostic: [--straggler RANK:SECONDS] (that rank's write phases last SECONDS longer)\n"
        "       " PARIO_PROGRAM " --version\n");
}

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_u64(const char *s, uint64_t min, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min)
        return -1;
    *out = v;
    return 0;
}

/* Exactly n comma-separated integers >= min. */
static int parse_list(const char *s, int n, uint64_t min, uint64_t *out)
{
    char buf[256];
    char *save = NULL, *tok;
    int k = 0;
    if (strlen(s) >= sizeof buf || strstr(s, ",,") || s[0] == ',' || s[strlen(s) - 1] == ',')
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (k >= n || parse_u64(tok, min, &out[k]) != 0)
            return -1;
        k++;
    }
    return k == n ? 0 : -1;
}

static int parse_ints(const char *s, int n, uint64_t min, uint64_t max, int *out)
{
    uint64_t v[4];
    if (parse_list(s, n, min, v) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (v[i] > max)
            return -1;
        out[i] = (int)v[i];
    }
    return 0;
}

enum {
    O_MODE = 256, O_DIR, O_BACKENDS, O_STRATEGIES, O_REPS, O_HINT, O_HINTS_FILE, O_FSYNC, O_NO_VERIFY,
    O_KEEP, O_INDEPENDENT, O_PLATFORM, O_LOCAL, O_GLOBAL, O_GRID, O_NT, O_DECOMP, O_IO_LAYOUT, O_SMALL,
    O_CHUNK, O_VARS, O_SELECT, O_STRAGGLER, O_VERSION, O_HELP, O_END
};

static const struct option longopts[] = {
    {"mode", required_argument, NULL, O_MODE},
    {"dir", required_argument, NULL, O_DIR},
    {"backends", required_argument, NULL, O_BACKENDS},
    {"strategies", required_argument, NULL, O_STRATEGIES},
    {"reps", required_argument, NULL, O_REPS},
    {"hint", required_argument, NULL, O_HINT},
    {"hints-file", required_argument, NULL, O_HINTS_FILE},
    {"fsync", no_argument, NULL, O_FSYNC},
    {"no-verify", no_argument, NULL, O_NO_VERIFY},
    {"keep", no_argument, NULL, O_KEEP},
    {"independent", no_argument, NULL, O_INDEPENDENT},
    {"platform-id", required_argument, NULL, O_PLATFORM},
    {"local", required_argument, NULL, O_LOCAL},
    {"global", required_argument, NULL, O_GLOBAL},
    {"grid", required_argument, NULL, O_GRID},
    {"nt", required_argument, NULL, O_NT},
    {"decomposition", required_argument, NULL, O_DECOMP},
    {"io-layout", required_argument, NULL, O_IO_LAYOUT},
    {"small", required_argument, NULL, O_SMALL},
    {"chunk", required_argument, NULL, O_CHUNK},
    {"vars", required_argument, NULL, O_VARS},
    {"select", required_argument, NULL, O_SELECT},
    {"straggler", required_argument, NULL, O_STRAGGLER},
    {"version", no_argument, NULL, O_VERSION},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static const char *optname(int code)
{
    for (const struct option *o = longopts; o->name; o++)
        if (o->val == code)
            return o->name;
    return "?";
}

static int parse_backends(const char *s, struct cli *c, char *err, size_t errlen)
{
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof buf)
        return bad(err, errlen, "--backends too long");
    snprintf(buf, sizeof buf, "%s", s);
    c->nbackends = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const struct pario_backend *b = pario_backend_named(t);
        if (!b)
            return bad(err, errlen, "unknown backend '%s': choose from mpiio, hdf5, netcdf4, pnetcdf", t);
        for (int i = 0; i < c->nbackends; i++)
            if (c->backends[i] == b)
                return bad(err, errlen, "backend '%s' listed twice in --backends", t);
        c->backends[c->nbackends++] = b;
    }
    if (c->nbackends == 0)
        return bad(err, errlen, "--backends is empty");
    return 0;
}

static int parse_strategies(const char *s, struct cli *c, char *err, size_t errlen)
{
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof buf)
        return bad(err, errlen, "--strategies too long");
    snprintf(buf, sizeof buf, "%s", s);
    c->nstrategies = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; i < STRATEGY_COUNT; i++)
            if (strcmp(strategy_names[i], t) == 0)
                k = i;
        if (k < 0)
            return bad(err, errlen, "unknown strategy '%s': choose from shared, file-per-process, file-per-node, serial", t);
        for (int i = 0; i < c->nstrategies; i++)
            if ((int)c->strategies[i] == k)
                return bad(err, errlen, "strategy '%s' listed twice in --strategies", t);
        c->strategies[c->nstrategies++] = (enum pario_strategy)k;
    }
    if (c->nstrategies == 0)
        return bad(err, errlen, "--strategies is empty");
    return 0;
}

int options_parse(int argc, char **argv, struct cli *c, char *err, size_t errlen)
{
    struct pario_options *o = &c->opt;
    int seen[O_END] = {0};
    const char *mode = NULL, *chunk = NULL;
    int opt;

    memset(c, 0, sizeof *c);
    o->reps = 10;
    o->straggler_rank = -1;
    o->verify = 1;
    o->platform_id = "";
    o->local[0] = o->local[1] = o->local[2] = 128;
    o->grid[0] = 192; o->grid[1] = 128; o->grid[2] = 20;
    o->nt = 4;
    o->n3d = 4; o->n2d = 3; o->nrestart = 2;
    o->chunking.kind = PARIO_CHUNK_DEFAULT;
    for (int i = 0; i < 4; i++)
        c->backends[i] = pario_backend_named((const char *[]){"mpiio", "hdf5", "netcdf4", "pnetcdf"}[i]);
    c->nbackends = 4;

    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (opt == '?')
            return bad(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
        if (opt == ':')
            return bad(err, errlen, "option '%s' needs a value", argv[optind - 1]);
        if (opt >= O_MODE && opt < O_END)
            seen[opt]++;
        switch (opt) {
        case O_MODE: mode = optarg; break;
        case O_DIR: o->dir = optarg; break;
        case O_BACKENDS: if (parse_backends(optarg, c, err, errlen)) return -1; break;
        case O_STRATEGIES: if (parse_strategies(optarg, c, err, errlen)) return -1; break;
        case O_REPS:
            if (parse_u64(optarg, 1, &o->reps))
                return bad(err, errlen, "--reps '%s' must be an integer >= 1", optarg);
            break;
        case O_HINT:
            if (c->nhints >= CLI_MAX_HINTS)
                return bad(err, errlen, "more than %d --hint options", CLI_MAX_HINTS);
            c->hint_items[c->nhints++] = optarg;
            break;
        case O_HINTS_FILE: c->hints_file = optarg; break;
        case O_FSYNC: o->fsync = 1; break;
        case O_NO_VERIFY: o->verify = 0; break;
        case O_KEEP: o->keep = 1; break;
        case O_INDEPENDENT: o->independent = 1; break;
        case O_PLATFORM: o->platform_id = optarg; break;
        case O_LOCAL:
            if (parse_list(optarg, 3, 1, o->local))
                return bad(err, errlen, "--local '%s' must be 3 comma-separated integers >= 1", optarg);
            break;
        case O_GLOBAL:
            if (parse_list(optarg, 3, 1, o->global))
                return bad(err, errlen, "--global '%s' must be 3 comma-separated integers >= 1", optarg);
            break;
        case O_GRID:
            if (parse_list(optarg, 3, 1, o->grid))
                return bad(err, errlen, "--grid '%s' must be 3 comma-separated integers >= 1", optarg);
            break;
        case O_NT:
            if (parse_u64(optarg, 1, &o->nt))
                return bad(err, errlen, "--nt '%s' must be an integer >= 1", optarg);
            break;
        case O_DECOMP:
            if (parse_ints(optarg, 2, 1, 1u << 20, o->layout))
                return bad(err, errlen, "--decomposition '%s' must be 2 comma-separated integers >= 1", optarg);
            break;
        case O_IO_LAYOUT:
            if (parse_ints(optarg, 2, 1, 1u << 20, o->io_layout))
                return bad(err, errlen, "--io-layout '%s' must be 2 comma-separated integers >= 1", optarg);
            break;
        case O_SMALL:
            if (strcmp(optarg, "collective") == 0)
                o->small_independent = 0;
            else if (strcmp(optarg, "independent") == 0)
                o->small_independent = 1;
            else
                return bad(err, errlen, "unknown --small '%s': use collective or independent", optarg);
            break;
        case O_CHUNK: chunk = optarg; break;
        case O_VARS: {
            int v[3];
            if (parse_ints(optarg, 3, 0, PARIO_MAX_VARS, v))
                return bad(err, errlen, "--vars '%s' must be 3 comma-separated integers >= 0 (N3D,N2D,NRESTART)", optarg);
            o->n3d = v[0]; o->n2d = v[1]; o->nrestart = v[2];
            break;
        }
        case O_SELECT: {
            char *end;
            errno = 0;
            double d = strtod(optarg, &end);
            if (errno || *end || !*optarg || !isfinite(d) || d < 0)
                return bad(err, errlen, "--select '%s' must be a non-negative number (RMS threshold)", optarg);
            o->select_threshold = d;
            break;
        }
        case O_STRAGGLER: {
            char *end;
            errno = 0;
            long r = strtol(optarg, &end, 10);
            double d = (*end == ':') ? strtod(end + 1, &end) : -1;
            if (errno || *end || r < 0 || r > INT_MAX || !isfinite(d) || d < 0 || d > 3600)
                return bad(err, errlen, "--straggler '%s' must be RANK:SECONDS", optarg);
            o->straggler_rank = (int)r;
            o->straggler_s = d;
            break;
        }
        case O_VERSION: c->version = 1; break;
        case O_HELP: c->help = 1; break;
        default: return bad(err, errlen, "unexpected option (see --help)");
        }
    }
    if (optind < argc)
        return bad(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
    if (c->version || c->help)
        return 0;

    if (!mode)
        return bad(err, errlen, "--mode is required: benchio or model");
    if (strcmp(mode, "benchio") == 0)
        o->mode = MODE_BENCHIO;
    else if (strcmp(mode, "model") == 0)
        o->mode = MODE_MODEL;
    else
        return bad(err, errlen, "unknown --mode '%s': use benchio or model", mode);
    if (!o->dir || !o->dir[0])
        return bad(err, errlen, "--dir is required");

    /* An option of the other mode would be silently ignored: refuse it instead. */
    static const int benchio_only[] = {O_LOCAL, O_GLOBAL};
    static const int model_only[] = {O_GRID, O_NT, O_DECOMP, O_IO_LAYOUT, O_SMALL, O_CHUNK, O_VARS, O_SELECT};
    const int *other = o->mode == MODE_BENCHIO ? model_only : benchio_only;
    size_t nother = o->mode == MODE_BENCHIO ? sizeof model_only / sizeof model_only[0]
                                            : sizeof benchio_only / sizeof benchio_only[0];
    for (size_t i = 0; i < nother; i++)
        if (seen[other[i]])
            return bad(err, errlen, "--%s does not apply to --mode %s", optname(other[i]), mode);

    if (o->mode == MODE_BENCHIO) {
        if (seen[O_LOCAL] && seen[O_GLOBAL])
            return bad(err, errlen, "give --local (weak scaling) or --global (strong scaling), not both");
        if (seen[O_GLOBAL])
            o->local[0] = o->local[1] = o->local[2] = 0;   /* known once the process grid is */
    } else if (chunk) {
        if (strcmp(chunk, "default") == 0) {
            o->chunking.kind = PARIO_CHUNK_DEFAULT;
        } else if (strcmp(chunk, "contiguous") == 0) {
            o->chunking.kind = PARIO_CHUNK_CONTIGUOUS;
        } else {
            uint64_t ck[2];
            if (parse_list(chunk, 2, 1, ck))
                return bad(err, errlen, "--chunk '%s' must be default, contiguous or CKX,CKY (integers >= 1)", chunk);
            o->chunking.kind = PARIO_CHUNK_GIVEN;
            o->chunking.chunk[0] = 1;
            o->chunking.chunk[1] = o->grid[2];
            o->chunking.chunk[2] = ck[1];
            o->chunking.chunk[3] = ck[0];
        }
    }
    if (!seen[O_STRATEGIES]) {
        /* model mode has no file-per-node strategy (parallel_write.MODEL_STRATEGIES) */
        c->nstrategies = 0;
        for (int i = 0; i < STRATEGY_COUNT; i++)
            if (o->mode == MODE_BENCHIO || i != STRATEGY_FILE_PER_NODE)
                c->strategies[c->nstrategies++] = (enum pario_strategy)i;
    }
    return 0;
}
