/* The probes' options: one table (the rows of every probe, grouped by ARGS_*_OPTIONS) read by
 * the common parser (options.c), which also writes --help from it. Only what a row cannot say
 * lives here: the list values (--patterns, --buffers, --chunk-cache, --label, --seed) and the
 * defaults that depend on the probe. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "options.h"

uint64_t args_u64(const char *text, const char *what)
{
    char err[OPT_ERRLEN];
    uint64_t v;
    if (opt_u64(text, 0, 0, what, &v, err, sizeof err) != 0)
        fail("%s", err);
    return v;
}

/* Split a comma list into a NULL-terminated array of items (in a copy of text, *storage);
 * blanks around items and empty items are dropped. NULL with a message when none is left. */
static char **split_list(const char *text, const char *what, size_t *count, char **storage,
                         char *err, size_t errlen)
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
    if (k == 0) {
        snprintf(err, errlen, "%s needs at least one value, got '%s'", what, text);
        free(items);
        free(copy);
        return NULL;
    }
    *count = k;
    *storage = copy;
    return items;
}

static int parse_patterns(void *dest, const char *text, char *err, size_t errlen)
{
    struct probe_args *a = dest;
    char *storage;
    size_t n;
    char **items = split_list(text, "--patterns", &n, &storage, err, errlen);
    if (!items)
        return -1;
    enum pattern *pats = calloc(n, sizeof *pats);
    if (!pats)
        fail("out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (pattern_parse(items[i], &pats[i]) != 0) {
            snprintf(err, errlen, "unknown pattern '%s': choose from %s", items[i], PATTERN_NAMES);
            rc = -1;
        }
    if (rc == 0) {
        free(a->patterns);
        a->patterns = pats;
        a->npatterns = n;
    } else {
        free(pats);
    }
    free(items);
    free(storage);
    return rc;
}

static int parse_buffers(void *dest, const char *text, char *err, size_t errlen)
{
    struct probe_args *a = dest;
    char *storage;
    size_t n;
    char **items = split_list(text, "--buffers", &n, &storage, err, errlen);
    if (!items)
        return -1;
    uint64_t *bufs = calloc(n, sizeof *bufs);
    if (!bufs)
        fail("out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = opt_u64(items[i], 1, 0, "buffer size", &bufs[i], err, errlen);
        if (rc == 0 && bufs[i] > ((uint64_t)1 << 48)) {
            snprintf(err, errlen, "buffer size %s is too large", items[i]);
            rc = -1;
        }
    }
    if (rc == 0) {
        free(a->buffers);
        a->buffers = bufs;
        a->nbuffers = n;
    } else {
        free(bufs);
    }
    free(items);
    free(storage);
    return rc;
}

/* The Python side takes any integer seed modulo 2^64; so does the probe. */
static int parse_seed(void *dest, const char *text, char *err, size_t errlen)
{
    struct probe_args *a = dest;
    uint64_t mag;
    if (opt_u64(text + (text[0] == '-'), 0, 0, "--seed", &mag, err, errlen) != 0)
        return -1;
    a->seed = text[0] == '-' ? (uint64_t)0 - mag : mag;
    return 0;
}

/* "default" (the library's chunk cache) or BYTES,NELEMS,PREEMPTION, PREEMPTION in [0, 1]. */
static int parse_chunk_cache(void *dest, const char *text, char *err, size_t errlen)
{
    static const char *const what = "--chunk-cache";
    struct probe_args *a = dest;
    if (strcmp(text, "default") == 0) {
        a->chunk_cache_set = 0;
        return 0;
    }
    char *storage;
    size_t n;
    char **items = split_list(text, what, &n, &storage, err, errlen);
    if (!items)
        return -1;
    int rc = -1;
    char *end;
    double p = 0;
    if (n != 3)
        snprintf(err, errlen, "%s must be default or BYTES,NELEMS,PREEMPTION, not '%s'", what, text);
    else if (opt_u64(items[0], 0, 0, "--chunk-cache BYTES", &a->chunk_cache_bytes, err, errlen) == 0 &&
             opt_u64(items[1], 0, 0, "--chunk-cache NELEMS", &a->chunk_cache_nelems, err, errlen) == 0) {
        errno = 0;
        p = strtod(items[2], &end);
        if (end == items[2] || *end != '\0' || errno == ERANGE || !(p >= 0.0 && p <= 1.0))
            snprintf(err, errlen, "--chunk-cache PREEMPTION must be a number from 0 to 1, not '%s'", items[2]);
        else
            rc = 0;
    }
    if (rc == 0) {
        a->chunk_cache_preemption = p;
        a->chunk_cache_set = 1;
    }
    free(items);
    free(storage);
    return rc;
}

static int add_label(void *dest, const char *text, char *err, size_t errlen)
{
    struct probe_args *a = dest;
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) {
        snprintf(err, errlen, "--label must be KEY=VALUE with a non-empty KEY, not '%s'", text);
        return -1;
    }
    char *key = strdup(text);
    struct args_label *labels = realloc(a->labels, (a->nlabels + 1) * sizeof *labels);
    if (!key || !labels)
        fail("out of memory");
    a->labels = labels;
    key[eq - text] = '\0';
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i].key, key) == 0) {
            snprintf(err, errlen, "--label %s given twice", key);
            free(key);
            return -1;
        }
    a->labels[a->nlabels].key = key;
    a->labels[a->nlabels].value = key + (eq - text) + 1;
    a->nlabels++;
    return 0;
}

#define AT(field) offsetof(struct probe_args, field)
#define PLAN ARGS_PLAN_OPTIONS

/* In the order of --help. */
static const struct opt_spec rows[] = {
    {.name = "file", .metavar = "PATH", .help = "the file to read", .kind = OPT_STRING, .offset = AT(file),
     .flags = OPT_REQUIRED},
    {.name = "var", .metavar = "NAME", .help = "1-D double variable to read", .kind = OPT_STRING,
     .offset = AT(var), .def = "data", .groups = ARGS_NETCDF_OPTIONS},
    {.name = "var", .metavar = "NAME", .help = "variable to read: 1 to 8 dimensions, any numeric type",
     .kind = OPT_STRING, .offset = AT(var), .flags = OPT_REQUIRED, .groups = ARGS_SLAB_OPTIONS},
    {.name = "slices", .metavar = "FILE", .help = "hyperslabs, one a line: n starts then n counts",
     .kind = OPT_STRING, .offset = AT(slices), .flags = OPT_REQUIRED, .groups = ARGS_SLAB_OPTIONS},
    {.name = "patterns", .metavar = "LIST", .help = PATTERN_NAMES, .kind = OPT_CALL, .handler = parse_patterns,
     .def = "all three", .groups = PLAN},
    {.name = "buffers", .metavar = "LIST", .help = "read sizes in bytes, comma separated", .kind = OPT_CALL,
     .handler = parse_buffers, .flags = OPT_REQUIRED, .groups = PLAN},
    {.name = "reps", .metavar = "N", .help = "repetitions per configuration", .kind = OPT_U64,
     .offset = AT(reps), .min = 1, .def = "3"},
    {.name = "cache", .metavar = "cold|warm", .help = "page-cache state before each repetition",
     .kind = OPT_CHOICE, .offset = AT(cache_warm), .choices = "cold|warm", .def = "cold"},
    {.name = "random-count", .metavar = "N", .help = "reads of the random pattern", .kind = OPT_U64,
     .offset = AT(random_count), .min = 1, .def = "100", .groups = PLAN},
    {.name = "seed", .metavar = "S", .help = "splitmix64 seed of the random pattern (mod 2^64)",
     .kind = OPT_CALL, .handler = parse_seed, .def = "1", .groups = PLAN},
    {.name = "budget", .metavar = "SECONDS", .help = "time budget per repetition, 0 = none", .kind = OPT_NUMBER,
     .offset = AT(budget_s), .def = "60"},
    {.name = "max-ops", .metavar = "N", .help = "stop each repetition after N reads, 0 = no limit",
     .kind = OPT_U64, .offset = AT(max_ops), .def = "0", .groups = PLAN},
    {.name = "chunk-cache", .metavar = "SPEC",
     .help = "default, or BYTES,NELEMS,PREEMPTION for nc_set_var_chunk_cache", .kind = OPT_CALL,
     .handler = parse_chunk_cache, .def = "default, the library's", .groups = ARGS_SLAB_OPTIONS},
    {.name = "label", .metavar = "KEY=VALUE", .help = "add a string to the records' params (repeatable)",
     .kind = OPT_CALL, .handler = add_label, .groups = ARGS_SLAB_OPTIONS},
    {.name = "api", .metavar = "read|fread", .help = "read(2) or unbuffered stdio fread", .kind = OPT_CHOICE,
     .offset = AT(use_fread), .choices = "read|fread", .def = "read", .groups = ARGS_POSIX_OPTIONS},
    {.name = "odirect", .help = "open with O_DIRECT (4096-aligned random offsets)", .kind = OPT_SET,
     .offset = AT(odirect), .groups = ARGS_POSIX_OPTIONS},
    {.name = "verify", .help = "add the stream checksum of the delivered bytes", .kind = OPT_SET,
     .offset = AT(verify)},
    {.name = "print-offsets", .help = "print the planned \"offset length\" reads and exit", .kind = OPT_SET,
     .offset = AT(print_offsets), .groups = PLAN},
    {.name = "platform-id", .metavar = "ID", .help = "copied into the records", .kind = OPT_TEXT,
     .offset = AT(platform_id)},
    {.name = "version", .help = "print the library versions as JSON and exit", .kind = OPT_SET,
     .offset = AT(version), .flags = OPT_ALONE},
    {.name = "help", .short_name = 'h', .help = "print this help and exit", .kind = OPT_SET, .offset = AT(help),
     .flags = OPT_ALONE},
};

static void set_defaults(struct probe_args *a, unsigned extra)
{
    memset(a, 0, sizeof *a);
    a->reps = 3;
    a->random_count = 100;
    a->seed = 1;
    a->budget_s = 60.0;
    a->platform_id = "";
    if (extra & ARGS_NETCDF_OPTIONS)
        a->var = "data";
}

void args_parse(int argc, char **argv, unsigned extra, struct probe_args *a)
{
    const struct opt_table t = {fail_program(), rows, sizeof rows / sizeof rows[0], extra};

    set_defaults(a, extra);
    opt_parse_or_fail(&t, argc, argv, a, NULL);
    if (a->help) {
        opt_help(&t, stdout);
        exit(0);
    }
    if (a->version || !(extra & ARGS_PLAN_OPTIONS) || a->npatterns)
        return;
    a->npatterns = 3;
    a->patterns = calloc(3, sizeof *a->patterns);
    if (!a->patterns)
        fail("out of memory");
    a->patterns[0] = PATTERN_SEQUENTIAL;
    a->patterns[1] = PATTERN_STRIDED;
    a->patterns[2] = PATTERN_RANDOM;
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
