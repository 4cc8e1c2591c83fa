/* Lock names and auxiliary keys. See names.h. */
#include "names.h"

#include "dlock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMESPACE ":dlock:"

/* Redis Cluster hashes only the part between the first '{' and the first
 * '}' after it, if that part is not empty. Returns its length, or 0. */
static size_t hash_tag(const char *name, const char **tag)
{
    const char *open = strchr(name, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    if (!close || close == open + 1)
        return 0;
    *tag = open + 1;
    return (size_t)(close - open - 1);
}

/* "{X}:dlock:..." is the shape of an auxiliary key. */
static bool looks_auxiliary(const char *name)
{
    const char *close = name[0] == '{' ? strchr(name, '}') : NULL;
    return close && strncmp(close + 1, NAMESPACE, strlen(NAMESPACE)) == 0;
}

/* Copies `len` bytes of `s` to `at`; returns the end of the copy. */
static char *put(char *at, const char *s, size_t len)
{
    memcpy(at, s, len);
    return at + len;
}

/* Put together by hand: through snprintf, the five keys of a claim took
 * the largest part of a free lock's time in the client. */
char *dlock__aux_key(const char *name, const char *kind)
{
    const char *tag = name;
    size_t tag_len = hash_tag(name, &tag), name_len = strlen(name), kind_len = strlen(kind);
    char *key, *at;
    if (tag_len == 0)
        tag_len = name_len;
    key = malloc(tag_len + strlen(NAMESPACE) + kind_len + name_len + 4);
    if (!key)
        return NULL;
    at = put(key, "{", 1);
    at = put(at, tag, tag_len);
    at = put(at, "}" NAMESPACE, strlen("}" NAMESPACE));
    at = put(at, kind, kind_len);
    at = put(at, ":", 1);
    put(at, name, name_len + 1); /* and its terminating NUL */
    return key;
}

int dlock__keys_make(dlock__keys *keys, const char *name, char *why, size_t why_len)
{
    size_t len = name ? strlen(name) : 0;
    const char *tag;

    memset(keys, 0, sizeof(*keys));
    if (len == 0 || len > DLOCK_NAME_MAX) {
        snprintf(why, why_len, "lock name must be 1 to %d bytes", DLOCK_NAME_MAX);
        return DLOCK_EINVAL;
    }
    if (hash_tag(name, &tag) == 0 && strpbrk(name, "{}")) {
        snprintf(why, why_len,
                 "a lock name with a brace needs a valid hash tag: '{', then at least one "
                 "byte, then '}'");
        return DLOCK_EINVAL;
    }
    if (looks_auxiliary(name)) {
        snprintf(why, why_len, "a lock name must not start with \"{...}%s\": that is the "
                               "shape of dlock's auxiliary keys", NAMESPACE);
        return DLOCK_EINVAL;
    }
    keys->lock = strdup(name);
    keys->fence = dlock__aux_key(name, "fence");
    keys->owner = dlock__aux_key(name, "owner");
    keys->channel = dlock__aux_key(name, "released");
    keys->freed = dlock__aux_key(name, "freed");
    if (!keys->lock || !keys->fence || !keys->owner || !keys->channel || !keys->freed) {
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
    free(keys->freed);
    memset(keys, 0, sizeof(*keys));
}
