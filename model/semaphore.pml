/* dlock's semaphore, as SPIN sees it: the sem_* Lua scripts of
 * src/kinds/lua/ (acquire with reap, slots and per-slot fences;
 * release; extend) on the one server a semaphore lives on, and the attempt
 * layer's validity on the clients' side; with QUEUE, the waiters' queue
 * (sem_acquire's reservation of the free permits for the first live
 * waiters, join, keep_place, leave and live_waiters() of helpers.lua,
 * the presence leases), sem_release's targeted wake-up ("next:TOKEN" to
 * each waiter it makes entitled, computed before and after freeing the
 * permit) and the waiter of wait.c and queue.c, which sleeps until told
 * or until the wait its busy answer named; with DIRECT, sem_release's
 * hand-over of the permit to a waiter that asked for it ("grant:TOKEN:
 * FENCE:LEASE_END:SLOT") and its taking (dlock__attempt_handed(),
 * take_handed()). docs/model.md says what is modelled, with which bounds
 * and assumptions.
 *
 * scripts/model compares these pins with the sha1sum of each file; a
 * change to any of them fails it until this model was reviewed against
 * the change and its pin updated. A model pins every script of its kind
 * (the `kind` line: src/kinds/lua/KIND_*.lua, which scripts/model
 * checks), the helpers every script shares, the kind's C
 * (src/kinds/KIND.c) and the attempt layer; and the queue's client side
 * and the waiter (src/kinds/queue.c, src/engine/wait.c), which QUEUE
 * models:
 * kind sem
 * pin src/kinds/lua/helpers.lua 861c27fdbc25fb282c182d0eabd6dccd29666296
 * pin src/kinds/lua/sem_acquire.lua b96cf9b38b19e10f3e56f315ef36f7c16e7c5fb9
 * pin src/kinds/lua/sem_extend.lua caf4af26783a350dc0520097470913b6d0f6afa8
 * pin src/kinds/lua/sem_helpers.lua 8e1fd907e9e45f4f1bc30d69c719a7aaef218a12
 * pin src/kinds/lua/sem_release.lua 0122bd5b083ac17ca049959e696d99cad81addf3
 * pin src/kinds/lua/sem_status.lua dbbd592f11049a184e31108de40b970e3ede2095
 * pin src/kinds/semaphore.c 3309b5a69c7c2d9c92d2fd6a3cbca14d91fc63c7
 * pin src/engine/attempt.c d9a0584947d9f0f86f59381e28f461cb0c119f47
 * pin src/kinds/queue.c a566aeb6e387b9528fb3079ebd49791ddc1dc2cf
 * pin src/engine/wait.c cfd4ac4eecacf4d87b832e9510adeaea3741aef1
 *
 * Time is kept as in dlock.pml: relative to "now", moved one tick at a time
 * by the clock process; a permit keeps the ticks left until its score (its
 * expiry in server time) is reached, a fencing token its distance from now
 * in sub-ticks, clamped at FLOOR far in the past. An expired permit is one
 * that no script counts (every script reads `score > now` only), so it is
 * dropped when its time comes, as a reap would.
 *
 * The end of a presence lease, which a busy answer and a hand-over name
 * and the client compares for equality only, is kept as an identity, as
 * in fair.pml (lid_fresh()). A hand-over's permit lives min(TTL, what is
 * left of the waiter's lease): a live waiter's lease is whole here (see
 * the queue), so this model checks the count, the slots, the fences and
 * the identity of a hand-over; that the permit outlives the validity the
 * waiter counts from its try is fair.pml's, where leases count down, and
 * the same C takes both hand-overs. */

/* ---- parameters (scripts/model passes -D flags) -------------------------- */
#ifndef NC
#define NC 3            /* clients: 2 or 3 */
#endif
#ifndef PERMITS
#define PERMITS 2       /* the semaphore's limit, N */
#endif
#ifndef TTL
#define TTL 3           /* ticks */
#endif
#ifndef DRIFT
#define DRIFT 1         /* the server's clock may run fast: a permit lives
                           TTL - DRIFT ticks at least; the client's drift term */
#endif
#ifndef NDL
#define NDL 1           /* the call's deadline, ticks */
#endif
#ifndef RDELAY
#define RDELAY (TTL + 1)  /* a server that lost data stays down this long */
#endif
#ifndef CALLS
#define CALLS 2         /* acquire calls per client (one token each) */
#endif
#ifndef EXTENDS
#define EXTENDS 1       /* extends per client */
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
#define CHECK_FENCE 1   /* 0: tokens are not computed (a smaller search for the count) */
#endif
#ifndef QUEUE
#define QUEUE 0         /* 1: the clients wait: refused, they queue, sleep
                           until told or their timer rings, and try again */
#endif
#ifndef LEASE
#define LEASE 2         /* a waiter's presence lease, ticks */
#endif
#ifndef SAFETY_NET
#define SAFETY_NET 0    /* 1: a sleeping waiter may also try at any moment
                           (the backoff cap, its lease renewal) */
#endif
#ifndef GIVEUPS
#define GIVEUPS 1       /* waiters that may give up (and leave the queue) */
#endif
#ifndef DIES
#define DIES 0          /* clients that may die: stop for good, waiting or
                           holding (no release, no renewal) */
#endif
#ifndef SLOW
#define SLOW 255        /* calls that may go unanswered by their deadline
                           (255: any); the others are answered in time */
#endif
#ifndef CHECK_TOLD
#define CHECK_TOLD 1    /* 0: the wake-up is not asserted (see TOLD) */
#endif
#ifndef CHECK_RESERVE
#define CHECK_RESERVE 1 /* 0: the reservation is not asserted (see acquire_script) */
#endif
#ifndef DIRECT
#define DIRECT 0        /* with QUEUE, the clients that ask for the hand-over,
                           a bit each; the others (--replicas,
                           --restart-delay) are told to try */
#endif
#ifndef CLAIM
#define CLAIM 2         /* a permit handed over is held at once (0: renewed,
                           or TTL <= LEASE), claimed with an extend first
                           (1), or either (2) */
#endif
/* Mutations, for the negative controls: OFF_BY_ONE (the busy check lets
 * N + 1 permits in), NO_TIME_FLOOR (a slot's token is its stored one + 1);
 * with QUEUE: TELL_HEAD (a release that entitles a waiter tells the
 * queue's first entry instead), TELL_LATE (the release reads who is
 * entitled "before" only after it freed the permit: it tells nobody),
 * TELL_DEAD (the release's entitled waiters are the first entries of the
 * queue, dead or not), BARGE (a newcomer takes a free permit kept for a
 * waiter), NO_LEASE_END (the acquire keeps a free permit for a waiter
 * whose lease ended), NO_TIMER (a waiter sleeps until told, and only),
 * HANDOVER_NO_IDENTITY (a waiter takes any hand-over of its token,
 * without comparing the lease end). */

#if QUEUE && (LOSSES || CRASH_KEEP || CRASH_LOSE || ROLLBACK || defined(NO_TIME_FLOOR) || defined(OFF_BY_ONE))
#error "QUEUE is modelled without faults (see docs/model.md)"
#endif

#define SUB 4
#define FLOOR (-(TTL + 2) * SUB)
#define NT (NC * CALLS) /* tokens: client c's k-th call has token c * CALLS + k */
#define NONE 255        /* no slot */
#define NSLOT (PERMITS + 1) /* room for the slot a mutant that lets N + 1 in gives */
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
short prem[NT];          /* a permit: ticks until its score (0: none) ... */
byte pslot[NT];          /* ... and its slot */
short sfence[NSLOT];   /* the fences hash: slot -> last token */
bool snapped;            /* the last snapshot, if any */
short srem[NT];
byte sslot[NT];
short ssfence[NSLOT];
byte losses = LOSSES, crash_keep = CRASH_KEEP, crash_lose = CRASH_LOSE;
byte rollbacks = ROLLBACK;

/* The waiters' queue (QUEUE): token -> in it, its rank by arrival (1: the
 * first; ranks are all the scripts read of the arrival times), and the
 * ticks until its presence lease ends (0: ended). A live client renews
 * its lease in time (its tries and renewals are at most a third of the
 * lease apart), so its lease stays whole; a dead client's counts down. An
 * entry whose lease ended is read by no script but live_waiters(), which
 * drops it: the clock drops it when it ends (the same executions, fewer
 * states), unless a mutant reads it. */
bool inq[NT];
byte arr[NT];
byte lease[NT];
byte lid[NT];            /* the identity of its lease's end (0: none) */
byte giveups = GIVEUPS, deaths = DIES, slows = SLOW;

/* ---- clients' calls ------------------------------------------------------ */
mtype = { ACQ, REL, CLEAN, EXT };   /* REL: ARGV[3] "1"; CLEAN: a cleanup, "0" */
#define YES 1
#define NO 0

mtype cop[NC];
byte ctok[NC];
bool pend[NC];           /* the request is in flight */
bool open[NC];           /* the call waits for its reply */
bool answered[NC];
byte cres[NC];
short cfence[NC];
byte cslot[NC];
byte cdl[NC];
short cvu[NC];
byte cwt[NC];            /* a busy answer's wait, ticks (QUEUE) */
byte cid[NC];            /* a busy answer's lease identity (DIRECT) */

/* The latest hand-over message for a client (DIRECT): its token (NONE:
 * none), the identity of the lease end it names, its fence and slot. What
 * the client remembers of its last attempt: the lease identity of a busy
 * answer (0 after any other outcome), and a ghost of the validity a
 * hand-over would have, counting down from the attempt's start:
 * min(TTL, LEASE) - DRIFT (dlock__attempt_handed()). */
byte gtok[NC];
byte gid[NC];
short gF[NC];
byte gS[NC];
byte hid[NC];
short hvu[NC];

/* The waiter's side (QUEUE): a "next:TOKEN" for the client's current
 * token, unread (one is enough: it only wakes); its timer, the ticks
 * until the wait a busy answer named (0: rung); it sleeps; it died. */
bool wmsg[NC];
byte wt[NC];
bool asleep[NC];
bool dead[NC];
/* Ghost: a release made the client's waiting token entitled to a free
 * permit, and it has not tried since. */
bool owed[NC];

/* What the properties look at: a client believes it holds a permit while
 * held[c] and its validity has not passed. */
bool held[NC];
short vu[NC];
short cF[NC];
byte cS[NC];
short last_fence[NSLOT]; /* per slot: the token of the last grant that counted */

/* No lost wake-up (CHECK_TOLD): a waiter that a release made entitled
 * to a free permit is not left asleep untold. */
#define TOLD(i) (!owed[i] || !asleep[i] || wmsg[i])

#define BELIEVES(c) (held[c] && vu[c] > 0)
#define SAME_SLOT(a, b) (BELIEVES(a) && BELIEVES(b) && cS[a] == cS[b])
#if NC == 3
#define BELIEVERS (BELIEVES(0) + BELIEVES(1) + BELIEVES(2))
#define SLOTS_APART (!SAME_SLOT(0, 1) && !SAME_SLOT(0, 2) && !SAME_SLOT(1, 2))
#elif NC == 2
#define BELIEVERS (BELIEVES(0) + BELIEVES(1))
#define SLOTS_APART (!SAME_SLOT(0, 1))
#else
#error "NC is 2 or 3"
#endif

/* ---- the scripts --------------------------------------------------------- */
/* The live permits, and whether slot s is taken by one other than t. */
inline count_live() {
    live = 0;
    for (k : 0 .. NT - 1) {
        if
        :: prem[k] > 0 -> live++
        :: else -> skip
        fi
    }
    k = 0
}

inline slot_taken(s, t) {
    taken = false;
    for (k : 0 .. NT - 1) {
        if
        :: k != t && prem[k] > 0 && pslot[k] == s -> taken = true
        :: else -> skip
        fi
    }
    k = 0
}

#ifdef OFF_BY_ONE
#define FULL (live > PERMITS)
#else
#define FULL (live >= PERMITS)
#endif

/* ---- the queue (QUEUE) --------------------------------------------------- */
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

/* live_waiters(free) of helpers.lua: if one of the first `free` entries
 * is dead, every dead entry leaves; the first `free` are then live. Their
 * tokens as a bit set in m. */
inline live_waiters(free, drops) {
    m = 0;
    if
    :: drops ->
        for (k : 0 .. NT - 1) { m = m | ((inq[k] && arr[k] <= free && lease[k] == 0) -> 1 : 0) }
        if
        :: m != 0 ->
            for (k : 0 .. NT - 1) {
                if
                :: inq[k] && lease[k] == 0 -> leave(k)
                :: else -> skip
                fi
            }
        :: else -> skip
        fi;
        m = 0
    :: else -> skip
    fi;
    for (k : 0 .. NT - 1) {
        if
        :: inq[k] && arr[k] <= free -> m = m | (1 << k)
        :: else -> skip
        fi
    }
    k = 0
}

/* The live waiters ahead of t (t not in the queue arrives after all). */
inline count_ahead(t) {
    ahead = 0;
    for (k : 0 .. NT - 1) {
        if
        :: k != t && inq[k] && lease[k] > 0 && (!inq[t] || arr[k] < arr[t]) -> ahead++
        :: else -> skip
        fi
    }
    k = 0
}

/* Ghost: the waiters entitled to a free permit, by the rule itself: live,
 * and fewer live waiters ahead than there are free permits. */
inline entitled_truth(e) {
    count_live();
    e = 0;
    for (i : 0 .. NT - 1) {
        if
        :: inq[i] && lease[i] > 0 ->
            count_ahead(i);
            e = e | ((PERMITS - live > ahead) -> (1 << i) : 0)
        :: else -> skip
        fi
    }
    i = 0; ahead = 0
}

/* sem_release's entitled(): the waiters the free permits are kept for. */
inline entitled(e) {
    count_live();
    e = 0;
    if
    :: queued && PERMITS > live ->
#ifdef TELL_DEAD
        live_waiters(PERMITS - live, false);
#else
        live_waiters(PERMITS - live, true);
#endif
        e = m; m = 0
    :: else -> skip
    fi
}

/* The release's message "next:TOKEN" on the channel of the token's
 * process: the client reads it if it is for its current token (the
 * others' and its old ones do not wake it). */
inline tell(i) {
    n = i / CALLS;
    wmsg[n] = wmsg[n] || (ctok[n] == i && !dead[n]);
    n = 0
}

/* A hand-over message that can never be taken: the lease end it names is
 * neither the one the client remembers nor the one of an answer it has
 * yet to read. It is dropped at once: the same executions, fewer states.
 * A mutant that does not compare the identity keeps it. */
#ifdef HANDOVER_NO_IDENTITY
#define MSG_DEAD(i) false
#else
#define MSG_DEAD(i) (gtok[i] != NONE && gid[i] != hid[i] && gid[i] != cid[i])
#endif

inline read_message(i) {
    gtok[i] = NONE; gid[i] = 0; gF[i] = FLOOR; gS[i] = NONE
}

inline drop_dead_message(i) {
    if
    :: MSG_DEAD(i) -> read_message(i)
    :: else -> skip
    fi
}

/* Renames identity 1 to v and v to 1. */
inline swap_id(x, v) {
    x = (x == 1 -> v : (x == v -> 1 : x))
}

/* A new lease end for token t, of a client that asks for the hand-over:
 * an identity that nothing holds (each renewal's end is a new time),
 * renamed to 1 (only equality is read: one state for what differs only by
 * the names). The client waits for this very answer (or gave up on it,
 * and forgot its lease end then): what it remembers, and a message about
 * an older lease, are never compared again (the mutant keeps them). */
inline lid_fresh(t) {
    n = t / CALLS;
#ifndef HANDOVER_NO_IDENTITY
    hid[n] = 0; hvu[n] = 0;
    if
    :: gtok[n] == t -> read_message(n)
    :: else -> skip
    fi;
#endif
    v = 0;
    do
    :: v++;
        used = (hid[n] == v || gid[n] == v || cid[n] == v);
        for (k : 0 .. NT - 1) { used = used || (k / CALLS == n && lid[k] == v) }
        if
        :: !used -> break
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
    k = 0; lid[t] = 1; n = 0; v = 0; used = false
}

/* The lowest slot no live permit but t's holds, into slot. */
inline lowest_slot(t) {
    slot = 0;
    do
    :: slot_taken(slot, t);
       if
       :: taken -> slot++
       :: else -> break
       fi
    od
}

/* The next token of a slot: max(stored + 1, the clock), into f. */
inline next_fence(s) {
#if !CHECK_FENCE
    f = FLOOR
#elif defined(NO_TIME_FLOOR)
    f = sfence[s] + 1
#else
    us++;
    f = (sfence[s] + 1 > us -> sfence[s] + 1 : us)
#endif
}

/* sem_release's hand-over to waiter i: the lowest free slot, fenced by
 * the rule, for TTL or what is left of its lease, the shorter; it leaves
 * the queue, and its client is sent the message. */
inline hand_over(i) {
    lowest_slot(i);
    next_fence(slot);
    prem[i] = (TTL - DRIFT < lease[i] -> TTL - DRIFT : lease[i]); pslot[i] = slot; sfence[slot] = f;
    n = i / CALLS;
    gtok[n] = i; gid[n] = lid[i]; gF[n] = f; gS[n] = slot; drop_dead_message(n);
    leave(i);
    n = 0; slot = NONE; f = FLOOR; taken = false
}

/* sem_acquire: a live permit of ours keeps its slot (a retry of our own
 * call); else busy when N permits are live; else the lowest free slot. The
 * slot's token is max(stored + 1, the clock). With QUEUE the free permits
 * are the first live waiters': granted when one of them is ours, or when
 * there are more free permits than live waiters; else busy, with the wait
 * until the soonest permit expires (none free) or the lease of a waiter a
 * free permit is kept for ends (the script caps it at a third of the
 * lease: that cap is the renewal, SAFETY_NET), and the waiter joins the
 * queue at the tail (or keeps its place) and renews its lease. */
inline acquire_script(t) {
    count_live();
#if QUEUE
    ours = (prem[t] > 0);
    w = 0;
    if
    :: !ours && !FULL ->
#ifdef NO_LEASE_END
        live_waiters(PERMITS - live, false);
#else
        live_waiters(PERMITS - live, true);
#endif
        n = 0;
        for (k : 0 .. NT - 1) {
            n = n + ((m >> k) & 1);
            if
            :: (m >> k) & 1 && (w == 0 || lease[k] < w) -> w = lease[k]
            :: else -> skip
            fi
        }
        k = 0;
        ours = (n < PERMITS - live || ((m >> t) & 1));
#ifdef BARGE
        ours = ours || !inq[t];
#endif
        m = 0; n = 0
    :: !ours && FULL ->
        for (k : 0 .. NT - 1) {
            if
            :: prem[k] > 0 && (w == 0 || prem[k] < w) -> w = prem[k]
            :: else -> skip
            fi
        }
        k = 0
    :: else -> skip
    fi;
#if CHECK_RESERVE
    /* A free permit is refused only for live waiters ahead (a dead one
     * withholds it only until its lease ends), and granted only to a
     * waiter no live waiter ahead is owed it before. */
    if
    :: prem[t] == 0 -> count_ahead(t); assert(ours == (!FULL && ahead < PERMITS - live)); ahead = 0
    :: else -> skip
    fi;
#endif
    if
    :: !ours ->
        if
        :: !inq[t] ->
            n = 0;
            for (k : 0 .. NT - 1) { n = n + inq[k] }
            k = 0;
            inq[t] = true; arr[t] = n + 1; n = 0
        :: else -> skip
        fi;
        lease[t] = LEASE; res = NO; f = FLOOR; slot = NONE;
        if
        :: ASKS(t / CALLS) -> lid_fresh(t); id = lid[t]
        :: else -> skip
        fi
    :: else ->
        leave(t);
        w = 0;
#else
    if
    :: prem[t] == 0 && FULL -> res = NO
    :: else ->
#endif
        if
        :: prem[t] > 0 -> slot = pslot[t]
        :: else -> lowest_slot(t)
        fi;
        next_fence(slot);
        prem[t] = TTL - DRIFT; pslot[t] = slot; sfence[slot] = f; res = YES
    fi
}

/* sem_release: with QUEUE, the waiters entitled before and after the
 * release (a caller's release, not a cleanup, also takes the token out of
 * the queue), and each one entitled after and not before is handed a
 * permit if its client asks (DIRECT), else told. */
inline release_script(t, leaving) {
#if QUEUE
    queued = false;
    for (k : 0 .. NT - 1) { queued = queued || inq[k] }
    k = 0;
    entitled_truth(gb);
#ifdef TELL_HEAD
    hd = NONE;
    for (k : 0 .. NT - 1) {
        if
        :: inq[k] && arr[k] == 1 -> hd = k
        :: else -> skip
        fi
    }
    k = 0;
#endif
#ifndef TELL_LATE
    entitled(before);
#endif
    if
    :: queued && leaving -> leave(t)
    :: else -> skip
    fi;
#endif
    prem[t] = 0; pslot[t] = 0; res = YES; f = FLOOR; slot = NONE;
#if QUEUE
#ifdef TELL_LATE
    entitled(before);
#endif
    entitled(after);
    if
    :: queued && (after & ~before) != 0 ->
#ifdef TELL_HEAD
        tell(hd); hd = 0
#else
        for (i : 0 .. NT - 1) {
            if
            :: (after >> i) & 1 && !((before >> i) & 1) && ASKS(i / CALLS) -> hand_over(i)
            :: (after >> i) & 1 && !((before >> i) & 1) && !ASKS(i / CALLS) -> tell(i)
            :: else -> skip
            fi
        }
        i = 0
#endif
    :: else -> skip
    fi;
    entitled_truth(ga);
    for (i : 0 .. NT - 1) {
        if
        :: (ga >> i) & 1 && !((gb >> i) & 1) && ctok[i / CALLS] == i && !dead[i / CALLS] ->
            owed[i / CALLS] = true
        :: else -> skip
        fi
    }
    i = 0;
#if CHECK_TOLD
    for (i : 0 .. NC - 1) { assert(TOLD(i)) }
    i = 0;
#endif
    before = 0; after = 0; gb = 0; ga = 0; queued = false; live = 0
#endif
}

inline extend_script(t) {
    if
    :: prem[t] > 0 -> prem[t] = TTL - DRIFT; res = YES
    :: else -> res = NO
    fi;
    f = FLOOR; slot = NONE
}

/* ---- the server's process ------------------------------------------------ */
/* A call that may write a token reads a sub-tick of the clock, so it is
 * served while one is left: an acquire, and with DIRECT a release (its
 * hand-over); an extend writes none. */
#define SERVE(c) \
    :: up && pend[c] && (cop[c] == EXT || (cop[c] != ACQ && DIRECT == 0) || us < SUB - 1) -> \
        d_step { \
            pend[c] = false; \
            if \
            :: cop[c] == ACQ -> acquire_script(ctok[c]) \
            :: cop[c] == REL -> release_script(ctok[c], true) \
            :: cop[c] == CLEAN -> release_script(ctok[c], false) \
            :: cop[c] == EXT -> extend_script(ctok[c]) \
            fi; \
            if \
            :: open[c] -> answered[c] = true; cres[c] = res; cfence[c] = f; cslot[c] = slot; cwt[c] = w; \
                cid[c] = id \
            :: else -> skip \
            fi; \
            res = 0; f = 0; slot = 0; live = 0; taken = false; w = 0; id = 0 \
        }

#define LOSE(c) :: losses > 0 && pend[c] -> d_step { pend[c] = false; losses-- }

inline crash() {
    up = false;
    for (k : 0 .. NC - 1) { pend[k] = false }
    k = 0
}

/* Restores the last snapshot (empty unless one was taken). */
inline lose_data() {
    for (k : 0 .. NT - 1) {
        prem[k] = srem[k]; pslot[k] = sslot[k]
    }
    for (k : 0 .. NSLOT - 1) { sfence[k] = ssfence[k] }
    k = 0
}

proctype server() {
    byte k, res, slot, live, w, id;
#if QUEUE
    byte i, j, n, m, ahead, before, after, gb, ga, hd, v;
    bool ours, queued, used;
#endif
    bool taken;
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
            snapped = true;
            for (k : 0 .. NT - 1) { srem[k] = prem[k]; sslot[k] = pslot[k] }
            for (k : 0 .. NSLOT - 1) { ssfence[k] = sfence[k] }
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
#ifdef NO_TIME_FLOOR
#define AGE(x) skip
#else
#define AGE(x) x = (x >= FLOOR + SUB -> x - SUB : (x > FLOOR -> FLOOR : x))
#endif

/* With QUEUE the clock stands still when a tick would change nothing
 * (MOVES is false): such a tick is a step to the same state, so no
 * execution is lost, and a waiter that sleeps for ever with nothing left
 * to happen is an end state that is not valid (a permit is then free:
 * none is live, as none is counting down). */
#if QUEUE
#define TM(i) (prem[i] > 0 || srem[i] > 0 || (inq[i] && dead[(i) / CALLS] && lease[i] > 0))
#define CM(i) (cdl[i] > 0 || vu[i] > 0 || cvu[i] > 0 || wt[i] > 0 || cwt[i] > 0 || \
               cF[i] > FLOOR || cfence[i] > FLOOR || hvu[i] > 0 || gF[i] > FLOOR)
#define SM(i) (sfence[i] > FLOOR || ssfence[i] > FLOOR || last_fence[i] > FLOOR)
#if NT == 2
#define TMS (TM(0) || TM(1))
#elif NT == 3
#define TMS (TM(0) || TM(1) || TM(2))
#elif NT == 4
#define TMS (TM(0) || TM(1) || TM(2) || TM(3))
#elif NT == 6
#define TMS (TM(0) || TM(1) || TM(2) || TM(3) || TM(4) || TM(5))
#else
#error "NT is 2, 3, 4 or 6"
#endif
#if NC == 2
#define CMS (CM(0) || CM(1))
#else
#define CMS (CM(0) || CM(1) || CM(2))
#endif
#if NSLOT == 2
#define SMS (SM(0) || SM(1))
#else
#define SMS (SM(0) || SM(1) || SM(2))
#endif
#define MOVES (us > 0 || down > 0 || TMS || CMS || SMS)
/* A call this tick would leave unanswered by its deadline (SLOW). */
#define DUE(i) (open[i] && !answered[i] && cdl[i] == 1 && up && (cop[i] != ACQ || us < SUB - 1))
#if NC == 2
#define DUES (DUE(0) || DUE(1))
#else
#define DUES (DUE(0) || DUE(1) || DUE(2))
#endif
#if defined(TELL_DEAD) || defined(NO_LEASE_END)
#define KEEPS_ENDED 1   /* the mutant reads ended entries: they stay */
#else
#define KEEPS_ENDED 0
#endif
#else
#define MOVES true
#define DUES false
#endif

active proctype clock() {
    byte i, j;
end:
    do
    :: d_step {
            MOVES && (SLOW == 255 || slows > 0 || !DUES);
#if QUEUE
            if
            :: SLOW != 255 && DUES -> slows--
            :: else -> skip
            fi;
            for (i : 0 .. NT - 1) {
                if
                :: dead[i / CALLS] -> DEC(lease[i])
                :: else -> skip
                fi;
                lid[i] = (lease[i] > 0 -> lid[i] : 0);   /* an ended lease is never handed */
                if
                :: !KEEPS_ENDED && inq[i] && lease[i] == 0 -> leave(i)
                :: else -> skip
                fi;
                assert(!inq[i] || ctok[i / CALLS] == i)   /* no entry outlives its wait */
            }
            for (i : 0 .. NC - 1) {
                DEC(wt[i]); DEC(cwt[i]); AGE(gF[i]); DEC(hvu[i]);
                hid[i] = (hvu[i] > 0 -> hid[i] : 0);  /* no hand-over is taken then */
                drop_dead_message(i)
            }
#endif
            for (i : 0 .. NT - 1) {
                DEC(prem[i]); DEC(srem[i]);
                if
                :: prem[i] == 0 -> pslot[i] = 0
                :: else -> skip
                fi
            }
            for (i : 0 .. NSLOT - 1) { AGE(sfence[i]); AGE(ssfence[i]); AGE(last_fence[i]) }
            for (i : 0 .. NC - 1) { DEC(cdl[i]); DEC(vu[i]); DEC(cvu[i]); AGE(cF[i]); AGE(cfence[i]) }
            DEC(down); us = 0; i = 0; j = 0
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
    answered[c] = false; cres[c] = 0; cfence[c] = FLOOR; cslot[c] = 0; cvu[c] = 0
}

/* A release that nobody waits for: the cleanup of a failed attempt or a
 * lost permit, or the caller's release. */
inline send_release() {
    d_step { call(REL, tok, 0, 0); open[c] = false }
}

/* A request that nobody waits for (QUEUE): REL, the caller's release or a
 * waiter that gives up (leaves the queue); CLEAN, the cleanup of a call
 * with no answer or a late one (keeps the waiter's place). */
inline send(o) {
    d_step { !pend[c]; call(o, tok, 0, 0); open[c] = false }
}

/* The waiter wakes: what it slept on is read. */
inline wake() {
    asleep[c] = false; wmsg[c] = false; wt[c] = 0
}

/* A belief starts: with validity v, the token and slot in cF[c], cS[c];
 * what the wait kept of its attempts and messages goes. */
inline believe(v) {
    held[c] = true; vu[c] = v; hid[c] = 0; hvu[c] = 0; read_message(c);
    assert(BELIEVERS <= PERMITS);
    assert(SLOTS_APART);
#if CHECK_FENCE
    assert(cF[c] > last_fence[cS[c]]);
    last_fence[cS[c]] = cF[c]
#else
    skip
#endif
}

/* acquire_once(): an attempt's start and, if it was busy, the lease end
 * it was told (read only by a client that asks for the hand-over); any
 * other outcome forgets the lease end. */
#define HVU (cvu[c] > HSHORT -> cvu[c] - HSHORT : 0)
inline remember(busy) {
#ifdef HANDOVER_NO_IDENTITY
    hid[c] = (busy -> cid[c] : 0); hvu[c] = (ASKS(c) -> HVU : 0)
#else
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

inline forget() {
    held[c] = false; vu[c] = 0; cF[c] = FLOOR; cS[c] = NONE
}

#if QUEUE
/* One connection serves a client's requests in order: a request waits
 * until the one before it was served (none is lost here). */
/* A waiter: refused, it sleeps until a release tells it ("next:TOKEN")
 * or its timer rings (the wait the busy answer named), and tries again;
 * with SAFETY_NET also at any moment. A call with no answer by its
 * deadline, or a late grant, is cleaned up (CLEAN keeps its place) and
 * tried again after a short backoff, not a sleep. It may give up (a
 * deadline, a cancel: a release that leaves the queue), and die (DIES):
 * it stops, renews its lease no more, and releases nothing it holds. A
 * try starts a new attempt: what a release owed it, it now reads. */
proctype client(byte c) {
    byte tok, calls, extends;

idle:
    do
    :: d_step {
            calls < CALLS; tok = c * CALLS + calls; calls++; wmsg[c] = false; owed[c] = false;
            hid[c] = 0; hvu[c] = 0; read_message(c)
        }
try:    /* (a label on an if, as no jump may go into a d_step) */
        if :: d_step { !pend[c]; call(ACQ, tok, NDL, TTL - DRIFT); owed[c] = false } fi;
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES && cvu[c] > 0;
                cF[c] = cfence[c]; cS[c] = cslot[c]; believe(cvu[c]); consumed();
                wmsg[c] = false; cwt[c] = 0; cid[c] = 0
            }
            goto holding
        :: d_step {
                answered[c] && cres[c] == NO;
                wt[c] = cwt[c]; cwt[c] = 0; remember(true); consumed(); asleep[c] = true;
#if CHECK_TOLD
                assert(TOLD(c))
#else
                skip
#endif
            }
            goto sleep
        :: else -> d_step { remember(false); consumed(); cwt[c] = 0 }; send(CLEAN); goto try
        fi
    :: else -> break
    od;
    goto finish;

sleep:
    if
    /* A hand-over: ours, held at once (renewed, or TTL <= LEASE) ... */
    :: d_step { CLAIM != 1 && HANDED; cF[c] = gF[c]; cS[c] = gS[c]; wake(); believe(hvu[c]) }
        goto holding
    /* ... or claimed first for the TTL with an extend; refused: it lapsed. */
    :: d_step {
            CLAIM != 0 && HANDED;
            cF[c] = gF[c]; cS[c] = gS[c]; read_message(c); wake(); call(EXT, tok, NDL, TTL - DRIFT)
        }
        settle();
        if
        :: d_step { answered[c] && cres[c] == YES && cvu[c] > 0; believe(cvu[c]); consumed() }
            goto holding
        :: else -> d_step { consumed(); cF[c] = FLOOR; cS[c] = NONE }; goto try
        fi
    /* ... or not ours: try again. */
    :: d_step { gtok[c] != NONE && !HANDED; read_message(c); wake() }; goto try
#ifdef NO_TIMER
    :: d_step { wmsg[c]; wake() }; goto try
#else
    :: d_step { wmsg[c] || wt[c] == 0; wake() }; goto try
#endif
#if SAFETY_NET
    :: d_step { wake() }; goto try
#endif
    :: d_step { giveups > 0; giveups--; wake() }; send(REL); goto idle
    :: d_step { deaths > 0; deaths--; wake(); dead[c] = true }; goto finish
    fi;

holding:
    do
    :: vu[c] == 0 -> forget(); send(REL); goto idle
    :: d_step { extends < EXTENDS && vu[c] > 0 && !pend[c]; extends++; call(EXT, tok, NDL, TTL - DRIFT) }
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES;
                vu[c] = cvu[c]; consumed(); assert(BELIEVERS <= PERMITS); assert(SLOTS_APART)
            }
        :: d_step { answered[c] && cres[c] == NO; consumed(); forget() }; send(REL); goto idle
        :: else -> d_step { consumed() }  /* no verdict: the old validity stands */
        fi
    :: true -> d_step { forget() }; send(REL); goto idle
    :: d_step { deaths > 0; deaths--; forget(); dead[c] = true }; goto finish
    od;

finish:
    skip
}
#else
proctype client(byte c) {
    byte tok, calls, extends;

idle:
    do
    :: d_step { calls < CALLS; tok = c * CALLS + calls; calls++; call(ACQ, tok, NDL, TTL - DRIFT) }
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES && cvu[c] > 0;
                held[c] = true; vu[c] = cvu[c]; cF[c] = cfence[c]; cS[c] = cslot[c]; consumed();
                assert(BELIEVERS <= PERMITS);
                assert(SLOTS_APART);
#if CHECK_FENCE
                assert(cF[c] > last_fence[cS[c]]);
                last_fence[cS[c]] = cF[c]
#else
                skip
#endif
            }
            goto holding
        :: d_step { answered[c] && cres[c] == NO; consumed() }
        :: else -> d_step { consumed() }; send_release()   /* no answer, or too late: our permit may be there */
        fi
    :: else -> break
    od;
    goto finish;

holding:
    do
    :: vu[c] == 0 -> forget(); send_release(); goto idle
    :: d_step { extends < EXTENDS && vu[c] > 0; extends++; call(EXT, tok, NDL, TTL - DRIFT) }
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES;
                vu[c] = cvu[c]; consumed(); assert(BELIEVERS <= PERMITS); assert(SLOTS_APART)
            }
        :: d_step { answered[c] && cres[c] == NO; consumed(); forget() }; send_release(); goto idle
        :: else -> d_step { consumed() }  /* no verdict: the old validity stands */
        fi
    :: true -> d_step { forget() }; send_release(); goto idle
    od;

finish:
    skip
}
#endif

init {
    byte i;
    atomic {
        for (i : 0 .. NSLOT - 1) { sfence[i] = FLOOR; ssfence[i] = FLOOR; last_fence[i] = FLOOR }
        for (i : 0 .. NC - 1) {
            cF[i] = FLOOR; cfence[i] = FLOOR; cS[i] = NONE; gF[i] = FLOOR; gS[i] = NONE;
            gtok[i] = NONE
        }
        run server();
        run client(0);
        run client(1);
#if NC == 3
        run client(2);
#endif
        i = 0
    }
}
