/* The read plans of the read-stack study: which (offset, length) pairs one repetition
 * reads. Must agree bit for bit with climio.patterns.plan (Python side).
 *
 *   sequential  offsets 0, B, 2B, ... while off < F
 *   strided     offsets 0, 4B, 8B, ... while off < F   (read one buffer, skip three)
 *   random      N offsets (next() % span) * align, span = (F - B) / align + 1,
 *               next() = splitmix64 seeded with `seed`; a single read (0, F) when B >= F
 *
 * length = min(B, F - off). Plans are generated lazily (a 512 B sequential plan of a
 * large file has too many reads to store). */
#ifndef CLIMIO_PATTERN_H
#define CLIMIO_PATTERN_H

#include <stdint.h>

enum pattern { PATTERN_SEQUENTIAL, PATTERN_STRIDED, PATTERN_RANDOM };

#define PATTERN_STRIDE_FACTOR 4
#define PATTERN_NAMES "sequential,strided,random"

const char *pattern_name(enum pattern p);
/* 0 and *out set when `name` is a pattern, -1 otherwise. */
int pattern_parse(const char *name, enum pattern *out);

/* splitmix64 (Vigna): advance *state and return the next value. */
uint64_t splitmix64_next(uint64_t *state);

struct plan {
    enum pattern pattern;
    uint64_t file_bytes, buffer, seed, align;
    uint64_t ops;        /* reads in one repetition (after the max_ops cut) */
    uint64_t index;      /* next read */
    uint64_t rng;        /* splitmix64 state (random) */
};

/* max_ops > 0 keeps only the first max_ops reads. buffer must be > 0, align > 0. */
void plan_init(struct plan *p, enum pattern pattern, uint64_t file_bytes, uint64_t buffer,
               uint64_t random_count, uint64_t seed, uint64_t align, uint64_t max_ops);
/* Back to the first read (the random pattern repeats the same offsets). */
void plan_rewind(struct plan *p);
/* 1 with the next read in *off, *len; 0 when the plan is exhausted. */
int plan_next(struct plan *p, uint64_t *off, uint64_t *len);
/* Sum of the lengths of all reads (walks a copy of the plan). */
uint64_t plan_bytes(const struct plan *p);

#endif
