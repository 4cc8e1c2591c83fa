/* The cluster nodes a client knows of. See book.h. */
#include "book.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dlock__book {
    pthread_mutex_t mutex;
    dlock__book_entry entries[DLOCK__BOOK_MAX];
    size_t n, next; /* next: the entry a new address takes once full */
};

dlock__book *dlock__book_new(void)
{
    dlock__book *b = calloc(1, sizeof(*b));
    if (b && pthread_mutex_init(&b->mutex, NULL) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

void dlock__book_free(dlock__book *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mutex);
    free(b);
}

static bool noted(const dlock__book *b, const char *host, const char *port)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->entries[i].host, host) == 0 && strcmp(b->entries[i].port, port) == 0)
            return true;
    return false;
}

void dlock__book_add(dlock__book *b, const char *host, const char *port)
{
    dlock__book_entry *e;
    if (!b || strlen(host) >= sizeof(e->host) || strlen(port) >= sizeof(e->port))
        return;
    pthread_mutex_lock(&b->mutex);
    if (!noted(b, host, port)) {
        if (b->n < DLOCK__BOOK_MAX) {
            e = &b->entries[b->n++];
        } else {
            e = &b->entries[b->next];
            b->next = (b->next + 1) % DLOCK__BOOK_MAX;
        }
        snprintf(e->host, sizeof(e->host), "%s", host);
        snprintf(e->port, sizeof(e->port), "%s", port);
    }
    pthread_mutex_unlock(&b->mutex);
}

size_t dlock__book_read(dlock__book *b, dlock__book_entry *out, size_t max)
{
    size_t n = 0;
    if (!b)
        return 0;
    pthread_mutex_lock(&b->mutex);
    for (size_t i = 0; i < b->n && n < max; i++)
        out[n++] = b->entries[i];
    pthread_mutex_unlock(&b->mutex);
    return n;
}
