/* dlock's mutex protocol, as SPIN sees it: the Lua scripts of
 * src/kinds/lua/ (mutex_acquire, mutex_release, mutex_extend with repair,
 * fence_max) and the attempt layer of src/engine/attempt.c (one fan-out to N nodes,
 * majority, validity, fence write-back, cleanup of a failed attempt);
 * with N > 1, a client's extends go on a connection of their own (the
 * renewal thread's), so that one may run after the release.
 * docs/model.md says what is modelled, with which bounds and assumptions,
 * and what each configuration of scripts/model checks.
 *
 * scripts/model compares these pins with the sha1sum of each file; a
 * change to any of them fails it until this model was reviewed against
 * the change and its pin updated. A model pins every script of its kind
 * (the `kind` line: src/kinds/lua/KIND_*.lua, which scripts/model
 * checks), the helpers every script shares, the kind's C
 * (src/kinds/KIND.c) and the attempt layer; and
 * fence_max.lua, the write-back:
 * kind mutex
 * pin src/kinds/lua/helpers.lua 861c27fdbc25fb282c182d0eabd6dccd29666296
 * pin src/kinds/lua/mutex_acquire.lua 154864fa89a2cd4b91a65d630a2181fe4021a592
 * pin src/kinds/lua/mutex_extend.lua 8840a10719bea4dbda3451084c3d9b01672b822f
 * pin src/kinds/lua/mutex_release.lua a5d29f39a3f99971f6270cc88e40157d76ede69d
 * pin src/kinds/lua/mutex_status.lua b45ab2ae5b2e63e420212a460678f668e8b7975a
 * pin src/kinds/lua/fence_max.lua 1c0fb9d4b62f4543e41e2dae4e0bc3eada524e74
 * pin src/kinds/mutex.c dba30ffc4a4e1e99ebd9753cbc27e804086fb966
 * pin src/engine/attempt.c d9a0584947d9f0f86f59381e28f461cb0c119f47
 *
 * Time. There is no absolute clock: every time in the model is kept
 * relative to "now" and moved by the clock process, one tick at a time, so
 * that executions that differ only in when they happened are one state,
 * and time is unbounded. Node i's clock reads now + off[i]; a fencing
 * token is kept as its distance from now (tokens are clock readings, or
 * counters beside them); a key keeps the ticks left until it expires.
 * Tokens far in the past behave alike (the time floor is above them), so
 * they are clamped at FLOOR. */

/* ---- parameters (scripts/model passes -D flags) -------------------------- */
#ifndef NN
#define NN 3            /* nodes */
#endif
#define NC 2            /* clients */
#ifndef QUORUM
#define QUORUM (NN / 2 + 1)   /* dlock__quorum(); a negative control lowers it */
#endif
#ifndef TTL
#define TTL 3           /* ticks */
#endif
#ifndef DRIFT
#define DRIFT 1         /* a node's clock may run fast: it expires a key up
                           to DRIFT ticks early; the client's drift term */
#endif
#ifndef OFF
#define OFF 1           /* node 0's clock reads OFF ahead of the others' */
#endif
#ifndef NDL
#define NDL 1           /* per-node deadline of a fan-out, ticks */
#endif
#ifndef RDELAY
#define RDELAY (TTL + OFF + 1)  /* a node that lost data stays down this long */
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
#define CRASH_KEEP 0    /* crashes that keep the data (AOF, fsync always) */
#endif
#ifndef CRASH_LOSE
#define CRASH_LOSE 0    /* crashes that lose the data (no persistence) */
#endif
#ifndef ROLLBACK
#define ROLLBACK 0      /* restarts from an older snapshot (RDB) */
#endif
#ifndef STEP
#define STEP 0          /* one step of one node's clock, by STEP ticks, */
#endif
#ifndef STEP_BACK
#define STEP_BACK 0     /* back (1) or forward (0) */
#endif
#ifndef AHEAD
#define AHEAD 0         /* node 0's fence key starts this far ahead of the
                           clocks (set by hand, or a fast clock's token) */
#endif
#ifndef CHECK_MUTEX
#define CHECK_MUTEX 1
#endif
#ifndef CHECK_FENCE
#define CHECK_FENCE 1
#endif
#ifndef LIVE
#define LIVE 0          /* the liveness configurations: see "Liveness" below */
#endif
#ifndef DELAYS
#define DELAYS 0        /* LIVE: ticks that may pass while an attempt could
                           go on (a slow request, a paused client) */
#endif
#ifndef CHECK_GHOST
#define CHECK_GHOST (NN > 1 && !LIVE)  /* no repair after our own release */
#endif
#ifndef CHECK_REPAIR
#define CHECK_REPAIR 0  /* a holder's key is put back where it went missing */
#endif
#ifndef PROPOSE
#define PROPOSE 0       /* an acquire's proposal for the token: sub-ticks
                           ahead of now when sent (the client's clock and
                           lead); 0: none */
#endif
#ifndef PSKEW
#define PSKEW 0         /* client 1's proposal is PSKEW sub-ticks below
                           client 0's: its clock is behind */
#endif
#ifndef CAP
#define CAP 1           /* a node takes a proposal at most CAP ticks ahead
                           of its own clock */
#endif
/* Mutations, for the negative controls: NO_WRITE_BACK, NO_TIME_FLOOR,
 * NO_RETRY; REPAIR_BY_FENCE (repair only where the stored fence is below
 * ours), NO_GHOST_CHECK (repair wherever our key is missing). */

/* A tick holds SUB readings of a clock: a grant reads the clock after
 * every grant before it (time moves between two events one causes), so
 * tokens are kept in sub-ticks, and at most SUB - 1 grants fall in one
 * tick. */
#define SUB 4
#define FLOOR (-(TTL + STEP + 2) * SUB)

/* ---- nodes --------------------------------------------------------------- */
short off[NN];                /* node clock - now, ticks */
byte us;                      /* sub-ticks of this tick already read */
bool up[NN];
byte down[NN];                /* ticks before a crashed node may restart */
byte ktok[NN];                /* the lock key: token (0: none) ... */
short krem[NN];               /* ... and ticks until it expires */
short fence[NN];              /* the fence key (its day-long TTL never ends here) */
short freed[NN];              /* the key freed: the largest fence released here */
bool snapped[NN];             /* the node's last snapshot, if any */
byte stok[NN];
short srem[NN];
short sfence[NN];
short sfreed[NN];
#if CHECK_GHOST || CHECK_REPAIR
/* The properties' bookkeeping: the tokens whose release ran on node i
 * (bit TBIT(tok)), and the token of each client's lock. */
byte released[NN];
byte htok[NC];
#define TBIT(t) (1 << (((t) / 16) * 4 + (t) % 16 - 1))
#endif
byte losses = LOSSES, crash_keep = CRASH_KEEP, crash_lose = CRASH_LOSE;
byte rollbacks = ROLLBACK;
bool stepped = (STEP == 0);

/* ---- clients' calls ------------------------------------------------------ */
mtype = { ACQ, REL, EXT, FMAX };
#define YES 1
#define NO 0
#define REPAIRED 2

/* A client's current call, the same for every node: what it asks ... */
mtype cop[NC];
byte ctok[NC];
short carg[NC];
/* ... whether node i has yet to run it (the request is in flight on the
 * client's connection to i) ... */
bool pend[NC * NN];
/* ... and, while the call is open, its tally: yes votes, nodes that
 * answered, the largest fence granted. A reply that comes after the call
 * was decided is discarded, never read as the answer to a later call. A
 * connection carries one call: a new call replaces a request that is still
 * in flight (the old one is lost). */
bool open[NC];
/* With N > 1, extends go on the client's renewal connection to each node:
 * their own request in flight (rpend), token and fence; onr: the open
 * call is that one. */
#if NN > 1
bool rpend[NC * NN];
byte rtok[NC];
short rarg[NC];
#endif
bool onr[NC];
byte cyes[NC], cans[NC];
short cfence[NC];
bool cagreed[NC];             /* every yes counted so far granted cfence */
byte cdl[NC];                 /* ticks until the call's deadline */
short cvu[NC];                /* ticks of validity the call would give */

/* What the properties look at. A client believes it holds the lock while
 * held[c] and its validity has not passed: "still held?" is computed,
 * never stored. */
bool held[NC];
short vu[NC];                 /* ticks of validity left */
short cF[NC];                 /* the token of the client's lock */
short last_fence = FLOOR;     /* the token of the last acquisition that counted */


#define BELIEVES(c) (held[c] && vu[c] > 0)
/* Node i may run client c's request now (a grant needs a clock reading
 * left in this tick). */
#define SERVABLE(i, c) \
    (up[i] && pend[(c) * NN + (i)] && (cop[c] != ACQ || us < SUB - 1))
#if NN > 1
#define RSERVABLE(i, c) (up[i] && rpend[(c) * NN + (i)])
#else
#define RSERVABLE(i, c) false
#endif
/* A majority said yes, or no majority can say yes any more. */
#define DECIDED(c) (cyes[c] >= QUORUM || cyes[c] + NN - cans[c] < QUORUM)

/* ---- liveness ------------------------------------------------------------ */
/* With LIVE, clients want the lock for ever: each makes acquire calls
 * without end (two tokens, used in turn), at most one call per tick (the
 * retry delay), and a holder releases at some time. Faults are finite
 * budgets, and so is slowness: time passes freely only while no attempt
 * could go on without it. An attempt could go on while a request of an
 * open call is pending on a node that is up, or while its client is
 * between calls or its call is decided (busy). Past the DELAYS budget, the clock
 * waits for those: a network slower than the deadline for ever, or a
 * client that always pauses until its validity passed, would block any
 * lock, and are not what this property is about. */
#if LIVE
byte delays = DELAYS;
bool busy[NC];                /* in an acquire attempt */
bool backoff[NC];             /* started an acquire call this tick */
#if NN == 1
#define PEND_UP(c) SERVABLE(0, c)
#define MAJ_FREE (ktok[0] == 0)
#elif NN == 3
#define PEND_UP(c) (SERVABLE(0, c) || SERVABLE(1, c) || SERVABLE(2, c) || \
                    RSERVABLE(0, c) || RSERVABLE(1, c) || RSERVABLE(2, c))
#define MAJ_FREE ((ktok[0] == 0) + (ktok[1] == 0) + (ktok[2] == 0) >= QUORUM)
#else
#error "LIVE is written for NN = 1 or 3"
#endif
#define CAN_GO_ON(c) (busy[c] && (!open[c] || PEND_UP(c) || DECIDED(c)))
#define URGENT (CAN_GO_ON(0) || CAN_GO_ON(1))
/* A released or expired lock is eventually granted: whenever no client
 * holds it and a majority of nodes have no key, some client is granted
 * later. pan -a -f: acceptance cycles under weak fairness. */
ltl granted { [] ((!held[0] && !held[1] && MAJ_FREE) -> <> (held[0] || held[1])) }
#define ATTEMPT_DONE busy[c] = false
#else
#define ATTEMPT_DONE skip
#endif

/* ---- the scripts --------------------------------------------------------- */
/* Each runs atomically on its node, as in Redis. A key set or extended
 * lives TTL - DRIFT ticks of real time at least: a node whose clock runs
 * fast is the worst case, so it is the one modelled. */
/* The scripts' result and token go to the node's own f and res. */

inline acquire_script(i, tok, proposal) {
    if
    :: ktok[i] != 0 && ktok[i] != tok -> res = NO; f = FLOOR
    :: else ->
#ifdef NO_TIME_FLOOR
        f = fence[i] + 1;
#else
        /* max(stored + 1, the node's clock) */
        us++;
        f = (fence[i] + 1 > off[i] * SUB + us -> fence[i] + 1 : off[i] * SUB + us);
#endif
        /* next_fence(): the proposal when larger, and not more than CAP
         * ahead of the node's clock */
        if
        :: proposal > f && proposal <= (off[i] + CAP) * SUB + us -> f = proposal
        :: else -> skip
        fi;
        ktok[i] = tok; krem[i] = TTL - DRIFT; fence[i] = f; res = YES
    fi
}

/* arg: the fence of a lock that was held, raised into `freed` whether the
 * key is ours here or not; FLOOR for a failed attempt's cleanup (no
 * effect on the max). */
inline release_script(i, tok, arg) {
    if
    :: ktok[i] == tok -> ktok[i] = 0; krem[i] = 0; res = YES
    :: else -> res = NO
    fi;
    if
    :: freed[i] < arg -> freed[i] = arg
    :: else -> skip
    fi;
#if CHECK_GHOST || CHECK_REPAIR
    released[i] = released[i] | TBIT(tok);
#endif
    f = FLOOR
}

/* Repair allowed when arg != FLOOR - 1: arg is then the holder's fence,
 * and only on a node where no release of that fence or a later one ran
 * (freed below it): one that lost our key to a restart or an expiry,
 * whoever came and went there since. The fence is raised, never lowered. */
#define NO_REPAIR (FLOOR - 1)
#if defined(REPAIR_BY_FENCE)
#define REPAIRABLE(i, arg) (fence[i] < arg)
#elif defined(NO_GHOST_CHECK)
#define REPAIRABLE(i, arg) true
#else
#define REPAIRABLE(i, arg) (freed[i] < arg)
#endif
/* Client c's extend of token tok runs on node i. */
inline extend_script(i, tok, arg, c) {
    if
    :: ktok[i] == tok -> krem[i] = TTL - DRIFT; res = YES
    :: ktok[i] == 0 && arg != NO_REPAIR && REPAIRABLE(i, arg) ->
#if CHECK_GHOST
        /* never after our own release here: a ghost key */
        assert(!(released[i] & TBIT(tok)));
#endif
        ktok[i] = tok; krem[i] = TTL - DRIFT;
        fence[i] = (fence[i] < arg -> arg : fence[i]);
        res = REPAIRED
    :: else ->
#if CHECK_REPAIR
        /* a key missing where the holder, who still holds the lock, did
         * not release it, with no other key there: put back */
        assert(!(ktok[i] == 0 && arg != NO_REPAIR && arg > FLOOR && BELIEVES(c) &&
                 htok[c] == tok && !(released[i] & TBIT(tok))));
#endif
        res = NO
    fi;
    f = FLOOR
}

inline fence_max_script(i, arg) {
    if
    :: fence[i] < arg -> fence[i] = arg
    :: else -> skip
    fi;
    res = YES; f = FLOOR
}

/* Node i runs client c's request. */
#define SERVE(i, c) \
    :: SERVABLE(i, c) -> \
        d_step { \
            pend[(c) * NN + (i)] = false; \
            if \
            :: cop[c] == ACQ -> acquire_script(i, ctok[c], carg[c]) \
            :: cop[c] == REL -> release_script(i, ctok[c], carg[c]) \
            :: cop[c] == EXT -> extend_script(i, ctok[c], carg[c], c) \
            :: cop[c] == FMAX -> fence_max_script(i, carg[c]) \
            fi; \
            TALLY(c, !onr[c]) \
        }

/* A grant that needs no write-back: its token is client c's proposal
 * (mutex_acquire.lua: a stored counter ahead of the clock is written back
 * to every node, where it is kept on more than a bare majority). */
#define AGREES(c) (f == carg[c])

/* A reply counts while its call is open (and is that connection's). */
#define TALLY(c, mine) \
            if \
            :: open[c] && mine -> \
                cans[c]++; \
                if \
                :: res == YES -> \
                    cagreed[c] = (cyes[c] == 0 || (cagreed[c] && f == cfence[c])) && AGREES(c); \
                    cyes[c]++; cfence[c] = (f > cfence[c] -> f : cfence[c]) \
                :: else -> skip \
                fi \
            :: else -> skip \
            fi; \
            res = 0; f = 0

#define LOSE(i, c) \
    :: losses > 0 && pend[(c) * NN + (i)] -> \
        d_step { pend[(c) * NN + (i)] = false; losses-- }

/* Node i runs client c's extend from the renewal connection. */
#if NN > 1
#define RSERVE(i, c) \
    :: RSERVABLE(i, c) -> \
        d_step { \
            rpend[(c) * NN + (i)] = false; \
            extend_script(i, rtok[c], rarg[c], c); \
            TALLY(c, onr[c]) \
        }
#define RLOSE(i, c) \
    :: losses > 0 && rpend[(c) * NN + (i)] -> \
        d_step { rpend[(c) * NN + (i)] = false; losses-- }
#else
#define RSERVE(i, c)
#define RLOSE(i, c)
#endif

/* A crash drops what the node had not run yet. */
inline crash(i) {
    up[i] = false;
    for (j : 0 .. NC - 1) {
        pend[j * NN + i] = false;
#if NN > 1
        rpend[j * NN + i] = false
#endif
    }
    j = 0
}

/* Restores the last snapshot (empty unless one was taken). */
inline lose_data(i) {
    ktok[i] = stok[i]; krem[i] = srem[i]; fence[i] = sfence[i]; freed[i] = sfreed[i];
    if
    :: krem[i] <= 0 -> ktok[i] = 0; krem[i] = 0
    :: else -> skip
    fi
}

proctype node(byte i) {
    byte j, res;
    short f;
end:
    do
    SERVE(i, 0)
    SERVE(i, 1)
    RSERVE(i, 0)
    RSERVE(i, 1)
    LOSE(i, 0)
    LOSE(i, 1)
    RLOSE(i, 0)
    RLOSE(i, 1)
    :: rollbacks > 0 && up[i] && !(LIVE && snapped[i]) ->
        /* LIVE: one snapshot, else taking them for ever is a step that
         * weak fairness accepts in place of serving */
        d_step {
            snapped[i] = true; stok[i] = ktok[i]; srem[i] = krem[i]; sfence[i] = fence[i];
            sfreed[i] = freed[i]
        }
    :: crash_keep > 0 && up[i] ->
        d_step { crash_keep--; crash(i); down[i] = 1 }
    :: crash_lose > 0 && up[i] ->
        d_step { crash_lose--; crash(i); lose_data(i); down[i] = RDELAY }
    :: rollbacks > 0 && up[i] && snapped[i] ->
        d_step { rollbacks = 0; crash(i); lose_data(i); down[i] = RDELAY }
    :: !up[i] && down[i] == 0 -> up[i] = true
    :: !stepped ->
        d_step {
            stepped = true;
#if STEP_BACK
            off[i] = off[i] - STEP; krem[i] = krem[i] + STEP
#else
            off[i] = off[i] + STEP; krem[i] = krem[i] - STEP;
            if
            :: krem[i] <= 0 -> ktok[i] = 0; krem[i] = 0
            :: else -> skip
            fi
#endif
        }
    od
}

/* ---- time ---------------------------------------------------------------- */
#define DEC(x) x = (x > 0 -> x - 1 : 0)
#ifdef NO_TIME_FLOOR
#define AGE(x) skip   /* tokens are plain counters */
#else
#define AGE(x) x = (x >= FLOOR + SUB -> x - SUB : (x > FLOOR -> FLOOR : x))
#endif

/* Time moves on its own: any process may be slow, a client may pause
 * between any two of its steps for as long as it likes. */
active proctype clock() {
    byte i;
end:
    do
    :: d_step {
#if LIVE
            delays > 0 || !URGENT;
            if
            :: URGENT -> delays--
            :: else -> skip
            fi;
            backoff[0] = false; backoff[1] = false;
#endif
            for (i : 0 .. NN - 1) {
                DEC(krem[i]);
                if
                :: krem[i] == 0 -> ktok[i] = 0
                :: else -> skip
                fi;
                DEC(srem[i]); DEC(down[i]);
                AGE(fence[i]); AGE(sfence[i]); AGE(freed[i]); AGE(sfreed[i])
            }
            for (i : 0 .. NC - 1) {
                DEC(cdl[i]); DEC(vu[i]); DEC(cvu[i]);
                AGE(cF[i]); AGE(cfence[i]); AGE(carg[i]);
#if NN > 1
                AGE(rarg[i]);
#endif
            }
            AGE(last_fence);
            us = 0; i = 0
        }
    od
}

/* ---- clients ------------------------------------------------------------- */
/* Starts a call on every node that is up (a node that is down refuses the
 * connection), with `deadline` ticks to settle, that would give
 * `validity` ticks of validity. Inside the caller's d_step: the call
 * starts when its guard held. */
inline call_all(o, t, a, deadline, validity) {
    cop[c] = o; ctok[c] = t; carg[c] = a;
    open[c] = true; onr[c] = false; cyes[c] = 0; cans[c] = 0; cfence[c] = FLOOR;
    cvu[c] = validity; cdl[c] = deadline;
    for (k : 0 .. NN - 1) { pend[c * NN + k] = up[k] }
    k = 0
}

/* An extend: on the renewal connection with N > 1 (a new one replaces an
 * extend still in flight there, never the main connection's requests). */
inline call_extend(t, a, deadline, validity) {
#if NN > 1
    rtok[c] = t; rarg[c] = a;
    open[c] = true; onr[c] = true; cyes[c] = 0; cans[c] = 0; cfence[c] = FLOOR;
    cvu[c] = validity; cdl[c] = deadline;
    for (k : 0 .. NN - 1) { rpend[c * NN + k] = up[k] }
    k = 0
#else
    call_all(EXT, t, a, deadline, validity)
#endif
}

/* Waits until the call is decided or its deadline passed, and closes it. */
inline settle() {
    d_step {
        DECIDED(c) || cdl[c] == 0;
        open[c] = false; cdl[c] = 0
    }
}

#define MIN(a, b) (a < b -> a : b)

/* The cleanup release of a failed attempt (FLOOR: it held nothing; a lost
 * lock's, below, carries its fence): sent to every node, not waited for
 * (it publishes nothing either way). A release records its fence (in
 * `freed`) with N > 1 only, as the code: with one node nothing repairs;
 * and only once an extend that may repair went out for this hold
 * (`repairs`, which exists only where extends may repair): no extend can
 * run after the release otherwise. RELEASE_ARG() makes a release's
 * argument FLOOR where it records nothing. The negative control NO_FREED
 * records it never. */
#if NN > 1 && EXTENDS > 0 && !defined(NO_FREED)
#define REPAIRS 1
#define NO_REPAIRS_YET repairs = false
#define REPAIRS_SENT repairs = true
#define RELEASE_ARG() if :: !repairs -> carg[c] = FLOOR :: else -> skip fi
#else
#define REPAIRS 0
#define NO_REPAIRS_YET skip
#define REPAIRS_SENT skip
#define RELEASE_ARG() carg[c] = FLOOR
#endif
inline clean_up() {
    d_step { call_all(REL, tok, FLOOR, 0, 0); open[c] = false }
}

#if CHECK_GHOST || CHECK_REPAIR
#define HOLDS(t) htok[c] = t
#else
#define HOLDS(t) skip
#endif

inline forget() {
    held[c] = false; vu[c] = 0; cF[c] = FLOOR; HOLDS(0)
}

/* A lost lock: the belief ends, then its cleanup goes out, with its fence. */
inline lost() {
    held[c] = false; vu[c] = 0; HOLDS(0);
    d_step { call_all(REL, tok, cF[c], 0, 0); RELEASE_ARG(); open[c] = false; cF[c] = FLOOR }
}

proctype client(byte c) {
    byte tok, k, calls, extends;
#if REPAIRS
    bool repairs; /* this hold sent an extend that may repair */
#endif

idle:
    do
    :: d_step {
#if LIVE
            !backoff[c];
            backoff[c] = true; busy[c] = true;
            calls = calls % 2 + 1;
#else
            calls < CALLS;
            calls++;
#endif
            tok = c * 16 + calls;  /* one token per call */
            call_all(ACQ, tok, (PROPOSE > 0 -> PROPOSE - c * PSKEW : FLOOR), NDL, TTL - DRIFT)
        }
        settle();
        if
        :: d_step { cyes[c] >= QUORUM && cvu[c] > 0; cF[c] = cfence[c]; cfence[c] = FLOOR } ->
#if NN > 1 && !defined(NO_WRITE_BACK)
            /* the largest fence of the quorum is written back to every node
             * and must reach a majority before the validity ends, unless
             * every node counted granted it (and stores it already) */
            if
            :: cagreed[c] -> skip
            :: else ->
                d_step { call_all(FMAX, tok, cF[c], MIN(NDL, cvu[c]), cvu[c]) }
                settle()
            fi;
#endif
            if
            :: d_step {
                    (NN == 1 || cyes[c] >= QUORUM) && cvu[c] > 0;
                    held[c] = true; vu[c] = cvu[c]; HOLDS(tok); ATTEMPT_DONE; NO_REPAIRS_YET;
#if CHECK_MUTEX
                    assert(!(BELIEVES(0) && BELIEVES(1)));
#endif
#if CHECK_FENCE
                    assert(cF[c] > last_fence);
#endif
                    last_fence = cF[c]
                }
                goto holding
            :: else -> cF[c] = FLOOR; clean_up(); ATTEMPT_DONE
            fi
        :: else ->
            /* a cleanup where our SET may have landed: a node that granted,
             * or one that did not answer (the code counts as such a node
             * whose script the ACL stopped after its SET) */
            if
            :: cyes[c] > 0 || cans[c] < NN -> clean_up()
            :: else -> skip
            fi;
            ATTEMPT_DONE;
#ifdef NO_RETRY
            break              /* gives up after one refusal */
#else
            skip
#endif
        fi
#if !LIVE
    :: else -> break
#endif
    od;
    goto finish;

holding:
    do
    :: vu[c] == 0 ->
        /* the validity ran out before an extend succeeded: lost */
        lost();
        goto idle
    :: d_step {
            extends < EXTENDS && vu[c] > 0;
            extends++;
            /* repair with N > 1 only, and only inside the validity */
#if NN > 1
            call_extend(tok, cF[c], MIN(NDL, vu[c]), TTL - DRIFT);
            REPAIRS_SENT
#else
            call_extend(tok, NO_REPAIR, MIN(NDL, vu[c]), TTL - DRIFT)
#endif
        }
        settle();
        if
        :: cyes[c] >= QUORUM ->
            d_step {
                vu[c] = cvu[c];
#if CHECK_MUTEX
                /* a belief may start again here, after a gap */
                assert(!(BELIEVES(0) && BELIEVES(1)))
#endif
            }
        :: cyes[c] < QUORUM && cans[c] >= QUORUM ->
            /* enough verdicts, not enough of them ours: lost */
            lost();
            goto idle
        :: else -> skip            /* no verdict: the old validity stands */
        fi
    :: true ->
        /* the caller releases: from here on it does not hold the lock */
        d_step { call_all(REL, tok, cF[c], 0, 0); RELEASE_ARG(); open[c] = false; forget() }
        goto idle
    od;

finish:
    skip
}

init {
    byte i;
    atomic {
        for (i : 0 .. NN - 1) {
            up[i] = true;
            fence[i] = FLOOR;
            sfence[i] = FLOOR;
            freed[i] = FLOOR;
            sfreed[i] = FLOOR
        }
        for (i : 0 .. NC - 1) {
            cF[i] = FLOOR; cfence[i] = FLOOR; carg[i] = FLOOR;
#if NN > 1
            rarg[i] = FLOOR;
#endif
        }
        off[0] = OFF;
        fence[0] = (AHEAD > 0 -> AHEAD * SUB : FLOOR);  /* not in any snapshot */
        for (i : 0 .. NN - 1) { run node(i) }
        run client(0);
        run client(1);
        i = 0
    }
}
