/*
 * The spinning and parking protocol of one domain, in Promela, for SPIN (Debian's `spin`):
 * no lost wake-up. scripts/dev/models.sh checks it (exhaustively), and checks that the mutant
 * without the spinner's re-check does lose a wake-up, so that the model is known to see one.
 *
 * What is modelled, with the C++ each step stands for:
 *   Producer  an M that holds P0 and readies two goroutines (proc.cpp goready: runqput into
 *             its own P, then wakep). It never runs them itself: some other M must, which is
 *             the case the protocol exists for (the producer stays busy).
 *   M(id)     an M running the scheduler loop (proc.cpp schedule/findrunnable) on a P, or
 *             parked on the idle list waiting for startm to hand it one (idle.cpp stopm).
 * Each statement is one atomic step of the C++ (an atomic load, store, CAS or fetch_add, or a
 * whole critical section under the domain lock, which the lock makes indivisible for
 * everything else that takes it). The ring, runnext and the global queue are a count per P:
 * runqget and runqsteal take one goroutine atomically (a CAS on the ring's head), which is
 * all this protocol depends on.
 *
 * The property: when nothing can move any more (SPIN's `timeout`), no goroutine waits in a
 * queue while a P is idle: a lost wake-up is exactly such a final state, every M asleep.
 *
 * Scope, as Go's (proc.go, "Worker thread parking/unparking"): the guarantee is for the
 * spinning -> non-spinning transition racing with a submission. An M that gives its P back
 * without ever spinning (findrunnable lets it when 2 * nmspinning >= busy Ps) does not look
 * again, and SPIN finds the interleaving where that strands work for a while: the M reads a
 * wakep's reservation that startm is about to undo (no idle P yet), and the submitter's
 * wakep reads npidle before that M's pidleput publishes its P. The work is not lost: it sits
 * in the submitter's own run queue, which its M runs when its goroutine yields or is
 * preempted (with signal-based preemption, a time slice at most; without it, as in a TSan
 * build, until it yields). Go 1.21 closed that gap too (needspinning: an M about to give its
 * P back without spinning becomes a spinner if a wakep found no P); nugo has not yet, and
 * this model does not cover it: an M that ran a goroutine keeps its P busy from then on, so
 * every M that gives a P back here is a spinner, the case the protocol promises.
 */

#ifndef NP
#define NP 2          /* Ps: P0 the producer's, P1 the spinner's, any others idle at start */
#endif
#define NM (NP + 3)   /* M ids: 1 and 2 at start, the rest made by newm */
#define NONE 255
#define NGOROUTINES 2

byte runq[NP];        /* goroutines queued on each P (ring + runnext) */
bit  pidle[NP];       /* on the domain's idle P list (Domain::pidle) */
byte npidle;          /* Domain::npidle */
byte nmspinning;      /* Domain::nmspinning */
bit  midle[NM];       /* on the domain's idle M list (Domain::midle) */
byte nextp[NM];       /* M::nextp, set by startm before the wake-up */
bit  nextspin[NM];    /* M::spinning, as startm sets it */
bit  dlock;           /* Domain::lock */
byte ran;             /* goroutines that have run */
byte newms;           /* Ms made by newm */
byte pi;              /* pidleget's and mget's loops (only ever run under the lock) */

inline lock()   { atomic { dlock == 0 -> dlock = 1 } }
inline unlock() { dlock = 0 }

/* domain.cpp pidleget, under the lock: any idle P. */
inline pidleget(p) {
  p = NONE;
  atomic {
    for (pi : 0 .. NP - 1) {
      if
      :: p == NONE && pidle[pi] -> pidle[pi] = 0; npidle--; p = pi
      :: else -> skip
      fi
    }
  }
}

/* idle.cpp startm(Domain*, spinning): an idle P and an idle M (or a new one), handed over
 * under the lock; undoes the caller's nmspinning reservation if no P is idle. */
inline startm(spinning, p, m) {
  lock();
  pidleget(p);
  if
  :: p == NONE ->
#ifndef MUTANT_UNDO_OUTSIDE_LOCK
     /* the reservation is undone under the lock (as Go 1.21's wakep does): a P given back
        meanwhile is then either seen by pidleget above or given back after the undo, and its
        M's re-check, after its own decrement, sees what the submitter queued */
     if :: spinning -> nmspinning-- :: else -> skip fi;
     unlock()
#else
     unlock();
     if :: spinning -> nmspinning-- :: else -> skip fi
#endif
  :: else ->
     m = NONE;                                   /* mget: any idle M */
     atomic {
       for (pi : 1 .. NM - 1) {
         if
         :: m == NONE && midle[pi] -> midle[pi] = 0; m = pi
         :: else -> skip
         fi
       }
     }
     if
     /* startm_locked: m->spinning, then m->nextp, then the lock released and park.wakeup();
        the M reads both only once woken, so it sees both */
     :: m != NONE -> nextspin[m] = spinning; nextp[m] = p; unlock()
     :: else -> unlock(); newms++; assert(2 + newms < NM); run M(2 + newms, p, spinning)  /* newm */
     fi
  fi
}

/* idle.cpp wakep + wake_spinner: only if a P is idle, and only if nobody spins (a CAS 0 -> 1
 * reserves the spinner's place). */
inline wakep(p, m) {
  if
  :: npidle == 0 -> skip
  :: else ->
     if
     :: nmspinning != 0 -> skip
     :: else ->
        if
        :: atomic { nmspinning == 0 -> nmspinning = 1 } -> startm(1, p, m)
        :: atomic { nmspinning != 0 -> skip }
        fi
     fi
  fi
}

proctype Producer() {
  byte p, m, i;
  for (i : 1 .. NGOROUTINES) {
    runq[0]++;     /* runqput(pp, gp, next): a release store of the ring's tail */
    wakep(p, m)
  }
}

proctype M(byte id; byte start; bit startspin) {
  byte p = start, q, m, queued;
  bit spinning = startspin, took;
  if
  :: p == NONE -> goto park
  :: else -> skip
  fi;
top:
  /* findrunnable: our own run queue */
  atomic { if :: runq[p] > 0 -> runq[p]--; took = 1 :: else -> took = 0 fi };
  if :: took -> goto running :: else -> skip fi;
  /* steal_work: a spinning M steals; another becomes spinning only while fewer than half
     the busy Ps have a spinner ("2 * nmspinning < busy", two loads, then become_spinning's
     fetch_add), else it goes straight to giving up its P */
  if
  :: !spinning && 2 * nmspinning < NP - npidle -> nmspinning++; spinning = 1
  :: else -> skip
  fi;
  if
  :: spinning ->
     for (q : 0 .. NP - 1) {
       atomic { if :: q != p && runq[q] > 0 -> runq[q]--; took = 1 :: else -> took = 0 fi };
       if :: took -> goto running :: else -> skip fi
     }
  :: else -> skip
  fi;
  /* Nothing anywhere: give the P back, under the lock (releasep, pidleput). */
  lock();
  pidle[p] = 1; npidle++; p = NONE;
  unlock();
  if
  :: spinning ->
     spinning = 0;
     nmspinning--;                 /* stop_spinning: a seq_cst fetch_sub */
#ifndef MUTANT_NO_RECHECK
     /* check_runqs_no_p: every queue once more, after the decrement (the StoreLoad half) */
     queued = 0;
     for (q : 0 .. NP - 1) { queued = queued + runq[q] }
     if
     :: queued > 0 ->
        lock(); pidleget(p); unlock();
        if
        :: p != NONE -> nmspinning++; spinning = 1; goto top   /* acquirep, become_spinning */
        :: else -> skip
        fi
     :: else -> skip
     fi
#endif
  :: else -> skip
  fi;
park:
  /* stopm: onto the idle list, then sleep until startm hands a P over */
  lock(); midle[id] = 1; unlock();
end_park:
  atomic { nextp[id] != NONE -> p = nextp[id]; spinning = nextspin[id]; nextp[id] = NONE };
  goto top;
running:
  ran++;
  /* schedule: a spinner that found work stops spinning and wakes another (resetspinning) */
  if
  :: spinning -> spinning = 0; nmspinning--; wakep(q, m)
  :: else -> skip
  fi
  /* and runs the goroutine, which keeps its P busy from here on: every M that gives a P
     back in this model is then a spinner, the transition the protocol is built for */
}

/* No lost wake-up: when nothing can move any more, no goroutine waits in a queue while a P
   sits idle. */
active proctype Check() {
  byte q, queued;
  timeout;
  for (q : 0 .. NP - 1) { queued = queued + runq[q] }
  assert(queued == 0 || npidle == 0);
  assert(nmspinning == 0)  /* and no spinner's place is held by nobody (a leaked reservation) */
}

init {
  byte i;
  for (i : 0 .. NM - 1) { nextp[i] = NONE }
  /* P0 runs the producer; P1's M (M1) is spinning, having found nothing yet; M2 parks (puts
     itself on the idle list) as it starts; any other P is idle. */
  nmspinning = 1;
  for (i : 2 .. NP - 1) { pidle[i] = 1; npidle++ }
  atomic {
    run Producer();
    run M(1, 1, 1);
    run M(2, NONE, 0)
  }
}
