#include "pattern.h"

#include <string.h>

static const char *const names[] = {"sequential", "strided", "random"};

const char *pattern_name(enum pattern p)
{
    return names[p];
}

int pattern_parse(const char *name, enum pattern *out)
{
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum pattern)i;
            return 0;
        }
    }
    return -1;
}

uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t count_reads(enum pattern pattern, uint64_t f, uint64_t b, uint64_t random_count)
{
    switch (pattern) {
    case PATTERN_SEQUENTIAL:
        return f ? (f - 1) / b + 1 : 0;
    case PATTERN_STRIDED:
        /* floor(floor(x / b) / 4) == floor(x / 4b), without overflowing 4b */
        return f ? (f - 1) / b / PATTERN_STRIDE_FACTOR + 1 : 0;
    case PATTERN_RANDOM:
        return b >= f ? 1 : random_count;
    }
    return 0;
}

void plan_init(struct plan *p, enum pattern pattern, uint64_t file_bytes, uint64_t buffer,
               uint64_t random_count, uint64_t seed, uint64_t align, uint64_t max_ops)
{
    p->pattern = pattern;
    p->file_bytes = file_bytes;
    p->buffer = buffer;
    p->seed = seed;
    p->align = align;
    p->ops = count_reads(pattern, file_bytes, buffer, random_count);
    if (max_ops && p->ops > max_ops)
        p->ops = max_ops;
    plan_rewind(p);
}

void plan_rewind(struct plan *p)
{
    p->index = 0;
    p->rng = p->seed;
}

int plan_next(struct plan *p, uint64_t *off, uint64_t *len)
{
    const uint64_t f = p->file_bytes, b = p->buffer;
    uint64_t o;
    if (p->index >= p->ops)
        return 0;
    switch (p->pattern) {
    case PATTERN_SEQUENTIAL:
        o = p->index * b;
        break;
    case PATTERN_STRIDED:
        o = p->index * b * PATTERN_STRIDE_FACTOR;
        break;
    case PATTERN_RANDOM:
    default:
        if (b >= f) {
            o = 0;
        } else {
            uint64_t span = (f - b) / p->align + 1;
            o = (splitmix64_next(&p->rng) % span) * p->align;
        }
        break;
    }
    p->index++;
    *off = o;
    *len = f - o < b ? f - o : b;
    return 1;
}

uint64_t plan_bytes(const struct plan *p)
{
    struct plan walk = *p;
    uint64_t off, len, total = 0;
    plan_rewind(&walk);
    while (plan_next(&walk, &off, &len))
        total += len;
    return total;
}
