/*
 * The local run queue (core/src/runq.cpp) in Promela, for SPIN: no goroutine is lost and
 * none is run twice, whatever the interleaving of its owner with thieves. scripts/dev/models.sh
 * checks it exhaustively, and checks that mutants (a rule of the C++ taken out) fail:
 * MUTANT_GET_NO_CAS (runqget advances head with a store), MUTANT_RUNNEXT_NO_CAS (runqget
 * empties runnext with a store), MUTANT_PUTSLOW_NO_CAS (runqputslow moves head with a store).
 *
 * What is modelled, with the C++ each step stands for (runq.cpp):
 *   Owner     P0's M: readies NG goroutines one by one (runqput, with next = true or false,
 *             chosen by SPIN), and between them may run one (runqget). When the ring is full
 *             runqput moves half of it and the new G to the global queue (runqputslow).
 *   Thief     P1's M, in the owner's domain: steals half of P0's ring, or P0's runnext when
 *             the ring is empty (runqsteal/runqgrab with Take::half, steal_runnext), runs the
 *             last G it took, and later runs what it put in its own ring (runqget on P1).
 *   Remote    (NP = 3) P2's M, in another domain: steals one G (Take::one, NUMA mode's
 *             remote_take=1) from P0 or from P1, so a P is robbed by two thieves at once and
 *             a thief's own ring is robbed while it fills it.
 * Each statement is one atomic step of the C++ (a load, a store, a CAS or an exchange). The
 * counters are bytes that wrap as the C++'s 32-bit ones do, over a ring of RQ slots (the C++
 * has 256; 2 keeps the state space small while the ring still fills and wraps).
 *
 * The property: each goroutine is run at most once (checked when it is run), and when every
 * process has finished, draining what is left in the rings, runnexts and the global queue
 * finds each goroutine that has not run exactly once: none lost, none duplicated.
 *
 * Scope: SPIN's interleavings are sequentially consistent; the C++'s acquire/release orders
 * are argued in runq.cpp's header, not checked here. runqgrab's ~3 us wait before taking a
 * running victim's runnext is a delay, not a step, and is left out.
 */

#ifndef NP
#define NP 2            /* 2: owner and a same-node thief; 3: and a remote thief */
#endif
#define RQ 2            /* ring slots (kRunqSize) */
#define NG 4            /* goroutines the owner readies, ids 1..NG */
#define NONE 0

byte slot[NP * RQ];     /* P::runq: slot[p * RQ + i] */
byte head[NP];          /* P::runqhead (wraps at 256, like the C++'s at 2^32) */
byte tail[NP];          /* P::runqtail */
byte runnext[NP];       /* P::runnext */
byte glob[NG + 1];      /* the global queue, as a set: glob[g] = 1 if g is on it */
byte ran[NG + 1];       /* how many times each goroutine has run */
byte done;              /* processes finished */

/* The inlines' temporaries, declared once in every process that uses them. */
#define TEMPS byte rg_h, rg_t, rg_n, ps_i, ps_batch[RQ / 2], rp_g, rp_h, rp_t, st_h, st_t, st_n, st_i, st_mt, st_x; bit rp_ok

/* A goroutine runs: never twice. */
inline execute(g) {
  d_step { ran[g]++; assert(ran[g] == 1) }
}

/* runqget (runq.cpp): runnext first, by CAS; then the ring's head, by CAS. */
inline runqget(p, g) {
  g = NONE;
  rg_n = runnext[p];                                           /* load(rlx) */
  if
  :: rg_n != NONE ->
#ifdef MUTANT_RUNNEXT_NO_CAS
       runnext[p] = NONE; g = rg_n                             /* a plain store: races a thief */
#else
       atomic { if :: runnext[p] == rg_n -> runnext[p] = NONE; g = rg_n :: else -> skip fi }  /* CAS */
#endif
  :: else -> skip
  fi;
  do
  :: g != NONE -> break
  :: else ->
       rg_h = head[p];                                         /* load(acq) */
       rg_t = tail[p];                                         /* load(rlx) */
       if
       :: rg_t == rg_h -> break                                /* empty */
       :: else ->
            rg_n = slot[p * RQ + rg_h % RQ];                   /* read the slot */
#ifdef MUTANT_GET_NO_CAS
            head[p] = rg_h + 1; g = rg_n                       /* a plain store: races a thief */
#else
            atomic { if :: head[p] == rg_h -> head[p] = rg_h + 1; g = rg_n :: else -> skip fi }  /* CAS */
#endif
       fi
  od
}

/* runqputslow: the ring is full; half of it and gp go to the global queue, unless a thief
 * moved head meanwhile (then runqput tries again). */
inline runqputslow(p, gp, h, ok) {
  ps_i = 0;
  do
  :: ps_i < RQ / 2 -> ps_batch[ps_i] = slot[p * RQ + (h + ps_i) % RQ]; ps_i++
  :: else -> break
  od;
#ifdef MUTANT_PUTSLOW_NO_CAS
  head[p] = h + RQ / 2; ok = 1;                                /* a plain store: races a thief */
#else
  atomic { if :: head[p] == h -> head[p] = h + RQ / 2; ok = 1 :: else -> ok = 0 fi }  /* CAS */
#endif
  if
  :: ok ->
       d_step {                                                /* under the domain lock */
         ps_i = 0;
         do
         :: ps_i < RQ / 2 -> glob[ps_batch[ps_i]]++; ps_i++
         :: else -> break
         od;
         glob[gp]++
       }
  :: else -> skip
  fi
}

/* runqput (runq.cpp): with next, gp takes runnext and the old runnext goes to the ring. */
inline runqput(p, gp, next) {
  rp_g = gp;
  if
  :: next -> atomic { rp_g = runnext[p]; runnext[p] = gp }    /* exchange(seq_cst) */
  :: else -> skip
  fi;
  do
  :: rp_g == NONE -> break
  :: else ->
       rp_h = head[p];                                         /* load(acq) */
       rp_t = tail[p];                                         /* load(rlx): only we store it */
       if
       :: (rp_t - rp_h + 256) % 256 < RQ ->
            slot[p * RQ + rp_t % RQ] = rp_g;                   /* store the slot */
            tail[p] = rp_t + 1;                                /* store(rel): publish */
            break
       :: else ->
            rp_ok = 0;
            runqputslow(p, rp_g, rp_h, rp_ok);
            if :: rp_ok -> break :: else -> skip fi
       fi
  od
}

/* runqgrab + runqsteal (runq.cpp): thief p takes from victim v into its own ring at its tail,
 * and gets the last one taken to run. half: Take::half, else Take::one. */
inline runqsteal(p, v, half, steal_next, g) {
  g = NONE;
  st_mt = tail[p];                                             /* own tail, load(rlx) */
  do
  ::
    st_h = head[v];                                            /* load(acq) */
    st_t = tail[v];                                            /* load(acq) */
    st_n = (st_t - st_h + 256) % 256;
    if :: half -> st_n = st_n - st_n / 2 :: else -> if :: st_n > 0 -> st_n = 1 :: else -> skip fi fi;
    if
    :: st_n == 0 ->
         if
         :: !steal_next -> break
         :: else ->
              st_x = runnext[v];                               /* load(acq) */
              if
              :: st_x == NONE -> break
              :: else ->
                   atomic {                                    /* CAS */
                     if
                     :: runnext[v] == st_x -> runnext[v] = NONE; slot[p * RQ + st_mt % RQ] = st_x; st_n = 1
                     :: else -> skip
                     fi
                   };
                   if :: st_n == 1 -> break :: else -> skip fi  /* lost the CAS: again */
              fi
         fi
    :: st_n > RQ / 2 -> skip                                   /* h and t read apart: again */
    :: else ->
         st_i = 0;
         do
         :: st_i < st_n -> slot[p * RQ + (st_mt + st_i) % RQ] = slot[v * RQ + (st_h + st_i) % RQ]; st_i++
         :: else -> break
         od;
         atomic { if :: head[v] == st_h -> head[v] = st_h + st_n; st_i = 255 :: else -> skip fi };  /* CAS */
         if :: st_i == 255 -> break :: else -> skip fi
    fi
  od;
  if
  :: st_n > 0 ->
       st_n--;
       g = slot[p * RQ + (st_mt + st_n) % RQ];                 /* the last one: run it */
       if :: st_n > 0 -> tail[p] = st_mt + st_n :: else -> skip fi  /* store(rel): publish */
  :: else -> skip
  fi
}

active proctype Owner() {
  byte g, got;
  TEMPS;
  g = 1;
  do
  :: g <= NG ->
       if
       :: runqput(0, g, 1)
       :: runqput(0, g, 0)
       fi;
       g++;
       if
       :: runqget(0, got); if :: got != NONE -> execute(got) :: else -> skip fi
       :: skip
       fi
  :: else -> break
  od;
  done++
}

active proctype Thief() {
  byte got;
  TEMPS;
  if
  :: runqsteal(1, 0, 1, 1, got)
  :: runqsteal(1, 0, 1, 0, got)
  fi;
  if :: got != NONE -> execute(got) :: else -> skip fi;
  runqget(1, got);
  if :: got != NONE -> execute(got) :: else -> skip fi;
  done++
}

#if NP >= 3
active proctype Remote() {
  byte got;
  TEMPS;
  if
  :: runqsteal(2, 0, 0, 0, got)
  :: runqsteal(2, 1, 0, 0, got)
  fi;
  if :: got != NONE -> execute(got) :: else -> skip fi;
  done++
}
#endif

/* When everyone has finished: what is left anywhere runs now; then every goroutine has run
 * exactly once. */
active proctype Check() {
  byte p, g, got;
  TEMPS;
  done == NP;
  p = 0;
  do
  :: p < NP ->
       do
       :: runqget(p, got); if :: got != NONE -> execute(got) :: else -> break fi
       od;
       p++
  :: else -> break
  od;
  g = 1;
  do
  :: g <= NG -> if :: glob[g] > 0 -> assert(glob[g] == 1); execute(g) :: else -> skip fi; g++
  :: else -> break
  od;
  g = 1;
  do
  :: g <= NG -> assert(ran[g] == 1); g++
  :: else -> break
  od
}
