/* dlock's shared holds, as SPIN sees them: the shared_acquire,
 * shared_release and shared_extend Lua scripts of src/kinds/lua/,
 * and the mutex's acquire (which puts a writer in the set of waiting
 * writers and takes it out when granted), release (with which a writer
 * that gives up leaves the set) and extend, on one server, with the
 * attempt layer's validity and cleanup on the clients' side. docs/model.md says what is modelled,
 * with which bounds and assumptions.
 *
 * scripts/model compares these pins with the sha1sum of each file; a
 * change to any of them fails it until this model was reviewed against
 * the change and its pin updated. A model pins every script of its kind
 * (the `kind` line: src/kinds/lua/KIND_*.lua, which scripts/model
 * checks), the helpers every script shares, the kind's C
 * (src/kinds/KIND.c) and the attempt layer; and the
 * mutex's acquire, release and extend, which it models too (a writer
 * waits, gives up and extends through them):
 * kind shared
 * pin src/kinds/lua/helpers.lua 861c27fdbc25fb282c182d0eabd6dccd29666296
 * pin src/kinds/lua/shared_acquire.lua 88b66dc0423f07d7bb06603aa6fa3b27fe464fe0
 * pin src/kinds/lua/shared_extend.lua 07bb2c930e6a5cb0e59d46b23ce15677e7fb73ae
 * pin src/kinds/lua/shared_helpers.lua 7607a20d47e546c7143beb5de3a87a2aecbd0b87
 * pin src/kinds/lua/shared_release.lua 317a5067a1757c89a2831f6c96d0499cb813e4f1
 * pin src/kinds/lua/shared_status.lua cd1000d86a93579cc2d6e7a123205b373dad2d53
 * pin src/kinds/lua/mutex_acquire.lua 154864fa89a2cd4b91a65d630a2181fe4021a592
 * pin src/kinds/lua/mutex_release.lua a5d29f39a3f99971f6270cc88e40157d76ede69d
 * pin src/kinds/lua/mutex_extend.lua 8840a10719bea4dbda3451084c3d9b01672b822f
 * pin src/kinds/shared.c bed03cbca8044e28a56b25e501b4a1432441d4f1
 * pin src/engine/attempt.c d9a0584947d9f0f86f59381e28f461cb0c119f47
 *
 * Time is kept as in dlock.pml and fair.pml: relative to "now", moved one
 * tick at a time by the clock process. NAME, each reader's entry and each
 * waiting writer's lease keep the ticks left until they end; a fencing token its
 * distance from now in sub-ticks, clamped at FLOOR. A reader's entry whose
 * score has passed counts for no script (each reads `score > now`). */

/* ---- parameters (scripts/model passes -D flags) -------------------------- */
#ifndef NC
#define NC 3            /* clients: 2 or 3 */
#endif
#ifndef WRITERS
#define WRITERS 1       /* the last WRITERS clients acquire exclusively */
#endif
#ifndef TTL
#define TTL 3           /* ticks */
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#ifndef WLEASE
#define WLEASE 2        /* a waiting writer's lease, ticks */
#endif
#ifndef NDL
#define NDL 1           /* the call's deadline, ticks */
#endif
#ifndef RDELAY
#define RDELAY (TTL + 1)
#endif
#ifndef CALLS
#define CALLS 1         /* acquisitions per client (one token each) */
#endif
#ifndef EXTENDS
#define EXTENDS 0
#endif
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CRASH_LOSE
#define CRASH_LOSE 0
#endif
#ifndef CHECK_FENCE
#define CHECK_FENCE 1   /* 0: tokens are not computed (a smaller search) */
#endif
/* Mutations, for the negative controls: NO_WRITER_CHECK (a new reader
 * ignores the waiting writers), NO_HOLDER_CHECK (a reader is admitted while
 * NAME holds an exclusive holder's token), ONE_WRITER_MARK (the protocol
 * before the set: one mark, which a writer sets over another's and every
 * exclusive release deletes). */

#define SUB 4
#define FLOOR (-(TTL + 2) * SUB)
#define NT (NC * CALLS)
#define MARK 254        /* NAME holds the marker */
#define NONE 255

/* ---- the server ---------------------------------------------------------- */
byte us;
bool up = true;
byte down;
byte nm;                 /* NAME: 0 missing, MARK, or an exclusive holder's token + 1 */
byte nttl;               /* ticks until NAME expires */
byte rd[NT];             /* readers: ticks until the entry's score (0: none) */
#ifdef ONE_WRITER_MARK
byte wm;                 /* the writer mark: token + 1, 0 when missing */
byte wttl;
#else
byte wl[NT];             /* the waiting writers: ticks left of each token's lease */
#endif
bool fset;               /* the fence key exists */
short sfence;
byte losses = LOSSES, crash_lose = CRASH_LOSE;

/* Ghost: for each token, the ticks its own writer mark would have left had
 * nobody else touched it (set with the mark, cleared when it is granted or
 * its writer gives up). */
byte gmark[NT];

/* ---- clients' calls ------------------------------------------------------ */
mtype = { SACQ, SREL, SEXT, XACQ, XACQW, XREL, XEXT, XGIVE };
#define YES 1
#define NO 0
#define HELD_SHARED 2 /* an exclusive acquire that did not name the waiting writers found the marker */

mtype cop[NC];
byte ctok[NC];
bool pend[NC];
bool open[NC];
bool answered[NC];
byte cres[NC];
short cfence[NC];
byte cdl[NC];
short cvu[NC];

bool held[NC];
short vu[NC];
short cF[NC];
short last_x = FLOOR;    /* the token of the last exclusive grant that counted */
short top_r = FLOOR;     /* the largest fence a shared grant counted with */

#define WRITER(c) (c >= NC - WRITERS)
#define BELIEVES(c) (held[c] && vu[c] > 0)
#if NC == 3
#define BELIEVERS (BELIEVES(0) + BELIEVES(1) + BELIEVES(2))
#define W_BELIEVERS (BELIEVES(0) * WRITER(0) + BELIEVES(1) * WRITER(1) + BELIEVES(2) * WRITER(2))
#elif NC == 2
#define BELIEVERS (BELIEVES(0) + BELIEVES(1))
#define W_BELIEVERS (BELIEVES(0) * WRITER(0) + BELIEVES(1) * WRITER(1))
#else
#error "NC is 2 or 3"
#endif
/* Exclusion: an exclusive holder believes alone. */
#define EXCLUSIVE_OK (W_BELIEVERS == 0 || BELIEVERS == 1)

/* ---- the scripts --------------------------------------------------------- */
/* live(): NAME holds the marker until the last live entry's score, or goes
 * with the readers when none is left. */
inline live() {
    m = 0;
    for (k : 0 .. NT - 1) { m = (rd[k] > m -> rd[k] : m) }
    k = 0;
    if
    :: m > 0 -> nm = MARK; nttl = m
    :: else -> nm = 0; nttl = 0
    fi;
    m = 0
}

/* Does a writer wait, as the shared acquire sees it (ww)? */
inline writers_wait() {
#ifdef ONE_WRITER_MARK
    ww = wm != 0
#else
    ww = false;
    for (k : 0 .. NT - 1) { ww = ww || wl[k] > 0 }
    k = 0
#endif
}

/* Writer preference: a new reader comes in only while no writer waits. */
inline assert_no_writer_waits() {
    for (k : 0 .. NT - 1) { assert(gmark[k] == 0) }
    k = 0
}

inline shared_acquire(t) {
    writers_wait();
    if
#ifndef NO_HOLDER_CHECK
    :: nm != 0 && nm != MARK -> res = NO; f = FLOOR
#endif
#ifndef NO_WRITER_CHECK
    :: !(nm == MARK && rd[t] > 0) && ww -> res = NO; f = FLOOR
#endif
    :: else ->
        if
        :: !(nm == MARK && rd[t] > 0) -> assert_no_writer_waits()
        :: else -> skip
        fi;
#if CHECK_FENCE
        if
        :: !fset -> us++; sfence = us; fset = true
        :: else -> skip
        fi;
#endif
        f = sfence; rd[t] = TTL - DRIFT; live(); res = YES
    fi;
    ww = false
}

inline shared_release(t) {
    if
    :: nm == MARK && rd[t] > 0 -> rd[t] = 0; live(); res = YES
    :: else -> res = NO
    fi;
    f = FLOOR
}

inline shared_extend(t) {
    if
    :: nm == MARK && rd[t] > 0 -> rd[t] = TTL - DRIFT; live(); res = YES
    :: else -> res = NO
    fi;
    f = FLOOR
}

/* The mutex's acquire (XACQW: naming the waiting writers): finding the
 * marker, it puts its token in the waiting writers (or sets the one mark)
 * if it names them, else it says the name is held shared; granted, it
 * takes it out. */
inline x_acquire(t, named) {
    if
    :: nm == MARK && !named -> res = HELD_SHARED; f = FLOOR
    :: nm == MARK && named ->
#ifdef ONE_WRITER_MARK
        wm = t + 1; wttl = WLEASE;
#else
        wl[t] = WLEASE;
#endif
        gmark[t] = WLEASE; res = NO; f = FLOOR
    :: nm != 0 && nm != t + 1 -> res = NO; f = FLOOR
    :: else ->
#if CHECK_FENCE
        us++;
        f = (fset && sfence + 1 > us -> sfence + 1 : us);
        sfence = f; fset = true;
#else
        f = FLOOR;
#endif
#ifndef ONE_WRITER_MARK
        wl[t] = 0;
#endif
        nm = t + 1; nttl = TTL - DRIFT; gmark[t] = 0; res = YES
    fi
}

/* The mutex's release (ONE_WRITER_MARK: deletes the mark in its DEL,
 * whoever set it). As a writer's give-up (`give`), not ours, it takes the
 * token out of the waiting writers; a cleanup does not. */
inline x_release(t, give) {
    if
    :: nm == t + 1 -> nm = 0; nttl = 0; res = YES;
#ifdef ONE_WRITER_MARK
        wm = 0; wttl = 0
#else
        skip
#endif
    :: else -> res = NO;
#ifndef ONE_WRITER_MARK
        wl[t] = (give -> 0 : wl[t])
#else
        skip
#endif
    fi;
    f = FLOOR
}

inline x_extend(t) {
    if
    :: nm == t + 1 -> nttl = TTL - DRIFT; res = YES
    :: else -> res = NO
    fi;
    f = FLOOR
}

/* ---- the server's process ------------------------------------------------ */
#define SERVE(c) \
    :: up && pend[c] && us < SUB - 1 -> \
        d_step { \
            pend[c] = false; \
            if \
            :: cop[c] == SACQ -> shared_acquire(ctok[c]) \
            :: cop[c] == SREL -> shared_release(ctok[c]) \
            :: cop[c] == SEXT -> shared_extend(ctok[c]) \
            :: cop[c] == XACQ -> x_acquire(ctok[c], false) \
            :: cop[c] == XACQW -> x_acquire(ctok[c], true) \
            :: cop[c] == XREL -> x_release(ctok[c], false) \
            :: cop[c] == XGIVE -> x_release(ctok[c], true) \
            :: cop[c] == XEXT -> x_extend(ctok[c]) \
            fi; \
            if \
            :: open[c] -> answered[c] = true; cres[c] = res; cfence[c] = f \
            :: else -> skip \
            fi; \
            res = 0; f = 0 \
        }

#define LOSE(c) :: losses > 0 && pend[c] -> d_step { pend[c] = false; losses-- }

/* A crash that loses the data: everything goes, the fence key too (its
 * clock floor is what keeps the tokens growing). */
inline crash_empty() {
    up = false;
    for (k : 0 .. NC - 1) { pend[k] = false }
    nm = 0; nttl = 0; fset = false; sfence = FLOOR;
#ifdef ONE_WRITER_MARK
    wm = 0; wttl = 0;
#endif
    for (k : 0 .. NT - 1) {
        rd[k] = 0;
#ifndef ONE_WRITER_MARK
        wl[k] = 0
#endif
    }
    k = 0
}

proctype server() {
    byte k, m, res;
    bool ww;
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
    :: crash_lose > 0 && up -> d_step { crash_lose--; crash_empty(); down = RDELAY }
    :: !up && down == 0 -> up = true
    od
}

/* ---- time ---------------------------------------------------------------- */
#define DEC(x) x = (x > 0 -> x - 1 : 0)
#define AGE(x) x = (x >= FLOOR + SUB -> x - SUB : (x > FLOOR -> FLOOR : x))

active proctype clock() {
    byte i;
end:
    do
    :: d_step {
            DEC(nttl);
            if
            :: nttl == 0 -> nm = 0
            :: else -> skip
            fi;
#ifdef ONE_WRITER_MARK
            DEC(wttl);
            if
            :: wttl == 0 -> wm = 0
            :: else -> skip
            fi;
#endif
            for (i : 0 .. NT - 1) {
                DEC(rd[i]); DEC(gmark[i]);
#ifndef ONE_WRITER_MARK
                DEC(wl[i]);
#endif
                if
                :: nttl == 0 -> rd[i] = 0
                :: else -> skip
                fi
            }
            AGE(sfence); AGE(last_x); AGE(top_r);
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

inline consumed() {
    answered[c] = false; cres[c] = 0; cfence[c] = FLOOR; cvu[c] = 0
}

inline send(o) {
    d_step { call(o, tok, 0, 0); open[c] = false }
}

inline forget() {
    held[c] = false; vu[c] = 0; cF[c] = FLOOR
}

/* Fences: an exclusive grant's token is above every fence counted before
 * it, shared ones included; a shared grant's fence is at least the last
 * exclusive token that counted (the epoch it reads in). */
inline count_fence() {
#if !CHECK_FENCE
    skip
#else
    if
    :: w -> assert(cF[c] > last_x && cF[c] > top_r); last_x = cF[c]
    :: else -> assert(cF[c] >= last_x); top_r = (cF[c] > top_r -> cF[c] : top_r)
    fi
#endif
}

/* A reader or a writer tries at any moment, as a waiter does, until it is
 * granted or gives up; a failed call is cleaned up with a release; a
 * writer that gives up stops waiting and says so with a release. A writer
 * names the waiting writers once a try found the name held shared. */
proctype client(byte c) {
    byte tok, calls, extends;
    bool w = WRITER(c), named;

idle:
    if
    :: calls < CALLS -> tok = c * CALLS + calls; calls++; named = false
    :: else -> goto finish
    fi;
    do
    :: d_step {
            if
            :: w && named -> call(XACQW, tok, NDL, TTL - DRIFT)
            :: w && !named -> call(XACQ, tok, NDL, TTL - DRIFT)
            :: else -> call(SACQ, tok, NDL, TTL - DRIFT)
            fi
        }
        settle();
        if
        :: d_step {
                answered[c] && cres[c] == YES && cvu[c] > 0;
                held[c] = true; vu[c] = cvu[c]; cF[c] = cfence[c]; consumed();
                assert(EXCLUSIVE_OK); count_fence()
            }
            goto holding
        :: d_step { answered[c] && cres[c] == NO; consumed() }
        :: d_step { answered[c] && cres[c] == HELD_SHARED; named = true; consumed() }
        :: else -> d_step { consumed() }; send((w -> XREL : SREL))
        fi
    :: !w -> goto idle
    :: w -> d_step { gmark[tok] = 0 }; send(XGIVE); goto idle
    od;

holding:
    do
    :: vu[c] == 0 -> forget(); send((w -> XREL : SREL)); goto idle
    :: d_step { extends < EXTENDS && vu[c] > 0; extends++; call((w -> XEXT : SEXT), tok, NDL, TTL - DRIFT) }
        settle();
        if
        :: d_step { answered[c] && cres[c] == YES; vu[c] = cvu[c]; consumed(); assert(EXCLUSIVE_OK) }
        :: d_step { answered[c] && cres[c] == NO; consumed(); forget() };
            send((w -> XREL : SREL)); goto idle
        :: else -> d_step { consumed() }
        fi
    :: true -> d_step { forget() }; send((w -> XREL : SREL)); goto idle
    od;

finish:
    skip
}

init {
    byte i;
    atomic {
        sfence = FLOOR;
        for (i : 0 .. NC - 1) { cF[i] = FLOOR; cfence[i] = FLOOR }
        run server();
        run client(0);
        run client(1);
#if NC == 3
        run client(2);
#endif
        i = 0
    }
}
