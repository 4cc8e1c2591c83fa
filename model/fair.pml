/* dlock's fair lock, as SPIN sees it: the fair_acquire and fair_release
 * Lua scripts of src/kinds/lua/ (the queue by arrival, the presence
 * leases, the head's reservation of a free lock, the cleanup that keeps a
 * waiter's place, the release's hand-over of the lock to the head), the
 * mutex's acquire with the queue's mark it reads, release and extend, on the one
 * server a fair lock lives on, and the attempt layer's validity, cleanup
 * and taking of a handed lock (dlock__attempt_handed(), take_handed() in
 * wait.c) on the clients' side. docs/model.md says what is modelled, with
 * which bounds and assumptions.
 *
 * scripts/model compares these pins with the sha1sum of each file; a
 * change to any of them fails it until this model was reviewed against
 * the change and its pin updated. A model pins every script of its kind
 * (the `kind` line: src/kinds/lua/KIND_*.lua, which scripts/model
 * checks), the helpers every script shares, the kind's C
 * (src/kinds/KIND.c) and the attempt layer; and the
 * mutex's acquire, release and extend, which it models too (a plain
 * acquire reads the queue's mark; the fair lock's extend is the mutex's):
 * kind fair
 * pin src/kinds/lua/helpers.lua 861c27fdbc25fb282c182d0eabd6dccd29666296
 * pin src/kinds/lua/fair_acquire.lua e3f341d97769b63a59e0194f3ce5f77ca267a378
 * pin src/kinds/lua/fair_helpers.lua 6114f642f930568e4cb908d9078300bba24da28a
 * pin src/kinds/lua/fair_release.lua 7280bb44064d6e43696a86b4b78fa17db6f2f903
 * pin src/kinds/lua/mutex_acquire.lua 154864fa89a2cd4b91a65d630a2181fe4021a592
 * pin src/kinds/lua/mutex_release.lua a5d29f39a3f99971f6270cc88e40157d76ede69d
 * pin src/kinds/lua/mutex_extend.lua 8840a10719bea4dbda3451084c3d9b01672b822f
 * pin src/kinds/fair.c 87f782f3afcc97aee99d386270d0122a084d941b
 * pin src/engine/attempt.c d9a0584947d9f0f86f59381e28f461cb0c119f47
 *
 * Time is kept as in dlock.pml: relative to "now", moved one tick at a time
 * by the clock process. The lock key, each presence lease and the queue's
 * keys keep the ticks left until they end; a fencing token its distance
 * from now in sub-ticks, clamped at FLOOR. A lease whose end has come is
 * one the scripts call dead (`ZRANGEBYSCORE presence -inf now`): it stays
 * in the queue until a fair script drops it, or until the queue's keys
 * expire. The scripts drop the dead only when the head is dead
 * (live_head() in fair_helpers.lua, drop_dead_at_head() here), and a
 * waiter that finds its own lease ended leaves and joins again. Arrival
 * times are kept as ranks (1 is the head), which is all the scripts read
 * of them.
 *
 * The end of a presence lease (LEASE_END, server ms) is what a hand-over
 * message and a busy answer name; the client compares the two for
 * equality only. Each renewal's end is a new time, so the model keeps an
 * identity instead: a small label that a renewal replaces with one that
 * no answer, client, message or other lease holds (lid_fresh()). */

/* ---- parameters (scripts/model passes -D flags) -------------------------- */
#ifndef NC
#define NC 3            /* clients: 2 or 3 */
#endif
#ifndef PLAIN
#define PLAIN 0         /* 1: the last client acquires as a plain mutex */
#endif
#ifndef QUEUES
#define QUEUES 0        /* 1: that plain client waits: refused once, it queues
                           as a fair waiter (a waiting mutex on one server) */
#endif
#ifndef TTL
#define TTL 3           /* ticks */
#endif
#ifndef DRIFT
#define DRIFT 1         /* the server's clock may run fast: a key lives
                           TTL - DRIFT ticks at least; the client's drift term */
#endif
#ifndef LEASE
#define LEASE 2         /* a waiter's presence lease, ticks */
#endif
#ifndef NDL
#define NDL 1           /* the call's deadline, ticks */
#endif
#ifndef RDELAY
#define RDELAY (TTL + 1)  /* a server that lost data stays down this long */
#endif
#ifndef CALLS
#define CALLS 1         /* acquisitions per client (one token each) */
#endif
#ifndef EXTENDS
#define EXTENDS 0       /* extends per client */
#endif
#ifndef LOSSES
#define LOSSES 0        /* requests the network may drop */
#endif
#ifndef CRASH_KEEP
#define CRASH_KEEP 0    /* crashes that keep the data */
#endif
#ifndef CRASH_LOSE
#define CRASH_LOSE 0    /* crashes that lose the data */
#endif
#ifndef ROLLBACK
#define ROLLBACK 0      /* restarts from an older snapshot */
#endif
#ifndef CHECK_FENCE
#define CHECK_FENCE 1   /* 0: tokens are not computed (a smaller search) */
#endif
#ifndef CHECK_RESERVE
#define CHECK_RESERVE 1 /* 0: the reservation is not asserted (see assert_reserved) */
#endif
#ifndef CHECK_STALL
#define CHECK_STALL 1   /* 0: the bounded stall is not asserted (see the clock) */
#endif
#ifndef CLAIM
#define CLAIM 2         /* a handed lock is held at once (0: auto-renewed, or
                           TTL <= LEASE), claimed with an extend first (1), or
                           either (2) */
#endif
#ifndef DIRECT
#define DIRECT 7        /* the clients that ask for the hand-over, a bit
                           each; the others (--replicas, --restart-delay)
                           are told to try: the release deletes NAME */
#endif
/* Mutations, for the negative controls: BARGE (the mutex acquire does not
 * read the queue's mark), NO_LEASE_END (the fair acquire keeps dead waiters:
 * the head's reservation ignores the end of its lease), FORGET_QUEUE (the
 * release of a waiter that gives up leaves it in the queue),
 * HANDOVER_NO_IDENTITY (a waiter takes any hand-over of its token, without
 * comparing the lease end), HANDOVER_FULL_TTL (the hand-over's key lives
 * the TTL, not at most the head's lease), HANDOVER_KEEP_IDENTITY (an
 * attempt that is not busy leaves the lease end and start of the last
 * busy one in place). An attempt a migrating slot served nowhere is no
 * step here: it writes nothing and sends no cleanup, so it leaves them in
 * place in the code too (attempt.c). */

#define SUB 4
#define FLOOR (-(TTL + 2) * SUB)
#define NT (NC * CALLS) /* tokens: client c's k-th acquisition has token c * CALLS + k */
#define NONE 255
#define ASKS(c) ((DIRECT >> (c)) & 1)
#define NID 5           /* lease identities 1 .. NID - 1 (0: none) */
#if TTL > LEASE
#define HSHORT (TTL - LEASE)  /* a hand-over's validity is min(TTL, LEASE) - DRIFT */
#else
#define HSHORT 0
#endif

/* ---- the server ---------------------------------------------------------- */
byte us;                 /* sub-ticks of this tick already read */
bool up = true;
byte down;               /* ticks before a crashed server may restart */
byte lk;                 /* NAME: the holder's token + 1, 0 when free */
byte lttl;               /* ticks until NAME expires */
short sfence;            /* the fence key */
bool inq[NT];            /* the queue: token -> ... */
byte arr[NT];            /* ... its rank by arrival (1: the head) */
byte lease[NT];          /* presence: ticks until the lease ends (0: dead) */
byte lid[NT];            /* ... and the identity of its lease's end (0: none) */
byte qttl;               /* ticks until the queue's three keys expire */
bool snapped;            /* the last snapshot, if any */
byte slk, slttl, sqttl;
short ssfence;
bool sinq[NT];
byte sarr[NT], slease[NT];
byte losses = LOSSES, crash_keep = CRASH_KEEP, crash_lose = CRASH_LOSE;
byte rollbacks = ROLLBACK;

/* Ghost: the waiters that left (a release with ARGV[3] "1" ran). */
bool left[NT];
/* Ghost, CHECK_STALL: the first live waiter while the lock is free (its
 * token), or the head a lock was handed to and has not claimed (its token
 * + NT), and for how many ticks it has been (since the last grant). */
byte sh = NONE;
byte sst;
/* Ghost, CHECK_STALL: the holder + 1 of a lock handed over and not yet
 * claimed (an extend, or a retry of its acquire), 0 if none. */
byte hown;

/* ---- clients' calls ------------------------------------------------------ */
/* FACQ, FREL: the fair scripts (FREL: ARGV[3] "1", the caller's release or
 * a waiter that gives up); CLEAN: the fair release as a cleanup (ARGV[3]
 * "0"); MACQ, MREL: the mutex's; EXT: the extend both kinds use. */
mtype = { FACQ, FREL, CLEAN, MACQ, MREL, MCLEAN, EXT };
#define YES 1
#define NO 0
#define QUEUED 2        /* a mutex release of ours that a live queue mark left to the fair release */

mtype cop[NC];
byte ctok[NC];
bool pend[NC];           /* the request is in flight */
bool open[NC];           /* the call waits for its reply */
bool answered[NC];
byte cres[NC];
short cfence[NC];
byte cdl[NC];
short cvu[NC];
byte cid[NC];            /* a busy fair acquire's lease identity (LEASE_END) */

/* The latest hand-over message for a client: its token (NONE: none), the
 * identity of the lease end it names and its fence. Pub/sub: it may be
 * read late, after later attempts, or never (lost). */
byte gtok[NC];
byte gid[NC];
short gF[NC];

/* What the client remembers of its last attempt: the lease identity of a
 * busy answer (0 after any other outcome), and a ghost of the validity a
 * hand-over would have, counting down from the attempt's start:
 * min(TTL, LEASE) - DRIFT (dlock__attempt_handed()). */
byte hid[NC];
short hvu[NC];

/* What the properties look at: a client believes it holds the lock while
 * held[c] and its validity has not passed. */
bool held[NC];
short vu[NC];
short cF[NC];
short last_fence;        /* the token of the last grant that counted */

#define BELIEVES(c) (held[c] && vu[c] > 0)
#if NC == 3
#define BELIEVERS (BELIEVES(0) + BELIEVES(1) + BELIEVES(2))
#elif NC == 2
#define BELIEVERS (BELIEVES(0) + BELIEVES(1))
#else
#error "NC is 2 or 3"
#endif

/* A live waiter: in the queue, its lease not ended, and it has not left. */
#define LIVE_W(u) (inq[u] && lease[u] > 0 && !left[u])
/* u joined before t (t not in the queue arrives now, after all of them). */
#define AHEAD(u, t) (u != t && inq[u] && (!inq[t] || arr[u] < arr[t]))

/* A hand-over message that can never be taken: the lease end it names is
 * neither the one the client remembers nor the one of an answer it has
 * yet to read (a renewal's identity is new, so none will be). It is
 * dropped at once: the same executions, fewer states. A mutant that does
 * not compare the identity keeps it. */
#ifdef HANDOVER_NO_IDENTITY
#define MSG_DEAD(i) false
#else
#define MSG_DEAD(i) (gtok[i] != NONE && gid[i] != hid[i] && gid[i] != cid[i])
#endif

inline read_message(i) {
    gtok[i] = NONE; gid[i] = 0; gF[i] = FLOOR
}

inline drop_dead_message(i) {
    if
    :: MSG_DEAD(i) -> read_message(i)
    :: else -> skip
    fi
}

/* ---- the scripts --------------------------------------------------------- */
/* leave(): out of the queue, presence and wake; those behind move up. */
inline leave(t) {
    if
    :: inq[t] ->
        for (j : 0 .. NT - 1) {
            if
            :: inq[j] && arr[j] > arr[t] -> arr[j]--
            :: else -> skip
            fi
        }
        inq[t] = false; arr[t] = 0; lease[t] = 0; lid[t] = 0; j = 0
    :: else -> skip
    fi
}

/* The waiters whose lease ended (live_head() drops them all). */
inline drop_dead() {
    for (k : 0 .. NT - 1) {
        if
        :: inq[k] && lease[k] == 0 -> leave(k)
        :: else -> skip
        fi
    }
    k = 0
}

/* live_head() of the scripts: the dead go (all of them) only when the head
 * is dead; a dead waiter behind a live head stays in the queue. */
inline drop_dead_at_head() {
    qe = false;
    for (k : 0 .. NT - 1) { qe = qe || (inq[k] && arr[k] == 1 && lease[k] == 0) }
    k = 0;
    if
    :: qe -> drop_dead()
    :: else -> skip
    fi;
    qe = false
}

/* The first in the queue, or NONE. */
inline find_head() {
    head = NONE;
    for (k : 0 .. NT - 1) {
        if
        :: inq[k] && arr[k] == 1 -> head = k
        :: else -> skip
        fi
    }
    k = 0
}

/* An empty sorted set is no key: its TTL goes with it. */
inline queue_empty() {
    qe = true;
    for (k : 0 .. NT - 1) { qe = qe && !inq[k] }
    k = 0;
    if
    :: qe -> qttl = 0
    :: else -> skip
    fi
}

/* FIFO among live waiters: a grant to t while a live waiter is ahead of it
 * is a barge. A retry of a call that was granted already (NAME holds our
 * token) is no new grant: its order was checked when it was made. */
inline assert_fifo(t) {
    for (k : 0 .. NT - 1) { assert(lk == t + 1 || !(AHEAD(k, t) && LIVE_W(k))) }
    k = 0
}

/* A free lock is refused to a fair waiter only for a live waiter ahead of
 * it: the reservation of the head lasts no longer than its lease. */
inline assert_reserved(t) {
#if CHECK_RESERVE
    qe = false;
    for (k : 0 .. NT - 1) { qe = qe || (AHEAD(k, t) && LIVE_W(k)) }
    k = 0;
    assert(qe)
#else
    skip
#endif
}

inline grant(t) {
    assert_fifo(t);
#if !CHECK_FENCE
    f = FLOOR;
#else
    us++;
    f = (sfence + 1 > us -> sfence + 1 : us);
#endif
    lk = t + 1; lttl = TTL - DRIFT; sfence = f; res = YES;
    sh = NONE; sst = 0; hown = 0   /* a grant ends a stall, and claims a hand-over */
}

/* Renames identity 1 to v and v to 1. */
inline swap_id(x, v) {
    x = (x == 1 -> v : (x == v -> 1 : x))
}

/* A new lease end for token t: an identity that nothing holds (each
 * renewal's end is a new time). Only equality is ever read, so the labels
 * are renamed such that the new one is 1: one state for what differs
 * only by the names. */
inline lid_fresh(t) {
    n = t / CALLS;
#if !defined(HANDOVER_NO_IDENTITY) && !defined(HANDOVER_KEEP_IDENTITY)
    /* The client waits for this very answer (or gave up on it, and forgot
     * its lease end then): whatever the answer, it replaces what the
     * client remembers before any message is read. What it remembers, and
     * a message about an older lease, are never compared again (fewer
     * states; the mutants keep them). */
    hid[n] = 0; hvu[n] = 0;
    if
    :: gtok[n] == t -> read_message(n)
    :: else -> skip
    fi;
#endif
    v = 0;
    do
    :: v++;
        qe = (hid[n] == v || gid[n] == v || cid[n] == v);
        for (k : 0 .. NT - 1) { qe = qe || (k / CALLS == n && lid[k] == v) }
        if
        :: !qe -> break
        :: else -> skip
        fi
    od;
    assert(v < NID);
    swap_id(hid[n], v); swap_id(gid[n], v); swap_id(cid[n], v);
    for (k : 0 .. NT - 1) {
        if
        :: k / CALLS == n -> swap_id(lid[k], v)
        :: else -> skip
        fi
    }
    k = 0; lid[t] = 1; n = 0; v = 0; qe = false
}

/* fair_acquire: held by another, it is refused without reading the head;
 * else the dead go if the head is dead. Ours already, or free with no
 * head or us at the head: granted, and we leave the queue. Else a waiter
 * whose own lease ended leaves; join at the tail (or keep our place) and
 * renew our lease; the keys live as long as the longest lease, which is
 * ours now (a renewal that ends within the queue's mark, which the keys
 * live to already, writes neither: the same ends, in ms below a tick). */
inline fair_acquire(t) {
    head = NONE;
    if
    :: lk != 0 && lk != t + 1 -> skip
    :: else ->
#ifndef NO_LEASE_END
        drop_dead_at_head();
#endif
        find_head()
    fi;
    if
    :: lk == t + 1 || (lk == 0 && (head == NONE || head == t)) ->
        grant(t); leave(t); queue_empty()
    :: else ->
        if
        :: lk == 0 -> assert_reserved(t)
        :: else -> skip
        fi;
#ifndef NO_LEASE_END
        if
        :: inq[t] && lease[t] == 0 -> leave(t)
        :: else -> skip
        fi;
#endif
        if
        :: !inq[t] ->
            n = 0;
            for (k : 0 .. NT - 1) { n = n + inq[k] }
            k = 0;
            inq[t] = true; arr[t] = n + 1
        :: else -> skip
        fi;
        lease[t] = LEASE; qttl = LEASE; lid_fresh(t); res = NO; f = FLOOR
    fi;
    head = 0; n = 0; qe = false
}

/* The release hands NAME to the live head: a grant (the fence as any),
 * the head leaves the queue, and the key lives the TTL or what is left of
 * the head's lease, the shorter; the message names the head's lease end.
 * Until the head claims it, the lock is held for a head that may be dead:
 * the stall check counts it from the start of the head's lease. */
inline hand_over() {
    grant(head);
#ifndef HANDOVER_FULL_TTL
    lttl = (TTL - DRIFT < lease[head] -> TTL - DRIFT : lease[head]);
#endif
    n = head / CALLS;
    gtok[n] = head; gid[n] = lid[head]; gF[n] = f; drop_dead_message(n);
#if CHECK_STALL
    hown = head + 1; sh = head + NT; sst = LEASE - lease[head];
#endif
    leave(head);
    n = 0
}

/* fair_release: the dead go if the head is dead; NAME, if ours, is handed
 * to a live head that asked for it (DIRECT), else deleted; a caller's
 * release (not a cleanup) takes our token out of the queue (a holder is in
 * none), and if we were the head of a free lock the dead go again if the
 * next head is dead. (The "next:" wake-up is not modelled: waiters try
 * again at any time, as their renewals do.) */
inline fair_release(t, leaving) {
    drop_dead_at_head();
    find_head();
    res = (lk == t + 1 -> YES : NO);
    if
    :: lk == t + 1 && head != NONE && ASKS(head / CALLS) -> hand_over()
    :: lk == t + 1 && !(head != NONE && ASKS(head / CALLS)) -> lk = 0; lttl = 0
    :: else -> skip
    fi;
    if
    :: leaving ->
        left[t] = true;
#ifndef FORGET_QUEUE
        leave(t);
        if
        :: head == t && lk == 0 -> drop_dead_at_head()
        :: else -> skip
        fi
#else
        skip
#endif
    :: else -> skip
    fi;
    queue_empty(); f = FLOOR; qe = false; head = 0
}

/* The mutex's acquire: busy when NAME holds another token; when NAME is
 * free, busy while the fence key's mark of the queue lasts. The mark ends
 * with the longest presence lease of the queue's members as the last fair
 * script left them (set_fence(), mark_queue() in fair_helpers.lua), and
 * members change only in fair scripts or all at once, when the queue's
 * keys expire: so it lasts while a member's lease has not ended. */
inline mutex_acquire(t) {
    qe = true;
    for (k : 0 .. NT - 1) { qe = qe && !(inq[k] && lease[k] > 0) }
    k = 0;
    if
    :: lk != 0 && lk != t + 1 -> res = NO; f = FLOOR
#ifndef BARGE
    :: lk == 0 && !qe -> res = NO; f = FLOOR
#endif
    :: else -> grant(t)
    fi;
    qe = false
}

/* The mutex's release (`checks`: a release, not a cleanup, which names the
 * fence key): ours while the queue's mark lasts, it writes nothing and
 * answers QUEUED, for the client's fair release to hand the lock on. */
inline mutex_release(t, checks) {
    qe = true;
    for (k : 0 .. NT - 1) { qe = qe && !(inq[k] && lease[k] > 0) }
    k = 0;
    if
    :: lk == t + 1 && checks && !qe -> res = QUEUED
    :: lk == t + 1 && !(checks && !qe) -> lk = 0; lttl = 0; res = YES
    :: else -> res = NO
    fi;
    qe = false;
    f = FLOOR
}

inline extend_script(t) {
    if
    :: lk == t + 1 -> lttl = TTL - DRIFT; res = YES; hown = 0
    :: else -> res = NO
    fi;
    f = FLOOR
}

/* ---- the server's process ------------------------------------------------ */
#define SERVE(c) \
    :: up && pend[c] && (cop[c] == MREL || cop[c] == MCLEAN || cop[c] == EXT || us < SUB - 1) -> \
        d_step { \
            pend[c] = false; \
            if \
            :: cop[c] == FACQ -> fair_acquire(ctok[c]) \
            :: cop[c] == FREL -> fair_release(ctok[c], true) \
            :: cop[c] == CLEAN -> fair_release(ctok[c], false) \
            :: cop[c] == MACQ -> mutex_acquire(ctok[c]) \
            :: cop[c] == MREL -> mutex_release(ctok[c], true) \
            :: cop[c] == MCLEAN -> mutex_release(ctok[c], false) \
            :: cop[c] == EXT -> extend_script(ctok[c]) \
            fi; \
            if \
            :: open[c] -> answered[c] = true; cres[c] = res; cfence[c] = f; \
                cid[c] = (cop[c] == FACQ && res == NO -> lid[ctok[c]] : 0) \
            :: else -> skip \
            fi; \
            res = 0; f = 0 \
        }

#define LOSE(c) :: losses > 0 && pend[c] -> d_step { pend[c] = false; losses-- }

inline crash() {
    up = false;
    for (k : 0 .. NC - 1) { pend[k] = false }
    k = 0
}

/* Restores the last snapshot (empty unless one was taken). Not the
 * identities of the leases: every restored lease ends before the server is
 * back (RDELAY > LEASE), and an ended lease is never handed the lock. */
inline lose_data() {
    lk = slk; lttl = slttl; sfence = ssfence; qttl = sqttl;
    for (k : 0 .. NT - 1) {
        inq[k] = sinq[k]; arr[k] = sarr[k]; lease[k] = slease[k]; lid[k] = 0
    }
    k = 0
}

proctype server() {
    byte k, j, res, head, n, v;
    bool qe;
    short f;
end:
    do
    SERVE(0)
    SERVE(1)
    LOSE(0)
    LOSE(1)
#if NC == 3
    SERVE(2)
    LOSE(2)
#endif
    :: rollbacks > 0 && up ->
        d_step {
            snapped = true; slk = lk; slttl = lttl; ssfence = sfence; sqttl = qttl;
            for (k : 0 .. NT - 1) {
                sinq[k] = inq[k]; sarr[k] = arr[k]; slease[k] = lease[k]
            }
            k = 0
        }
    :: crash_keep > 0 && up -> d_step { crash_keep--; crash(); down = 1 }
    :: crash_lose > 0 && up -> d_step { crash_lose--; crash(); lose_data(); down = RDELAY }
    :: rollbacks > 0 && up && snapped -> d_step { rollbacks = 0; crash(); lose_data(); down = RDELAY }
    :: !up && down == 0 -> up = true
    od
}

/* ---- time ---------------------------------------------------------------- */
#define DEC(x) x = (x > 0 -> x - 1 : 0)
#define AGE(x) x = (x >= FLOOR + SUB -> x - SUB : (x > FLOOR -> FLOOR : x))

/* Bounded stall (CHECK_STALL): one waiter blocks the lock for fewer than
 * LEASE tick boundaries (so at most LEASE ticks): while the lock is free,
 * the first live waiter; while it is handed over and not claimed, the
 * head it went to, counted from the start of that head's lease (see
 * hand_over()). A free lock's first live waiter's lease ends by then,
 * unless it renews, and a renewal of the first live waiter finds a free
 * lock with nobody live ahead: a grant. A hand-over's key lives no longer
 * than the head's lease, unless the head claims it. */
inline check_stall() {
#if CHECK_STALL
    h = NONE;
    if
    :: hown != 0 && lk == hown -> h = hown - 1 + NT  /* not the same stall as a waiter's */
    :: lk == 0 ->
        for (i : 0 .. NT - 1) {
            if
            :: LIVE_W(i) && (h == NONE || arr[i] < arr[h]) -> h = i
            :: else -> skip
            fi
        }
    :: else -> skip
    fi;
    if
    :: h != NONE && h == sh -> sst++
    :: h != NONE && h != sh -> sh = h; sst = 1
    :: else -> sh = NONE; sst = 0
    fi;
    assert(sst < LEASE);
    h = 0
#else
    skip
#endif
}

/* A key expires by itself: NAME when its TTL ends, the queue's keys (and so
 * every entry in them, dead or not) when theirs does. */
active proctype clock() {
    byte i, h;
end:
    do
    :: d_step {
            DEC(lttl); DEC(slttl);
            if
            :: lttl == 0 -> lk = 0
            :: else -> skip
            fi;
            if
            :: slttl == 0 -> slk = 0
            :: else -> skip
            fi;
            DEC(qttl); DEC(sqttl);
            hown = (lk == hown -> hown : 0);
            for (i : 0 .. NT - 1) {
                DEC(lease[i]); DEC(slease[i]);
                lid[i] = (lease[i] > 0 -> lid[i] : 0);   /* an ended lease is never handed */
                if
                :: qttl == 0 -> inq[i] = false; arr[i] = 0
                :: else -> skip
                fi;
                if
                :: sqttl == 0 -> sinq[i] = false; sarr[i] = 0
                :: else -> skip
                fi
            }
            AGE(sfence); AGE(ssfence); AGE(last_fence);
            for (i : 0 .. NC - 1) {
                DEC(cdl[i]); DEC(vu[i]); DEC(cvu[i]); AGE(cF[i]); AGE(cfence[i]);
                AGE(gF[i]); DEC(hvu[i]);
                hid[i] = (hvu[i] > 0 -> hid[i] : 0);  /* no hand-over is taken then */
                drop_dead_message(i)
            }
            DEC(down); us = 0; check_stall(); i = 0
        }
    od
}

/* ---- clients ------------------------------------------------------------- */
inline call(o, t, deadline, validity) {
    cop[c] = o; ctok[c] = t; open[c] = true; answered[c] = false;
    cvu[c] = validity; cdl[c] = deadline; pend[c] = up
}

inline settle() {
    d_step { answered[c] || cdl[c] == 0; open[c] = false; cdl[c] = 0 }
}

/* The reply was read: what is left of it is forgotten (fewer states). */
inline consumed() {
    answered[c] = false; cres[c] = 0; cfence[c] = FLOOR; cvu[c] = 0; cid[c] = 0
}

/* acquire_once(): an attempt's start and, if it was busy, the lease end
 * it was told; any other outcome forgets the lease end. */
#define HVU (cvu[c] > HSHORT -> cvu[c] - HSHORT : 0)
inline remember(busy) {
#if defined(HANDOVER_KEEP_IDENTITY)
    if
    :: busy -> hid[c] = cid[c]; hvu[c] = HVU
    :: else -> skip
    fi
#elif defined(HANDOVER_NO_IDENTITY)
    hid[c] = (busy -> cid[c] : 0); hvu[c] = HVU
#else
    /* The validity is read only with a lease end, and a lease end only
     * by a client that asks for the hand-over (fewer states). */
    hid[c] = (busy && ASKS(c) -> cid[c] : 0); hvu[c] = (busy && ASKS(c) -> HVU : 0)
#endif
    ; cid[c] = 0; drop_dead_message(c)
}

/* dlock__attempt_handed(): a hand-over message for our token is ours if it
 * names the lease end of our last attempt, busy, and the validity counted
 * from that attempt's start has not passed. */
#ifdef HANDOVER_NO_IDENTITY
#define HANDED (gtok[c] == tok && hvu[c] > 0)
#else
#define HANDED (gtok[c] == tok && hid[c] != 0 && gid[c] == hid[c] && hvu[c] > 0)
#endif

/* A belief starts: with validity v and the token in cF[c]. The wait is
 * over: what it kept of its attempts and messages goes (fewer states). */
inline believe(v) {
    held[c] = true; vu[c] = v; hid[c] = 0; hvu[c] = 0; read_message(c);
    assert(BELIEVERS <= 1);
#if CHECK_FENCE
    assert(cF[c] > last_fence);
    last_fence = cF[c]
#else
    skip
#endif
}

/* A request that nobody waits for: a cleanup, a release, a waiter leaving. */
inline send(o) {
    d_step { call(o, tok, 0, 0); open[c] = false }
}

/* A plain holder's release: left to the fair release while a queue waits
 * (QUEUED), else done; no answer by its deadline: the key expires. */
inline plain_release() {
    d_step { call(MREL, tok, NDL, 0) }
    settle();
    if
    :: d_step { answered[c] && cres[c] == QUEUED; consumed() }; send(FREL)
    :: else -> d_step { consumed() }
    fi
}

inline forget() {
    held[c] = false; vu[c] = 0; cF[c] = FLOOR
}

/* A fair waiter tries (a renewal of its lease is a try) at any moment,
 * for as long as it likes, takes a lock handed to it between tries, or
 * gives up (a deadline, a cancel) with a release that leaves the queue.
 * A plain client (PLAIN) acquires as a mutex; one that waits (QUEUES)
 * is a fair waiter from its first refusal on. A call with no answer by its
 * deadline, or a late grant, is cleaned up with a release that keeps the
 * waiter's place (CLEAN; a mutex's cleanup names no fence key: MCLEAN). */
proctype client(byte c) {
    byte tok, calls, extends;
    bool plain;

idle:
    if
    :: calls < CALLS ->
        d_step {
            tok = c * CALLS + calls; calls++; hid[c] = 0; hvu[c] = 0; drop_dead_message(c);
            plain = (PLAIN && c == NC - 1)
        }
    :: else -> goto finish
    fi;
    do
    :: d_step { call((plain -> MACQ : FACQ), tok, NDL, TTL - DRIFT) }
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES && cvu[c] > 0;
                cF[c] = cfence[c]; believe(cvu[c]); consumed()
            }
            goto holding
        :: d_step {
                answered[c] && cres[c] == NO; remember(true); consumed();
                plain = plain && !QUEUES
            }
        :: else -> d_step { remember(false); consumed() }; send((plain -> MCLEAN : CLEAN))
        fi
    :: !plain -> send(FREL); goto idle
    :: plain -> goto idle
    /* A hand-over read between attempts: ours, held at once (the lock is
     * renewed automatically, or TTL <= LEASE) ... */
    :: d_step { CLAIM != 1 && HANDED; cF[c] = gF[c]; read_message(c); believe(hvu[c]) }
        goto holding
    /* ... or claimed first for the TTL with an extend; refused: it lapsed. */
    :: d_step {
            CLAIM != 0 && HANDED;
            cF[c] = gF[c]; read_message(c); call(EXT, tok, NDL, TTL - DRIFT)
        }
        settle();
        if
        :: d_step { answered[c] && cres[c] == YES && cvu[c] > 0; believe(cvu[c]); consumed() }
            goto holding
        :: else -> d_step { consumed(); cF[c] = FLOOR }  /* refused, late or lost */
        fi
    /* ... or not ours (or lost): try again. */
    :: d_step { gtok[c] != NONE && !HANDED; read_message(c) }
    od;

holding:
    do
    :: vu[c] == 0 && plain -> forget(); plain_release(); goto idle
    :: vu[c] == 0 && !plain -> forget(); send(FREL); goto idle
    :: d_step { extends < EXTENDS && vu[c] > 0; extends++; call(EXT, tok, NDL, TTL - DRIFT) }
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES;
                vu[c] = cvu[c]; consumed(); assert(BELIEVERS <= 1)
            }
        :: d_step { answered[c] && cres[c] == NO; consumed(); forget() };
            if
            :: plain -> plain_release()
            :: else -> send(FREL)
            fi;
            goto idle
        :: else -> d_step { consumed() }  /* no verdict: the old validity stands */
        fi
    :: plain -> d_step { forget() }; plain_release(); goto idle
    :: !plain -> d_step { forget() }; send(FREL); goto idle
    od;

finish:
    skip
}

init {
    byte i;
    atomic {
        sfence = FLOOR; ssfence = FLOOR; last_fence = FLOOR;
        for (i : 0 .. NC - 1) { cF[i] = FLOOR; cfence[i] = FLOOR; gF[i] = FLOOR; gtok[i] = NONE }
        run server();
        run client(0);
        run client(1);
#if NC == 3
        run client(2);
#endif
        i = 0
    }
}
