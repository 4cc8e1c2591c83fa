/* See wipe.h. */
#include "wipe.h"

void dlock__wipe(void *p, size_t len)
{
    volatile unsigned char *b = p;
    while (len--)
        *b++ = 0;
}
