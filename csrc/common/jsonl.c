#include "jsonl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

void jsonl_init(struct jsonl *j)
{
    memset(j, 0, sizeof *j);
}

void jsonl_free(struct jsonl *j)
{
    free(j->buf);
    memset(j, 0, sizeof *j);
}

static void put(struct jsonl *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 1024;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *p = realloc(j->buf, cap);
        if (!p)
            fail("out of memory");
        j->buf = p;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(struct jsonl *j, const char *s)
{
    put(j, s, strlen(s));
}

static void putf(struct jsonl *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct jsonl *j, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(j, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;
    unsigned min;
    unsigned cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0) { n = 2; cp = s[0] & 0x1F; min = 0x80; }
    else if ((s[0] & 0xF0) == 0xE0) { n = 3; cp = s[0] & 0x0F; min = 0x800; }
    else if ((s[0] & 0xF8) == 0xF0) { n = 4; cp = s[0] & 0x07; min = 0x10000; }
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void jsonl_quote(struct jsonl *j, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    put(j, "\"", 1);
    while (*s) {
        unsigned char c = *s;
        switch (c) {
        case '"': puts_(j, "\\\""); s++; continue;
        case '\\': puts_(j, "\\\\"); s++; continue;
        case '\b': puts_(j, "\\b"); s++; continue;
        case '\f': puts_(j, "\\f"); s++; continue;
        case '\n': puts_(j, "\\n"); s++; continue;
        case '\r': puts_(j, "\\r"); s++; continue;
        case '\t': puts_(j, "\\t"); s++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            putf(j, "\\u%04x", c);
            s++;
            continue;
        }
        size_t n = utf8_len(s);
        if (n == 0) {
            puts_(j, "\\ufffd");
            s++;
        } else {
            put(j, (const char *)s, n);
            s += n;
        }
    }
    put(j, "\"", 1);
}

static void key_(struct jsonl *j, const char *key)
{
    if (j->depth > 0 && j->count[j->depth - 1]++ > 0)
        put(j, ",", 1);
    if (key) {
        jsonl_quote(j, key);
        put(j, ":", 1);
    }
}

static void open_(struct jsonl *j, const char *key, char open, char close)
{
    if (j->depth >= JSONL_MAX_DEPTH)
        fail("JSON nesting too deep");
    key_(j, key);
    put(j, &open, 1);
    j->close[j->depth] = close;
    j->count[j->depth++] = 0;
}

void jsonl_begin(struct jsonl *j, const char *key)
{
    open_(j, key, '{', '}');
}

void jsonl_begin_array(struct jsonl *j, const char *key)
{
    open_(j, key, '[', ']');
}

void jsonl_end(struct jsonl *j)
{
    char close = '}';
    if (j->depth > 0)
        close = j->close[--j->depth];
    put(j, &close, 1);
}

void jsonl_str(struct jsonl *j, const char *key, const char *value)
{
    key_(j, key);
    jsonl_quote(j, value);
}

void jsonl_u64(struct jsonl *j, const char *key, uint64_t value)
{
    key_(j, key);
    putf(j, "%llu", (unsigned long long)value);
}

void jsonl_bool(struct jsonl *j, const char *key, int value)
{
    key_(j, key);
    puts_(j, value ? "true" : "false");
}

void jsonl_null(struct jsonl *j, const char *key)
{
    key_(j, key);
    puts_(j, "null");
}

void jsonl_double(struct jsonl *j, const char *key, double value)
{
    char tmp[40];
    if (!isfinite(value)) {
        jsonl_null(j, key);
        return;
    }
    key_(j, key);
    snprintf(tmp, sizeof tmp, "%.9g", value);
    puts_(j, tmp);
    if (!strpbrk(tmp, ".e"))
        puts_(j, ".0");
}

void jsonl_record(struct jsonl *j, const char *study)
{
    jsonl_begin(j, NULL);
    jsonl_str(j, "study", study);
    jsonl_u64(j, "schema", JSONL_RECORD_SCHEMA);
}

void jsonl_emit(struct jsonl *j, FILE *fp)
{
    while (j->depth > 0)
        jsonl_end(j);
    if (j->len)
        fwrite(j->buf, 1, j->len, fp);
    fputc('\n', fp);
    fflush(fp);
    j->len = 0;
    if (j->buf)
        j->buf[0] = '\0';
}
