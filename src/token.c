/* Owner tokens. See token.h. */
#include "token.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#define TOKEN_BYTES (DLOCK_TOKEN_LEN / 2)

int dlock__token_new(char out[DLOCK_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char bytes[TOKEN_BYTES];
    size_t got = 0;

    while (got < sizeof(bytes)) {
        ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return DLOCK_ESYSTEM;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(bytes); i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[DLOCK_TOKEN_LEN] = '\0';
    return 0;
}

int dlock__token_valid(const char *s)
{
    return s && strlen(s) == DLOCK_TOKEN_LEN &&
           strspn(s, "0123456789abcdef") == DLOCK_TOKEN_LEN;
}
