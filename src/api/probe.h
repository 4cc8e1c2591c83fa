/* Plain commands to one server, for the tools that look at servers rather
 * than at one lock (list, doctor): a command in, its reply out, on the
 * caller's lane, within the command timeout. */
#ifndef DLOCK_PROBE_H
#define DLOCK_PROBE_H

#include "lane.h"

/* Sends the command argv[0..argc) to server `node` and waits for its reply
 * until the command timeout. Returns 0 with the reply in *out (maybe an
 * error reply; the caller frees it with dlock__reply_free), or a negative
 * code with the detail in `why`. */
int dlock__probe(dlock_client *c, size_t node, int argc, const char *const *argv,
                 dlock__reply **out, char *why, size_t why_len);

/* dlock__probe() to the master of hash slot `slot` of server `node`'s
 * cluster (-1: the server the endpoint's connection is at now). */
int dlock__probe_slot(dlock_client *c, size_t node, int slot, int argc, const char *const *argv,
                      dlock__reply **out, char *why, size_t why_len);

/* Is server `node` a cluster node? If so, one hash slot of each of its
 * masters into slots[0..max) (see dlock__route_master_slots) and how many;
 * 0 for a server on its own (or one that would not say). */
size_t dlock__probe_masters(dlock_client *c, size_t node, int *slots, size_t max);

/* The label of the server that server `node`'s last probe reached: a
 * cluster's master or a sentinel-named primary, else the endpoint's. */
const char *dlock__probe_label(const dlock_client *c, size_t node);

/* The value of `field` ("redis_version") in an INFO reply's text, copied
 * into `out` (empty when it is missing). */
void dlock__info_field(const char *info, const char *field, char *out, size_t len);

#endif
