/* A TCP proxy on loopback between clients and one redis-server, for network
 * faults without touching the host's firewall or routes. It forwards both
 * ways until told to misbehave:
 *   FAULT_PASS       forward (what was held back goes out now)
 *   FAULT_BLACKHOLE  accept and read, forward nothing: a silent network
 *   FAULT_DELAY      forward each chunk `delay_ms` after it arrived
 *   FAULT_DROP       read and discard; connections that lost bytes are reset
 *                    when the mode changes (their streams are broken)
 *   FAULT_RESET      reset every connection, and new ones at once
 * One thread per proxy; the functions may be called from any thread. */
#ifndef TEST_FAULT_PROXY_H
#define TEST_FAULT_PROXY_H

enum fault_mode { FAULT_PASS, FAULT_BLACKHOLE, FAULT_DELAY, FAULT_DROP, FAULT_RESET };

typedef struct fault_proxy fault_proxy;

/* Listens on a free 127.0.0.1 port and forwards to 127.0.0.1:target_port.
 * NULL on failure (printed). */
fault_proxy *fault_proxy_start(int target_port);

/* The port clients connect to. */
int fault_proxy_port(const fault_proxy *p);

/* Changes the fault; `delay_ms` is used by FAULT_DELAY. */
void fault_proxy_set(fault_proxy *p, enum fault_mode mode, int delay_ms);

/* Bytes held back, delayed or dropped, and connections reset, so far: proof
 * that a fault reached traffic. */
unsigned long long fault_proxy_hits(const fault_proxy *p);

/* Stops the thread, closes every connection; NULL is ignored. */
void fault_proxy_stop(fault_proxy *p);

#endif
