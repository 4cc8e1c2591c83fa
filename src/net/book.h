/* The nodes of a Redis Cluster that a client knows of, for one endpoint:
 * every lane's router writes the nodes it learns here (the masters it was
 * sent to, the other nodes of the slot map) and asks them for the map when
 * the nodes it talks to do not answer. So the node the URL names is needed
 * at the first contact only, and a lane opened later (the renewal thread's)
 * finds the cluster without it. Shared by the client's threads: the book
 * has a mutex of its own. */
#ifndef DLOCK_BOOK_H
#define DLOCK_BOOK_H

#include <stddef.h>

#define DLOCK__BOOK_MAX 32 /* addresses kept; a newer one replaces the oldest */
#define DLOCK__BOOK_HOST_MAX 256

typedef struct dlock__book dlock__book;

typedef struct dlock__book_entry {
    char host[DLOCK__BOOK_HOST_MAX];
    char port[8];
} dlock__book_entry;

/* An empty book, or NULL (out of memory). */
dlock__book *dlock__book_new(void);
void dlock__book_free(dlock__book *b);

/* Notes host:port, if not noted yet. Safe from any thread. */
void dlock__book_add(dlock__book *b, const char *host, const char *port);

/* Copies the noted addresses into out[0..max). Returns
 * how many. Safe from any thread; `b` may be NULL (none). */
size_t dlock__book_read(dlock__book *b, dlock__book_entry *out, size_t max);

#endif
