/* Lock names and auxiliary keys. See names.h. */
#include "names.h"

#include "dlock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const suffixes[] = {":fence", ":owner", ":released"};

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Redis Cluster hashes only the part between the first '{' and the first
 * '}' after it, if that part is not empty. */
static bool has_valid_hash_tag(const char *name)
{
    const char *open = strchr(name, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    return close && close > open + 1;
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb);
        memcpy(s + la + lb, c, lc);
        s[la + lb + lc] = '\0';
    }
    return s;
}

int dlock__keys_make(dlock__keys *keys, const char *name, char *why, size_t why_len)
{
    size_t len = name ? strlen(name) : 0;
    bool tagged;

    memset(keys, 0, sizeof(*keys));
    if (len == 0 || len > DLOCK_NAME_MAX) {
        snprintf(why, why_len, "lock name must be 1 to %d bytes", DLOCK_NAME_MAX);
        return DLOCK_EINVAL;
    }
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (ends_with(name, len, suffixes[i])) {
            snprintf(why, why_len, "lock name must not end in \"%s\" (an auxiliary key)",
                     suffixes[i]);
            return DLOCK_EINVAL;
        }
    }
    tagged = has_valid_hash_tag(name);
    if (!tagged && strpbrk(name, "{}")) {
        snprintf(why, why_len,
                 "a lock name with a brace needs a valid hash tag: '{', then at least one "
                 "byte, then '}'");
        return DLOCK_EINVAL;
    }
    keys->lock = strdup(name);
    keys->fence = tagged ? join(name, ":fence", "") : join("{", name, "}:fence");
    keys->owner = tagged ? join(name, ":owner", "") : join("{", name, "}:owner");
    keys->channel = tagged ? join(name, ":released", "") : join("{", name, "}:released");
    if (!keys->lock || !keys->fence || !keys->owner || !keys->channel) {
        dlock__keys_clear(keys);
        snprintf(why, why_len, "out of memory");
        return DLOCK_ENOMEM;
    }
    return 0;
}

void dlock__keys_clear(dlock__keys *keys)
{
    free(keys->lock);
    free(keys->fence);
    free(keys->owner);
    free(keys->channel);
    memset(keys, 0, sizeof(*keys));
}
