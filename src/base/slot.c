/* The cluster hash slot of a key. See slot.h. */
#include "slot.h"

#include <stdint.h>
#include <string.h>

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), bit by bit: a
 * key is hashed once per call, not worth a table. */
static uint16_t crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned dlock__key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) % DLOCK__SLOTS;
    }
    return crc16(key, len) % DLOCK__SLOTS;
}
