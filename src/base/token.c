/* Owner tokens. See token.h. */
#include "token.h"

#include "wipe.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#define TOKEN_BYTES (DLOCK_TOKEN_LEN / 2)
#define POOL_BYTES 256 /* getrandom() returns up to 256 bytes whole */

struct dlock__token_pool {
    size_t left;   /* unused bytes at the end of `bytes`; 0 after a fork */
    pid_t pid;     /* 0 after a fork */
    unsigned char bytes[POOL_BYTES];
};

dlock__token_pool *dlock__token_pool_new(void)
{
    size_t size = (size_t)sysconf(_SC_PAGESIZE);
    void *page;
    if (size < sizeof(dlock__token_pool))
        return NULL;
    page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return NULL;
    if (madvise(page, size, MADV_WIPEONFORK) < 0) {
        munmap(page, size);
        return NULL; /* an old kernel: no pool rather than a shared one */
    }
    return page; /* zero-filled: empty, pid unknown */
}

void dlock__token_pool_free(dlock__token_pool *pool)
{
    if (!pool)
        return;
    dlock__wipe(pool, sizeof(*pool));
    munmap(pool, (size_t)sysconf(_SC_PAGESIZE));
}

static int fill(unsigned char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return DLOCK_ESYSTEM;
        got += (size_t)n;
    }
    return 0;
}

int dlock__token_new(dlock__token_pool *pool, char out[DLOCK_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char own[TOKEN_BYTES];
    unsigned char *bytes = own;

    if (pool && pool->left < TOKEN_BYTES) {
        if (fill(pool->bytes, sizeof(pool->bytes)) < 0)
            return DLOCK_ESYSTEM;
        pool->left = sizeof(pool->bytes);
    }
    if (pool) {
        pool->left -= TOKEN_BYTES;
        bytes = pool->bytes + pool->left;
    } else if (fill(own, sizeof(own)) < 0) {
        return DLOCK_ESYSTEM;
    }
    for (size_t i = 0; i < TOKEN_BYTES; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[DLOCK_TOKEN_LEN] = '\0';
    dlock__wipe(bytes, TOKEN_BYTES); /* a used token stays only in the handle */
    return 0;
}

pid_t dlock__token_pool_pid(dlock__token_pool *pool)
{
    if (!pool)
        return getpid();
    if (pool->pid == 0)
        pool->pid = getpid();
    return pool->pid;
}

int dlock__token_valid(const char *s)
{
    return s && strlen(s) == DLOCK_TOKEN_LEN &&
           strspn(s, "0123456789abcdef") == DLOCK_TOKEN_LEN;
}
