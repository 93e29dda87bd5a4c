/* Building one JSON object and printing it as one line (JSON Lines), flushed at once
 * so an orchestrator reading the pipe sees every record as soon as it is measured. */
#ifndef CLIMIO_JSONL_H
#define CLIMIO_JSONL_H

#include <stdint.h>
#include <stdio.h>

#define JSONL_MAX_DEPTH 8

/* The version of the record layout (climio/records.py SCHEMA_VERSION): every record a native
 * program prints carries it as "schema"; records without it are read as version 1. */
#define JSONL_RECORD_SCHEMA 2

struct jsonl {
    char *buf;
    size_t len, cap;
    int depth;
    int count[JSONL_MAX_DEPTH]; /* members written at each open level */
    char close[JSONL_MAX_DEPTH]; /* '}' or ']' for each open level */
};

void jsonl_init(struct jsonl *j);
void jsonl_free(struct jsonl *j);

/* key is NULL for the outermost object and for the elements of an array. */
void jsonl_begin(struct jsonl *j, const char *key);
void jsonl_begin_array(struct jsonl *j, const char *key);
/* Open a record: the outermost object with its "study" and "schema" members. Every native
 * record starts here (the --version lines and the tracer's files are not records). */
void jsonl_record(struct jsonl *j, const char *study);
/* Close the innermost open object or array. */
void jsonl_end(struct jsonl *j);

void jsonl_str(struct jsonl *j, const char *key, const char *value);
void jsonl_u64(struct jsonl *j, const char *key, uint64_t value);
void jsonl_bool(struct jsonl *j, const char *key, int value);
void jsonl_null(struct jsonl *j, const char *key);
/* %.9g, always with a '.' or exponent so readers see a float; null if not finite. */
void jsonl_double(struct jsonl *j, const char *key, double value);

/* Write the finished object and a newline to fp, flush, and reset for the next one. */
void jsonl_emit(struct jsonl *j, FILE *fp);

/* Append `s` to j as a quoted JSON string: quotes, backslashes and control characters
 * escaped; invalid UTF-8 bytes become U+FFFD so the line is always valid UTF-8. */
void jsonl_quote(struct jsonl *j, const char *s);

#endif
