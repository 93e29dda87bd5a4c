#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

enum {
    OPT_FILE = 256, OPT_VAR, OPT_PATTERNS, OPT_BUFFERS, OPT_REPS, OPT_CACHE, OPT_RANDOM_COUNT,
    OPT_SEED, OPT_BUDGET, OPT_MAX_OPS, OPT_VERIFY, OPT_PRINT_OFFSETS, OPT_PLATFORM_ID,
    OPT_VERSION, OPT_API, OPT_ODIRECT, OPT_HELP, OPT_SLICES, OPT_CHUNK_CACHE, OPT_LABEL
};

struct option_spec {
    struct option opt;
    unsigned only;     /* 0: every probe; else ARGS_*_OPTIONS */
    const char *help;  /* line of --help, or NULL */
};

/* In the order of --help. */
static const struct option_spec specs[] = {
    {{"file", required_argument, NULL, OPT_FILE}, 0, NULL},
    {{"patterns", required_argument, NULL, OPT_PATTERNS}, ARGS_PLAN_OPTIONS,
     "  --patterns LIST      " PATTERN_NAMES " (default all three)"},
    {{"buffers", required_argument, NULL, OPT_BUFFERS}, ARGS_PLAN_OPTIONS,
     "  --buffers LIST       read sizes in bytes, comma separated (required)"},
    {{"reps", required_argument, NULL, OPT_REPS}, 0,
     "  --reps N             repetitions per configuration (default 3)"},
    {{"cache", required_argument, NULL, OPT_CACHE}, 0,
     "  --cache cold|warm    page-cache state before each repetition (default cold)"},
    {{"random-count", required_argument, NULL, OPT_RANDOM_COUNT}, ARGS_PLAN_OPTIONS,
     "  --random-count N     reads of the random pattern (default 100)"},
    {{"seed", required_argument, NULL, OPT_SEED}, ARGS_PLAN_OPTIONS,
     "  --seed S             splitmix64 seed of the random pattern (default 1)"},
    {{"budget", required_argument, NULL, OPT_BUDGET}, 0,
     "  --budget SECONDS     time budget per repetition, 0 = none (default 60)"},
    {{"max-ops", required_argument, NULL, OPT_MAX_OPS}, ARGS_PLAN_OPTIONS,
     "  --max-ops N          stop each repetition after N reads, 0 = no limit"},
    {{"verify", no_argument, NULL, OPT_VERIFY}, 0,
     "  --verify             add the stream checksum of the delivered bytes"},
    {{"print-offsets", no_argument, NULL, OPT_PRINT_OFFSETS}, ARGS_PLAN_OPTIONS,
     "  --print-offsets      print the planned \"offset length\" reads and exit"},
    {{"platform-id", required_argument, NULL, OPT_PLATFORM_ID}, 0,
     "  --platform-id ID     copied into the records"},
    {{"version", no_argument, NULL, OPT_VERSION}, 0,
     "  --version            print the library versions as JSON and exit"},
    {{"help", no_argument, NULL, OPT_HELP}, 0, NULL},
    {{"var", required_argument, NULL, OPT_VAR}, ARGS_NETCDF_OPTIONS,
     "  --var NAME           1-D double variable to read (default data)"},
    {{"var", required_argument, NULL, OPT_VAR}, ARGS_SLAB_OPTIONS,
     "  --var NAME           variable to read: 1 to 8 dimensions, any numeric type (required)"},
    {{"slices", required_argument, NULL, OPT_SLICES}, ARGS_SLAB_OPTIONS,
     "  --slices FILE        hyperslabs, one a line: n starts then n counts (required)"},
    {{"chunk-cache", required_argument, NULL, OPT_CHUNK_CACHE}, ARGS_SLAB_OPTIONS,
     "  --chunk-cache SPEC   default, or BYTES,NELEMS,PREEMPTION for nc_set_var_chunk_cache"},
    {{"label", required_argument, NULL, OPT_LABEL}, ARGS_SLAB_OPTIONS,
     "  --label KEY=VALUE    add a string to the records' params (repeatable)"},
    {{"api", required_argument, NULL, OPT_API}, ARGS_POSIX_OPTIONS,
     "  --api read|fread     read(2) or unbuffered stdio fread (default read)"},
    {{"odirect", no_argument, NULL, OPT_ODIRECT}, ARGS_POSIX_OPTIONS,
     "  --odirect            open with O_DIRECT (4096-aligned random offsets)"},
};
#define NSPECS (sizeof specs / sizeof specs[0])

static int enabled(const struct option_spec *s, unsigned extra)
{
    return !s->only || (s->only & extra);
}

static void usage(unsigned extra)
{
    if (extra & ARGS_SLAB_OPTIONS)
        printf("usage: %s --file PATH --var NAME --slices FILE [options]\n", fail_program());
    else
        printf("usage: %s --file PATH --buffers B1,B2,...%s [options]\n", fail_program(),
               (extra & ARGS_NETCDF_OPTIONS) ? " [--var NAME]" : "");
    for (size_t i = 0; i < NSPECS; i++)
        if (specs[i].help && enabled(&specs[i], extra))
            printf("%s\n", specs[i].help);
    exit(0);
}

uint64_t args_u64(const char *text, const char *what)
{
    char *end;
    if (!text || !isdigit((unsigned char)text[0]))
        fail("%s must be a non-negative integer, not '%s'", what, text ? text : "");
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE || *end != '\0')
        fail("%s must be a non-negative integer, not '%s'", what, text);
    return (uint64_t)v;
}

static uint64_t positive_u64(const char *text, const char *what)
{
    uint64_t v = args_u64(text, what);
    if (v == 0)
        fail("%s must be at least 1, not '%s'", what, text);
    return v;
}

double args_seconds(const char *text, const char *what)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0)
        fail("%s must be a non-negative number of seconds, not '%s'", what, text);
    return v;
}

/* The Python side takes any integer seed modulo 2^64; so does the probe. */
static uint64_t parse_seed(const char *text)
{
    if (text[0] == '-') {
        uint64_t mag = args_u64(text + 1, "--seed");
        return (uint64_t)0 - mag;
    }
    return args_u64(text, "--seed");
}

/* Split a comma list into a NULL-terminated array of items (in a copy of text). */
static char **split_list(const char *text, const char *what, size_t *count, char **storage)
{
    char *copy = strdup(text);
    size_t n = 1;
    if (!copy)
        fail("out of memory");
    for (const char *p = text; *p; p++)
        n += *p == ',';
    char **items = calloc(n + 1, sizeof *items);
    if (!items)
        fail("out of memory");
    size_t k = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *e = tok + strlen(tok);
        while (e > tok && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (*tok)
            items[k++] = tok;
    }
    if (k == 0)
        fail("%s needs at least one value, got '%s'", what, text);
    *count = k;
    *storage = copy;
    return items;
}

static void parse_patterns(const char *text, struct probe_args *a)
{
    char *storage;
    size_t n;
    char **items = split_list(text, "--patterns", &n, &storage);
    enum pattern *pats = calloc(n, sizeof *pats);
    if (!pats)
        fail("out of memory");
    for (size_t i = 0; i < n; i++)
        if (pattern_parse(items[i], &pats[i]) != 0)
            fail("unknown pattern '%s': choose from %s", items[i], PATTERN_NAMES);
    free(a->patterns);
    a->patterns = pats;
    a->npatterns = n;
    free(items);
    free(storage);
}

static void parse_buffers(const char *text, struct probe_args *a)
{
    char *storage;
    size_t n;
    char **items = split_list(text, "--buffers", &n, &storage);
    uint64_t *bufs = calloc(n, sizeof *bufs);
    if (!bufs)
        fail("out of memory");
    for (size_t i = 0; i < n; i++) {
        bufs[i] = positive_u64(items[i], "buffer size");
        if (bufs[i] > ((uint64_t)1 << 48))
            fail("buffer size %s is too large", items[i]);
    }
    free(a->buffers);
    a->buffers = bufs;
    a->nbuffers = n;
    free(items);
    free(storage);
}

/* "default" (the library's chunk cache) or BYTES,NELEMS,PREEMPTION, PREEMPTION in [0, 1]. */
static void parse_chunk_cache(const char *text, struct probe_args *a)
{
    static const char *const what = "--chunk-cache";
    if (strcmp(text, "default") == 0) {
        a->chunk_cache_set = 0;
        return;
    }
    char *storage;
    size_t n;
    char **items = split_list(text, what, &n, &storage);
    if (n != 3)
        fail("%s must be default or BYTES,NELEMS,PREEMPTION, not '%s'", what, text);
    a->chunk_cache_bytes = args_u64(items[0], "--chunk-cache BYTES");
    a->chunk_cache_nelems = args_u64(items[1], "--chunk-cache NELEMS");
    char *end;
    errno = 0;
    double p = strtod(items[2], &end);
    if (end == items[2] || *end != '\0' || errno == ERANGE || !(p >= 0.0 && p <= 1.0))
        fail("--chunk-cache PREEMPTION must be a number from 0 to 1, not '%s'", items[2]);
    a->chunk_cache_preemption = p;
    a->chunk_cache_set = 1;
    free(items);
    free(storage);
}

static void add_label(const char *text, struct probe_args *a)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        fail("--label must be KEY=VALUE with a non-empty KEY, not '%s'", text);
    char *key = strdup(text);
    struct args_label *labels = realloc(a->labels, (a->nlabels + 1) * sizeof *labels);
    if (!key || !labels)
        fail("out of memory");
    a->labels = labels;
    key[eq - text] = '\0';
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i].key, key) == 0)
            fail("--label %s given twice", key);
    a->labels[a->nlabels].key = key;
    a->labels[a->nlabels].value = key + (eq - text) + 1;
    a->nlabels++;
}

static void set_defaults(struct probe_args *a)
{
    memset(a, 0, sizeof *a);
    a->reps = 3;
    a->random_count = 100;
    a->seed = 1;
    a->budget_s = 60.0;
    a->platform_id = "";
}

void args_parse(int argc, char **argv, unsigned extra, struct probe_args *a)
{
    struct option longopts[NSPECS + 1];
    size_t n = 0;
    int c;

    set_defaults(a);
    for (size_t i = 0; i < NSPECS; i++)
        if (enabled(&specs[i], extra))
            longopts[n++] = specs[i].opt;
    memset(&longopts[n], 0, sizeof longopts[n]);

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_FILE:
            if (!*optarg)
                fail("--file needs a path");
            a->file = optarg;
            break;
        case OPT_VAR:
            if (!*optarg)
                fail("--var needs a variable name");
            a->var = optarg;
            break;
        case OPT_PATTERNS: parse_patterns(optarg, a); break;
        case OPT_BUFFERS: parse_buffers(optarg, a); break;
        case OPT_REPS: a->reps = positive_u64(optarg, "--reps"); break;
        case OPT_CACHE:
            if (strcmp(optarg, "cold") == 0)
                a->cache_warm = 0;
            else if (strcmp(optarg, "warm") == 0)
                a->cache_warm = 1;
            else
                fail("--cache must be cold or warm, not '%s'", optarg);
            break;
        case OPT_RANDOM_COUNT: a->random_count = positive_u64(optarg, "--random-count"); break;
        case OPT_SEED: a->seed = parse_seed(optarg); break;
        case OPT_BUDGET: a->budget_s = args_seconds(optarg, "--budget"); break;
        case OPT_MAX_OPS: a->max_ops = args_u64(optarg, "--max-ops"); break;
        case OPT_VERIFY: a->verify = 1; break;
        case OPT_PRINT_OFFSETS: a->print_offsets = 1; break;
        case OPT_PLATFORM_ID: a->platform_id = optarg; break;
        case OPT_VERSION: a->version = 1; break;
        case OPT_API:
            if (strcmp(optarg, "read") == 0)
                a->use_fread = 0;
            else if (strcmp(optarg, "fread") == 0)
                a->use_fread = 1;
            else
                fail("--api must be read or fread, not '%s'", optarg);
            break;
        case OPT_ODIRECT: a->odirect = 1; break;
        case OPT_SLICES:
            if (!*optarg)
                fail("--slices needs a path");
            a->slices = optarg;
            break;
        case OPT_CHUNK_CACHE: parse_chunk_cache(optarg, a); break;
        case OPT_LABEL: add_label(optarg, a); break;
        case OPT_HELP: usage(extra); break;
        case ':':
            fail("option %s needs a value", argv[optind - 1]);
        case '?':
        default:
            if (optopt && optopt < 256)
                fail("unknown option -%c (see --help)", optopt);
            fail("unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s' (see --help)", argv[optind]);
    if (!a->var && (extra & ARGS_NETCDF_OPTIONS))
        a->var = "data";
    if (a->version)
        return;
    if (!a->file)
        fail("--file PATH is required");
    if (extra & ARGS_SLAB_OPTIONS) {
        if (!a->var)
            fail("--var NAME is required");
        if (!a->slices)
            fail("--slices FILE is required (hyperslabs, one a line)");
    }
    if (!(extra & ARGS_PLAN_OPTIONS))
        return;
    if (!a->nbuffers)
        fail("--buffers LIST is required (read sizes in bytes)");
    if (!a->npatterns) {
        a->npatterns = 3;
        a->patterns = calloc(3, sizeof *a->patterns);
        if (!a->patterns)
            fail("out of memory");
        a->patterns[0] = PATTERN_SEQUENTIAL;
        a->patterns[1] = PATTERN_STRIDED;
        a->patterns[2] = PATTERN_RANDOM;
    }
}

void args_free(struct probe_args *a)
{
    free(a->patterns);
    free(a->buffers);
    for (size_t i = 0; i < a->nlabels; i++)
        free(a->labels[i].key);
    free(a->labels);
    a->patterns = NULL;
    a->buffers = NULL;
    a->labels = NULL;
    a->nlabels = 0;
}
