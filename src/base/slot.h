/* Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key, or of its
 * hash tag (the bytes between the first '{' and the next '}', when there
 * are any), modulo 16384. Every key of a dlock name shares one slot. */
#ifndef DLOCK_SLOT_H
#define DLOCK_SLOT_H

#include <stddef.h>

#define DLOCK__SLOTS 16384

unsigned dlock__key_slot(const char *key, size_t len);

#endif
