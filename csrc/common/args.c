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
    OPT_VERSION, OPT_API, OPT_ODIRECT, OPT_HELP
};

struct option_spec {
    struct option opt;
    unsigned only;   /* 0: every probe; else ARGS_*_OPTIONS */
};

static const struct option_spec specs[] = {
    {{"file", required_argument, NULL, OPT_FILE}, 0},
    {{"patterns", required_argument, NULL, OPT_PATTERNS}, 0},
    {{"buffers", required_argument, NULL, OPT_BUFFERS}, 0},
    {{"reps", required_argument, NULL, OPT_REPS}, 0},
    {{"cache", required_argument, NULL, OPT_CACHE}, 0},
    {{"random-count", required_argument, NULL, OPT_RANDOM_COUNT}, 0},
    {{"seed", required_argument, NULL, OPT_SEED}, 0},
    {{"budget", required_argument, NULL, OPT_BUDGET}, 0},
    {{"max-ops", required_argument, NULL, OPT_MAX_OPS}, 0},
    {{"verify", no_argument, NULL, OPT_VERIFY}, 0},
    {{"print-offsets", no_argument, NULL, OPT_PRINT_OFFSETS}, 0},
    {{"platform-id", required_argument, NULL, OPT_PLATFORM_ID}, 0},
    {{"version", no_argument, NULL, OPT_VERSION}, 0},
    {{"help", no_argument, NULL, OPT_HELP}, 0},
    {{"var", required_argument, NULL, OPT_VAR}, ARGS_NETCDF_OPTIONS},
    {{"api", required_argument, NULL, OPT_API}, ARGS_POSIX_OPTIONS},
    {{"odirect", no_argument, NULL, OPT_ODIRECT}, ARGS_POSIX_OPTIONS},
};
#define NSPECS (sizeof specs / sizeof specs[0])

static void usage(unsigned extra)
{
    printf("usage: %s --file PATH --buffers B1,B2,...%s [options]\n", fail_program(),
           (extra & ARGS_NETCDF_OPTIONS) ? " [--var NAME]" : "");
    printf("  --patterns LIST      " PATTERN_NAMES " (default all three)\n"
           "  --buffers LIST       read sizes in bytes, comma separated (required)\n"
           "  --reps N             repetitions per configuration (default 3)\n"
           "  --cache cold|warm    page-cache state before each repetition (default cold)\n"
           "  --random-count N     reads of the random pattern (default 100)\n"
           "  --seed S             splitmix64 seed of the random pattern (default 1)\n"
           "  --budget SECONDS     time budget per configuration, 0 = none (default 60)\n"
           "  --max-ops N          stop each repetition after N reads, 0 = no limit\n"
           "  --verify             add the stream checksum of the delivered bytes\n"
           "  --print-offsets      print the planned \"offset length\" reads and exit\n"
           "  --platform-id ID     copied into the records\n"
           "  --version            print the library versions as JSON and exit\n");
    if (extra & ARGS_NETCDF_OPTIONS)
        printf("  --var NAME           1-D double variable to read (default data)\n");
    if (extra & ARGS_POSIX_OPTIONS)
        printf("  --api read|fread     read(2) or unbuffered stdio fread (default read)\n"
               "  --odirect            open with O_DIRECT (4096-aligned random offsets)\n");
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

static void set_defaults(struct probe_args *a)
{
    memset(a, 0, sizeof *a);
    a->var = "data";
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
        if (!specs[i].only || (specs[i].only & extra))
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
    if (a->version)
        return;
    if (!a->file)
        fail("--file PATH is required");
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
    a->patterns = NULL;
    a->buffers = NULL;
}
