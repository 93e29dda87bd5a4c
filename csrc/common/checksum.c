#include "checksum.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>

void checksum_init(struct checksum *c)
{
    memset(c, 0, sizeof *c);
}

static void add_word(struct checksum *c, const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    c->sum += le64toh(w) * (2 * c->k + 1);
    c->k++;
}

void checksum_update(struct checksum *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (c->ntail) {
        while (n && c->ntail < 8) {
            c->tail[c->ntail++] = *p++;
            n--;
        }
        if (c->ntail < 8)
            return;
        add_word(c, c->tail);
        c->ntail = 0;
    }
    /* Hot loop: local copies so the compiler keeps them in registers. */
    uint64_t sum = c->sum, weight = 2 * c->k + 1;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++, p += 8, weight += 2) {
        uint64_t w;
        memcpy(&w, p, 8);
        sum += le64toh(w) * weight;
    }
    c->sum = sum;
    c->k += words;
    n -= words * 8;
    memcpy(c->tail, p, n);
    c->ntail = (unsigned)n;
}

uint64_t checksum_value(const struct checksum *c)
{
    if (!c->ntail)
        return c->sum;
    struct checksum last = *c;
    memset(last.tail + last.ntail, 0, 8 - last.ntail);
    add_word(&last, last.tail);
    return last.sum;
}

void checksum_hex(uint64_t value, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)value);
}
