/* dlock's semaphore, as SPIN sees it: the sem_* Lua scripts of
 * src/kinds/lua/ (acquire with reap, slots and per-slot fences;
 * release; extend) on the one server a semaphore lives on, and the attempt
 * layer's validity on the clients' side. docs/model.md says what is
 * modelled, with which bounds and assumptions. The waiters' queue is not:
 * it only withholds a free permit from a newcomer for the first waiters,
 * so it grants nothing the unqueued scripts would not, and its wake-up is
 * checked by tests/integration/test_semaphore.c.
 *
 * scripts/model compares these pins with the sha1sum of each file; a
 * change to any of them fails it until this model was reviewed against
 * the change and its pin updated. A model pins every script of its kind
 * (the `kind` line: src/kinds/lua/KIND_*.lua, which scripts/model
 * checks), the helpers every script shares, the kind's C
 * (src/kinds/KIND.c) and the attempt layer:
 * kind sem
 * pin src/kinds/lua/helpers.lua 1f8f84035da57b1a6a89bd45ccfed07586796e63
 * pin src/kinds/lua/sem_acquire.lua 6428bfd2c04901050716e73b66252b42ceeda5c9
 * pin src/kinds/lua/sem_extend.lua a19980fa3a8a5b050c32a7b1b3477b420157235c
 * pin src/kinds/lua/sem_helpers.lua 438a1dd78a3f7e2a1c2d59cc9ae487785428249a
 * pin src/kinds/lua/sem_release.lua e55a2b0076bdd11d18b6da0d6be635327e0a85fb
 * pin src/kinds/lua/sem_status.lua c204b8179ca37380d7c02e2c4a917c83d88afdd2
 * pin src/kinds/semaphore.c cd9d127d2d347e8088c984c799565b3ae9de754f
 * pin src/engine/attempt.c 24cafd14529a849aa5a7d1fc6ffc7efc8ddea0ef
 *
 * Time is kept as in dlock.pml: relative to "now", moved one tick at a time
 * by the clock process; a permit keeps the ticks left until its score (its
 * expiry in server time) is reached, a fencing token its distance from now
 * in sub-ticks, clamped at FLOOR far in the past. An expired permit is one
 * that no script counts (every script reads `score > now` only), so it is
 * dropped when its time comes, as a reap would. */

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
/* Mutations, for the negative controls: OFF_BY_ONE (the busy check lets
 * N + 1 permits in), NO_TIME_FLOOR (a slot's token is its stored one + 1). */

#define SUB 4
#define FLOOR (-(TTL + 2) * SUB)
#define NT (NC * CALLS) /* tokens: client c's k-th call has token c * CALLS + k */
#define NONE 255        /* no slot */
#define NSLOT (PERMITS + 1) /* room for the slot a mutant that lets N + 1 in gives */

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

/* ---- clients' calls ------------------------------------------------------ */
mtype = { ACQ, REL, EXT };
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

/* What the properties look at: a client believes it holds a permit while
 * held[c] and its validity has not passed. */
bool held[NC];
short vu[NC];
short cF[NC];
byte cS[NC];
short last_fence[NSLOT]; /* per slot: the token of the last grant that counted */

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

/* sem_acquire: a live permit of ours keeps its slot (a retry of our own
 * call); else busy when N permits are live; else the lowest free slot. The
 * slot's token is max(stored + 1, the clock). */
inline acquire_script(t) {
    count_live();
    if
    :: prem[t] == 0 && FULL -> res = NO
    :: else ->
        if
        :: prem[t] > 0 -> slot = pslot[t]
        :: else ->
            slot = 0;
            do
            :: slot_taken(slot, t);
               if
               :: taken -> slot++
               :: else -> break
               fi
            od
        fi;
#if !CHECK_FENCE
        f = FLOOR;
#elif defined(NO_TIME_FLOOR)
        f = sfence[slot] + 1;
#else
        us++;
        f = (sfence[slot] + 1 > us -> sfence[slot] + 1 : us);
#endif
        prem[t] = TTL - DRIFT; pslot[t] = slot; sfence[slot] = f; res = YES
    fi
}

inline release_script(t) {
    prem[t] = 0; pslot[t] = 0; res = YES; f = FLOOR; slot = NONE
}

inline extend_script(t) {
    if
    :: prem[t] > 0 -> prem[t] = TTL - DRIFT; res = YES
    :: else -> res = NO
    fi;
    f = FLOOR; slot = NONE
}

/* ---- the server's process ------------------------------------------------ */
#define SERVE(c) \
    :: up && pend[c] && (cop[c] != ACQ || us < SUB - 1) -> \
        d_step { \
            pend[c] = false; \
            if \
            :: cop[c] == ACQ -> acquire_script(ctok[c]) \
            :: cop[c] == REL -> release_script(ctok[c]) \
            :: cop[c] == EXT -> extend_script(ctok[c]) \
            fi; \
            if \
            :: open[c] -> answered[c] = true; cres[c] = res; cfence[c] = f; cslot[c] = slot \
            :: else -> skip \
            fi; \
            res = 0; f = 0; slot = 0; live = 0; taken = false \
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
    byte k, res, slot, live;
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

active proctype clock() {
    byte i;
end:
    do
    :: d_step {
            for (i : 0 .. NT - 1) {
                DEC(prem[i]); DEC(srem[i]);
                if
                :: prem[i] == 0 -> pslot[i] = 0
                :: else -> skip
                fi
            }
            for (i : 0 .. NSLOT - 1) { AGE(sfence[i]); AGE(ssfence[i]); AGE(last_fence[i]) }
            for (i : 0 .. NC - 1) { DEC(cdl[i]); DEC(vu[i]); DEC(cvu[i]); AGE(cF[i]); AGE(cfence[i]) }
            DEC(down); us = 0; i = 0
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

inline forget() {
    held[c] = false; vu[c] = 0; cF[c] = FLOOR; cS[c] = NONE
}

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

init {
    byte i;
    atomic {
        for (i : 0 .. NSLOT - 1) { sfence[i] = FLOOR; ssfence[i] = FLOOR; last_fence[i] = FLOOR }
        for (i : 0 .. NC - 1) { cF[i] = FLOOR; cfence[i] = FLOOR; cS[i] = NONE }
        run server();
        run client(0);
        run client(1);
#if NC == 3
        run client(2);
#endif
        i = 0
    }
}
