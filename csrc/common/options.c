#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

#define VAL_BASE 256   /* getopt_long's val of row i is VAL_BASE + i (above every short name) */

int opt_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int enabled(const struct opt_table *t, const struct opt_spec *s)
{
    return !s->groups || (s->groups & t->enabled);
}

/* "a|b|c" as "a, b or c" (messages). */
static void choice_text(const char *choices, char *out, size_t n)
{
    size_t len = 0, k = 0, total = 1;
    for (const char *p = choices; *p; p++)
        total += *p == '|';
    out[0] = '\0';
    for (const char *p = choices; *p && len < n; k++) {
        size_t w = strcspn(p, "|");
        const char *sep = k == 0 ? "" : k + 1 == total ? " or " : ", ";
        len += (size_t)snprintf(out + len, n - len, "%s%.*s", sep, (int)w, p);
        p += w + (p[w] == '|');
    }
}

static int choice_index(const char *choices, const char *value)
{
    int k = 0;
    for (const char *p = choices; *p; k++) {
        size_t w = strcspn(p, "|");
        if (strlen(value) == w && strncmp(p, value, w) == 0)
            return k;
        p += w + (p[w] == '|');
    }
    return -1;
}

/* "an integer >= 1", "a non-negative integer", "an integer from 0 to 128". */
static void range_text(uint64_t min, uint64_t max, char *out, size_t n)
{
    if (max)
        snprintf(out, n, "from %llu to %llu", (unsigned long long)min, (unsigned long long)max);
    else
        snprintf(out, n, ">= %llu", (unsigned long long)min);
}

/* Digits only (no sign, no blanks), no overflow. */
static int digits_u64(const char *text, uint64_t *out)
{
    char *end;
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE || *end)
        return -1;
    *out = v;
    return 0;
}

int opt_u64(const char *text, uint64_t min, uint64_t max, const char *what, uint64_t *out,
            char *err, size_t errlen)
{
    uint64_t v;
    char range[64];
    if (digits_u64(text, &v) == 0 && v >= min && (!max || v <= max)) {
        *out = v;
        return 0;
    }
    if (min == 0 && !max)
        return opt_error(err, errlen, "%s must be a non-negative integer, not '%s'", what, text ? text : "");
    range_text(min, max, range, sizeof range);
    return opt_error(err, errlen, "%s must be an integer %s, not '%s'", what, range, text ? text : "");
}

int opt_number(const char *text, const char *what, double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(v) || v < 0 || isspace((unsigned char)text[0]))
        return opt_error(err, errlen, "%s must be a non-negative number, not '%s'", what, text);
    *out = v;
    return 0;
}

int opt_u64_list(const char *text, int n, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *p = text;
    for (int k = 0; k < n; k++) {
        char item[32];
        size_t w = strcspn(p, ",");
        if (w == 0 || w >= sizeof item)
            return -1;
        memcpy(item, p, w);
        item[w] = '\0';
        if (digits_u64(item, &out[k]) != 0 || out[k] < min || (max && out[k] > max))
            return -1;
        p += w;
        if (k + 1 < n && *p++ != ',')
            return -1;
    }
    return *p ? -1 : 0;
}

static int store(const struct opt_spec *s, const char *value, void *dest, char *err, size_t errlen)
{
    char *at = (char *)dest + s->offset, what[80], range[64];
    snprintf(what, sizeof what, "--%s", s->name);
    switch (s->kind) {
    case OPT_SET: *(int *)at = 1; return 0;
    case OPT_CLEAR: *(int *)at = 0; return 0;
    case OPT_STRING:
        if (!*value)
            return opt_error(err, errlen, "%s needs a non-empty %s", what, s->metavar);
        /* fall through */
    case OPT_TEXT: *(const char **)at = value; return 0;
    case OPT_U64: return opt_u64(value, s->min, s->max, what, (uint64_t *)at, err, errlen);
    case OPT_NUMBER: return opt_number(value, what, (double *)at, err, errlen);
    case OPT_U64S:
    case OPT_INTS: {
        uint64_t v[16];
        uint64_t max = s->kind == OPT_INTS && (!s->max || s->max > INT_MAX) ? INT_MAX : s->max;
        if (s->n < 1 || s->n > 16 || opt_u64_list(value, s->n, s->min, max, v) != 0) {
            range_text(s->min, max, range, sizeof range);
            return opt_error(err, errlen, "%s must be %s: %d comma-separated integers %s, not '%s'",
                       what, s->metavar, s->n, range, value);
        }
        for (int k = 0; k < s->n; k++) {
            if (s->kind == OPT_INTS)
                ((int *)at)[k] = (int)v[k];
            else
                ((uint64_t *)at)[k] = v[k];
        }
        return 0;
    }
    case OPT_CHOICE: {
        int k = choice_index(s->choices, value);
        if (k < 0) {
            char text[256];
            choice_text(s->choices, text, sizeof text);
            return opt_error(err, errlen, "%s must be %s, not '%s'", what, text, value);
        }
        *(int *)at = k;
        return 0;
    }
    case OPT_CALL: return s->handler(dest, value, err, errlen);
    case OPT_HEADING: break;
    }
    return opt_error(err, errlen, "%s: option row without a kind", what);
}

int opt_parse(const struct opt_table *t, int argc, char **argv, void *dest, unsigned *seen,
              char *err, size_t errlen)
{
    struct option longopts[OPT_MAX_ROWS + 1];
    char shorts[2 + 2 * OPT_MAX_ROWS + 1] = ":";   /* ':' first: a missing value returns ':' */
    unsigned count[OPT_MAX_ROWS] = {0};
    size_t nl = 0, ns = 1;
    int c, alone = 0;

    if (t->nrows > OPT_MAX_ROWS)
        return opt_error(err, errlen, "more than %d option rows", OPT_MAX_ROWS);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct opt_spec *s = &t->rows[i];
        if (s->kind == OPT_HEADING || !enabled(t, s))
            continue;
        longopts[nl++] = (struct option){s->name, s->metavar ? required_argument : no_argument, NULL,
                                         VAL_BASE + (int)i};
        if (s->short_name) {
            shorts[ns++] = (char)s->short_name;
            if (s->metavar)
                shorts[ns++] = ':';
        }
    }
    longopts[nl] = (struct option){NULL, 0, NULL, 0};
    shorts[ns] = '\0';

    opterr = 0;
    optind = 0;   /* GNU: start over (a program may parse twice) */
    while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        const char *arg = argv[optind - 1];
        if (c == ':')
            return opt_error(err, errlen, "option '%s' needs a value", arg);
        if (c == '?') {
            if (optopt >= VAL_BASE)   /* --flag=value for a flag */
                return opt_error(err, errlen, "option '--%s' takes no value", t->rows[optopt - VAL_BASE].name);
            if (optopt)
                return opt_error(err, errlen, "unknown option '-%c' (see --help)", optopt);
            return opt_error(err, errlen, "unknown option '%s' (see --help)", arg);
        }
        size_t row = t->nrows;
        if (c >= VAL_BASE) {
            row = (size_t)(c - VAL_BASE);
        } else {
            for (size_t i = 0; i < t->nrows; i++)
                if (t->rows[i].short_name == c && t->rows[i].kind != OPT_HEADING && enabled(t, &t->rows[i]))
                    row = i;
        }
        if (row >= t->nrows)
            return opt_error(err, errlen, "unexpected option '%s' (see --help)", arg);
        count[row]++;
        alone |= (t->rows[row].flags & OPT_ALONE) != 0;
        if (store(&t->rows[row], optarg, dest, err, errlen) != 0)
            return -1;
    }
    if (optind < argc)
        return opt_error(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
    if (seen)
        memcpy(seen, count, t->nrows * sizeof *seen);
    if (alone)
        return 0;
    for (size_t i = 0; i < t->nrows; i++) {
        const struct opt_spec *s = &t->rows[i];
        if ((s->flags & OPT_REQUIRED) && enabled(t, s) && !count[i])
            return opt_error(err, errlen, "--%s %s is required", s->name, s->metavar ? s->metavar : "");
    }
    return 0;
}

void opt_parse_or_fail(const struct opt_table *t, int argc, char **argv, void *dest, unsigned *seen)
{
    char err[OPT_ERRLEN];
    if (opt_parse(t, argc, argv, dest, seen, err, sizeof err) != 0)
        fail("%s", err);
}

unsigned opt_count(const struct opt_table *t, const unsigned *seen, const char *name)
{
    unsigned n = 0;
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].name && enabled(t, &t->rows[i]) && strcmp(t->rows[i].name, name) == 0)
            n += seen[i];
    return n;
}

/* "  --name METAVAR" or "  -s, --name METAVAR". */
static int option_text(const struct opt_spec *s, char *out, size_t n)
{
    char sh[8] = "";
    if (s->short_name)
        snprintf(sh, sizeof sh, "-%c, ", s->short_name);
    return snprintf(out, n, "  %s--%s%s%s", sh, s->name, s->metavar ? " " : "", s->metavar ? s->metavar : "");
}

void opt_help(const struct opt_table *t, FILE *fp)
{
    char text[256];
    int width = 0;
    fprintf(fp, "usage: %s", t->program);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct opt_spec *s = &t->rows[i];
        if (s->kind != OPT_HEADING && enabled(t, s) && (s->flags & OPT_REQUIRED))
            fprintf(fp, " --%s %s", s->name, s->metavar ? s->metavar : "");
        if (s->kind != OPT_HEADING && enabled(t, s)) {
            int w = option_text(s, text, sizeof text);
            if (w > width && w <= 32)   /* a longer one gets its help on the same line, after 2 blanks */
                width = w;
        }
    }
    fprintf(fp, " [options]\n");
    for (size_t i = 0; i < t->nrows; i++) {
        const struct opt_spec *s = &t->rows[i];
        if (!enabled(t, s))
            continue;
        if (s->kind == OPT_HEADING) {
            fprintf(fp, "%s\n", s->help);
            continue;
        }
        int w = option_text(s, text, sizeof text);
        fprintf(fp, "%s%*s  %s", text, w < width ? width - w : 0, "", s->help ? s->help : "");
        if (s->flags & OPT_REQUIRED)
            fprintf(fp, " (required)");
        else if (s->def)
            fprintf(fp, " (default %s)", s->def);
        fputc('\n', fp);
    }
}
