/* Position-weighted stream checksum, identical to climio.patterns.StreamChecksum:
 * the delivered bytes are read as little-endian uint64 words w_0, w_1, ... (counting
 * across all updates) and the checksum is sum_k w_k * (2k+1) mod 2^64. */
#ifndef CLIMIO_CHECKSUM_H
#define CLIMIO_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

struct checksum {
    uint64_t sum;
    uint64_t k;               /* index of the next whole word */
    unsigned char tail[8];    /* bytes of a word split across two updates */
    unsigned ntail;
};

void checksum_init(struct checksum *c);
void checksum_update(struct checksum *c, const void *data, size_t n);
/* Final value; a trailing partial word (stream length not a multiple of 8) is zero-padded. */
uint64_t checksum_value(const struct checksum *c);
/* 16 lowercase hex digits plus NUL. */
void checksum_hex(uint64_t value, char out[17]);

#endif
