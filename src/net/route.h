/* Routing: which server an endpoint's call goes to. A plain server is its
 * own connection. Two kinds of endpoint need more, and get a router hung
 * on the connection that stands for them:
 *
 * - A Redis Cluster, learnt from the first MOVED (no flag): the call goes
 *   to the master of its keys' hash slot, from a slot map that CLUSTER
 *   SLOTS fills (and each MOVED corrects), over one lazy connection per
 *   master, at most DLOCK__ROUTE_NODES_MAX of them (the least recently
 *   learnt one is closed to make room). Every node learnt is noted in the
 *   client's book (book.h), which any lane asks for the map when the nodes
 *   it talks to do not answer.
 * - A primary named by sentinels (redis-sentinel://): before a new
 *   connection is used, the sentinels are asked where the primary is, and
 *   ROLE confirms it is one (a user without ROLE relies on READONLY).
 *
 * The connection that stands for the endpoint (the caller's, in its lane)
 * is the one to the server chosen last: the router swaps the connections of
 * a cluster's masters in and out of it, so a reply, a message or a run_id
 * read from it is that server's. */
#ifndef DLOCK_ROUTE_H
#define DLOCK_ROUTE_H

#include "conn.h"
#include "resp.h"

#include <stdbool.h>
#include <stdint.h>

#define DLOCK__ROUTE_NODES_MAX 16

enum dlock__reroute {
    DLOCK__ROUTE_DONE,   /* the result stands */
    DLOCK__ROUTE_AGAIN,  /* send the call again: *conn leads to the right server now */
    DLOCK__ROUTE_ASKING, /* send ASKING and the call, once: *conn leads to the importing node */
    DLOCK__ROUTE_LATER,  /* send the call again, after a pause: the slot could not take it yet */
};

/* Makes `conn` (set up for a redis-sentinel:// endpoint) follow the primary
 * its sentinels name. Returns 0 or DLOCK_ENOMEM. */
int dlock__route_attach_sentinel(dlock__conn *conn);

/* Before a call about hash slot `slot` (-1: no key): makes *conn the
 * connection to the server that should get it, asking the sentinels first
 * if need be. Returns 0, or the failure (conn->err says why): the call is
 * not to be sent. A plain server: 0 at once. */
int dlock__route_prepare(dlock__conn *conn, int slot, int64_t deadline_ns);

/* Is the server behind *conn a cluster node? Asks CLUSTER KEYSLOT of
 * `key` once: a server without cluster support, or a user not allowed to
 * ask, answers an error. On a cluster a router is attached and the slot
 * map loaded, its nodes noted in the book. Returns 1, 0 or the failure to
 * ask (then ask again later). */
int dlock__route_probe_cluster(dlock__conn *conn, const char *key, int64_t deadline_ns);

/* dlock__route_probe_cluster() once per connection, until it could ask:
 * a waiter's subscriber must know where the slot's master is, and a
 * holder's connection, which the node it talks to may have answered
 * without a redirect, the other nodes (else renewals and the release fail
 * through a failover the cluster rides out). Returns whether it asked. */
bool dlock__route_learn(dlock__conn *conn, const char *key, int64_t deadline_ns);

/* Does *conn stand for a cluster (as far as it learnt)? */
bool dlock__route_is_cluster(const dlock__conn *conn);

/* Which server a call about `slot` (-1: no key) goes to now, as
 * dlock__route_prepare() would send it: a number that is equal for calls
 * that go to one server. 0 for an endpoint that is no cluster (its calls
 * all go to one server). */
int dlock__route_server(const dlock__conn *conn, int slot);

/* How many calls dlock__route_after() has sent again (MOVED, ASK, TRYAGAIN,
 * a new primary) on this endpoint so far: when it grew during a batch, the
 * batch's keyless calls (INFO, TIME, WAIT) may have been answered by
 * another server than its redirected ones. 0 without a router. */
unsigned dlock__route_reroutes(const dlock__conn *conn);

/* Do calls about slots `a` and `b` go to the same server now? */
bool dlock__route_same(const dlock__conn *conn, int a, int b);

/* One hash slot of each master the slot map knows, into slots[0..max)
 * (the lowest slot it owns): a call about each reaches every master once,
 * for the tools that look at every server (list, doctor). Returns how many;
 * 0 when *conn does not stand for a cluster. */
size_t dlock__route_master_slots(const dlock__conn *conn, int *slots, size_t max);

/* After a call about `slot` got `reply` (NULL if none) or failed with
 * `error` (0 if not), having reached the socket or not (`sent`): should it
 * go again? MOVED updates the slot map, ASK points at the importing node,
 * TRYAGAIN and CLUSTERDOWN pause briefly (never past `deadline_ns`): the
 * caller sends the call again as often as the deadline lets it, READONLY or
 * a refused connect to a primary asks the sentinels again, a refused
 * connect to a cluster node asks the other nodes the client knows (book.h)
 * for the map. None of them means the call ran, so sending it again is
 * safe. */
enum dlock__reroute dlock__route_after(dlock__conn *conn, const dlock__reply *reply, int error,
                                       bool sent, int slot, int64_t deadline_ns);

/* Pauses briefly (20 ms) before a call goes again, and returns true;
 * false at once if that would leave the call less than 40 ms before
 * `deadline_ns`. */
bool dlock__route_pause(int64_t deadline_ns);

/* Is `reply` one of the cluster's answers that say the call did not run
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN)? If so, says in conn->err, in words
 * of our own, why the call about `slot` could not be served, and returns
 * true. The server's text is not for messages: it names internals. */
bool dlock__route_unserved(dlock__conn *conn, const dlock__reply *reply, int slot);

/* Closes what the router opened and puts the endpoint's own address back
 * in *conn; nothing when it has no router. Before dlock__conn_destroy(). */
void dlock__route_free(dlock__conn *conn);

#endif
