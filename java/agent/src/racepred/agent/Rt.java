package racepred.agent;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * What instrumented code calls ({@link Transformer} inserts the calls). Each method records
 * its event in the calling thread's {@link ThreadBuffer}; those that replace an operation
 * (array stores, {@code Object.wait}, {@code Thread.join}, {@code Lock} methods) perform it.
 *
 * <p>Order of an event against its operation, so that the trace order agrees with the run:
 * an acquire is recorded after the lock is taken and a release before it is let go (both
 * while it is held); a fork before {@code Thread.start}, a join after {@code join} returned
 * with the thread ended; a volatile write before the write and a volatile read after the
 * read (so a read that sees a write comes after it); {@code Object.wait} and
 * {@code Condition.await} are a release before and an acquire after.
 */
public final class Rt {
    private Rt() {}

    static final int R = 0, W = 1, ACQ = 2, REL = 3, FORK = 4, JOIN = 5, VR = 6, VW = 7;
    /** Target kinds. */
    static final int FIELD = 0, STATIC = 1, ELEM = 2, LOCK = 3, THREAD = 4;
    /** The variable of a synchroniser (latch, semaphore, barrier) for its vw → vr edges. */
    static final int SYNC = 5;
    /** A class's initialisation: its lock and its variable (the object is the Class). */
    static final int INIT = 6;

    /** Records that are not events: a value ({@link ValuePass}) and an operand register. */
    static final int BR = 15, VALUE = 16, OPERAND = 17;
    /** Flags of a value record: the read is pinned; the access is volatile. */
    static final int PIN = 1, VOLATILE = 2;
    /** Values are recorded ({@code racepred record --values}). */
    static volatile boolean values;

    private static final ThreadLocal<ThreadBuffer> BUF =
            ThreadLocal.withInitial(() -> new ThreadBuffer(Thread.currentThread()));

    static ThreadBuffer buffer() {
        return BUF.get();
    }

    /** Numbers of threads whose fork was recorded. */
    static final java.util.Set<Long> FORKED =
            Collections.synchronizedSet(new java.util.HashSet<>());
    /** The lock of each condition made by an instrumented {@code newCondition} call. */
    private static final Map<Condition, Lock> COND_LOCK =
            Collections.synchronizedMap(new WeakHashMap<>());

    // ---- fields -------------------------------------------------------------------------

    /** An access {@code op} of {@code x} of the object {@code o}, if there is one. */
    private static void access(int op, int kind, Object o, int x, int loc) {
        if (o != null) {
            ThreadBuffer b = BUF.get();
            b.add(op, kind, loc, b.idOf(o), x);
        }
    }

    public static void read(Object o, int field, int loc) {
        access(R, FIELD, o, field, loc);
    }

    public static void write(Object o, int field, int loc) {
        access(W, FIELD, o, field, loc);
    }

    public static void readStatic(int field, int loc) {
        BUF.get().add(R, STATIC, loc, 0, field);
    }

    public static void writeStatic(int field, int loc) {
        BUF.get().add(W, STATIC, loc, 0, field);
    }

    public static void volatileRead(Object o, int field, int loc) {
        ThreadBuffer b = BUF.get();
        b.add(VR, FIELD, loc, b.idOf(o), field);
    }

    public static void volatileWrite(Object o, int field, int loc) {
        access(VW, FIELD, o, field, loc);
    }

    public static void volatileReadStatic(int field, int loc) {
        BUF.get().add(VR, STATIC, loc, 0, field);
    }

    public static void volatileWriteStatic(int field, int loc) {
        BUF.get().add(VW, STATIC, loc, 0, field);
    }

    // ---- arrays -------------------------------------------------------------------------

    /** Before an array load (the load itself throws on a null array or a bad index). */
    public static void arrayRead(Object a, int i, int loc) {
        access(R, ELEM, a, i, loc);
    }

    private static void arrayWrite(Object a, int i, int loc) {
        ThreadBuffer b = BUF.get();
        b.add(W, ELEM, loc, b.idOf(a), i);
    }

    public static void iastore(int[] a, int i, int v, int loc) {
        a[i] = v;
        arrayWrite(a, i, loc);
    }

    public static void lastore(long[] a, int i, long v, int loc) {
        a[i] = v;
        arrayWrite(a, i, loc);
    }

    public static void fastore(float[] a, int i, float v, int loc) {
        a[i] = v;
        arrayWrite(a, i, loc);
    }

    public static void dastore(double[] a, int i, double v, int loc) {
        a[i] = v;
        arrayWrite(a, i, loc);
    }

    public static void castore(char[] a, int i, int v, int loc) {
        a[i] = (char) v;
        arrayWrite(a, i, loc);
    }

    public static void sastore(short[] a, int i, int v, int loc) {
        a[i] = (short) v;
        arrayWrite(a, i, loc);
    }

    /** {@code bastore} serves {@code byte[]} and {@code boolean[]}. */
    public static void bastore(Object a, int i, int v, int loc) {
        if (a instanceof boolean[]) {
            ((boolean[]) a)[i] = (v & 1) != 0;
        } else {
            ((byte[]) a)[i] = (byte) v;
        }
        arrayWrite(a, i, loc);
    }

    public static void aastore(Object[] a, int i, Object v, int loc) {
        a[i] = v;
        arrayWrite(a, i, loc);
    }

    // ---- monitors -----------------------------------------------------------------------

    /** After {@code monitorenter} (or entering a synchronized method). */
    public static void monitorEnter(Object o, int loc) {
        ThreadBuffer b = BUF.get();
        if (b.enter(o)) {
            b.add(ACQ, LOCK, loc, b.idOf(o), 0);
        }
    }

    /** Before {@code monitorexit} (or leaving a synchronized method). */
    public static void monitorExit(Object o, int loc) {
        ThreadBuffer b = BUF.get();
        if (b.leave(o)) {
            b.add(REL, LOCK, loc, b.idOf(o), 0);
        }
    }

    /** Releases {@code o} for a wait (if this thread holds it): true if it did. */
    private static boolean releaseAll(ThreadBuffer b, Object o, int loc) {
        if (!b.holds(o)) {
            return false;
        }
        b.add(REL, LOCK, loc, b.idOf(o), 0);
        return true;
    }

    private static void reacquire(ThreadBuffer b, Object o, int loc) {
        b.add(ACQ, LOCK, loc, b.idOf(o), 0);
    }

    /** A blocking call during which a lock is released: a wait or an await. */
    private interface Blocking<T, E extends Exception> {
        T call() throws E;
    }

    /**
     * Runs {@code call} with {@code held}'s release recorded before it (by the caller; null:
     * this thread did not hold it) and its reacquisition after, also when the call throws.
     */
    private static <T, E extends Exception> T releasedDuring(
            ThreadBuffer b, Object held, int loc, Blocking<T, E> call) throws E {
        try {
            return call.call();
        } finally {
            if (held != null) {
                reacquire(b, held, loc);
            }
        }
    }

    /** {@code o} if this thread held it and its release is recorded, else null. */
    private static Object releasedMonitor(ThreadBuffer b, Object o, int loc) {
        return releaseAll(b, o, loc) ? o : null;
    }

    public static void wait(Object o, int loc) throws InterruptedException {
        ThreadBuffer b = BUF.get();
        releasedDuring(b, releasedMonitor(b, o, loc), loc, () -> {
            o.wait();
            return null;
        });
    }

    public static void wait(Object o, long ms, int loc) throws InterruptedException {
        ThreadBuffer b = BUF.get();
        releasedDuring(b, releasedMonitor(b, o, loc), loc, () -> {
            o.wait(ms);
            return null;
        });
    }

    public static void wait(Object o, long ms, int ns, int loc) throws InterruptedException {
        ThreadBuffer b = BUF.get();
        releasedDuring(b, releasedMonitor(b, o, loc), loc, () -> {
            o.wait(ms, ns);
            return null;
        });
    }

    // ---- threads ------------------------------------------------------------------------

    /** Before {@code start()} on {@code o}, when {@code o} is a thread not started yet. */
    public static void beforeStart(Object o, int loc) {
        if (o instanceof Thread && ((Thread) o).getState() == Thread.State.NEW) {
            ThreadBuffer b = BUF.get();
            long child = Ids.of(o);
            if (FORKED.add(child)) {
                b.add(FORK, THREAD, loc, child, 0);
            }
        }
    }

    private static void joined(Thread t, int loc) {
        if (!t.isAlive()) {
            BUF.get().add(JOIN, THREAD, loc, Ids.of(t), 0);
        }
    }

    public static void join(Thread t, int loc) throws InterruptedException {
        t.join();
        joined(t, loc);
    }

    public static void join(Thread t, long ms, int loc) throws InterruptedException {
        t.join(ms);
        joined(t, loc);
    }

    public static void join(Thread t, long ms, int ns, int loc) throws InterruptedException {
        t.join(ms, ns);
        joined(t, loc);
    }

    // ---- java.util.concurrent.locks ----------------------------------------------------

    /**
     * The read-write lock of each read or write lock handed out by an instrumented
     * {@code readLock()}/{@code writeLock()} call. Read locks are shared, which the trace's
     * locks are not. Variables of the read-write lock stand for it: W, written when a
     * writer releases, and one R<sub>t</sub> per thread t that ever took the read lock,
     * written when t releases it. A reader's acquire reads W; a write lock is an ordinary
     * lock whose acquire also reads every R<sub>t</sub> and whose release also writes W. So
     * every reader's sections come before a later writer's (each R<sub>t</sub> read is of
     * t's latest release, an edge every correct reordering keeps) and a writer's before
     * later readers', and readers are not ordered among themselves.
     */
    private static final Map<Lock, ReadWriteLock> RW_OF =
            Collections.synchronizedMap(new WeakHashMap<>());

    public static Lock readLock(ReadWriteLock rw, int loc) {
        Lock l = rw.readLock();
        RW_OF.put(l, rw);
        return l;
    }

    public static Lock writeLock(ReadWriteLock rw, int loc) {
        Lock l = rw.writeLock();
        RW_OF.put(l, rw);
        return l;
    }

    public static ReentrantReadWriteLock.ReadLock readLock(ReentrantReadWriteLock rw, int loc) {
        ReentrantReadWriteLock.ReadLock l = rw.readLock();
        RW_OF.put(l, rw);
        return l;
    }

    public static ReentrantReadWriteLock.WriteLock writeLock(ReentrantReadWriteLock rw,
            int loc) {
        ReentrantReadWriteLock.WriteLock l = rw.writeLock();
        RW_OF.put(l, rw);
        return l;
    }

    /**
     * Threads (numbers) that released each synchroniser or read lock (the key is the
     * read-write lock). Identity keys: a synchroniser's {@code equals} is never overridden.
     */
    private static final Map<Object, java.util.Set<Long>> PARTIES =
            Collections.synchronizedMap(new WeakHashMap<>());

    private static java.util.Set<Long> parties(Object o) {
        synchronized (PARTIES) {
            return PARTIES.computeIfAbsent(o,
                    k -> Collections.synchronizedSet(new java.util.LinkedHashSet<>()));
        }
    }

    private static boolean isRead(Lock l) {
        return l instanceof ReentrantReadWriteLock.ReadLock;
    }

    /** Read-write locks: the shared variable of {@code l}'s read-write lock, or null. */
    private static ReadWriteLock rwOf(Lock l) {
        if (l instanceof ReentrantReadWriteLock.ReadLock
                || l instanceof ReentrantReadWriteLock.WriteLock || !RW_OF.isEmpty()) {
            return RW_OF.get(l);
        }
        return null;
    }

    private static void acquired(Lock l, int loc) {
        ReadWriteLock rw = rwOf(l);
        if (isRead(l)) {
            if (rw != null) {
                ThreadBuffer b = BUF.get();
                b.add(VR, SYNC, loc, b.idOf(rw), 0);
            }
            return;
        }
        ThreadBuffer b = BUF.get();
        if (rw != null && !b.holds(l)) {
            b.enter(l);
            long id = b.idOf(rw);
            b.add(ACQ, LOCK, loc, b.idOf(l), 0);
            java.util.Set<Long> rs = parties(rw);
            synchronized (rs) {
                for (long t : rs) {
                    b.add(VR, SYNC, loc, id, t + 1);
                }
            }
            return;
        }
        if (b.enter(l)) {
            b.add(ACQ, LOCK, loc, b.idOf(l), 0);
        }
    }

    public static void lock(Lock l, int loc) {
        l.lock();
        acquired(l, loc);
    }

    public static void lockInterruptibly(Lock l, int loc) throws InterruptedException {
        l.lockInterruptibly();
        acquired(l, loc);
    }

    public static boolean tryLock(Lock l, int loc) {
        boolean ok = l.tryLock();
        if (ok) {
            acquired(l, loc);
        }
        return ok;
    }

    public static boolean tryLock(Lock l, long time, TimeUnit unit, int loc)
            throws InterruptedException {
        boolean ok = l.tryLock(time, unit);
        if (ok) {
            acquired(l, loc);
        }
        return ok;
    }

    public static void unlock(Lock l, int loc) {
        ThreadBuffer b = BUF.get();
        ReadWriteLock rw = rwOf(l);
        if (isRead(l)) {
            if (rw != null) {
                parties(rw).add(b.thread);
                b.add(VW, SYNC, loc, b.idOf(rw), b.thread + 1);
            }
        } else if (b.leave(l)) {
            if (rw != null) {
                b.add(VW, SYNC, loc, b.idOf(rw), 0);
            }
            b.add(REL, LOCK, loc, b.idOf(l), 0);
        }
        l.unlock();
    }

    public static Condition newCondition(Lock l, int loc) {
        Condition c = l.newCondition();
        COND_LOCK.put(c, l);
        return c;
    }

    /** Records the release of {@code c}'s lock before an await: the lock, or null. */
    private static Lock beforeAwait(ThreadBuffer b, Condition c, int loc) {
        Lock l = COND_LOCK.get(c);
        if (l == null || !releaseAll(b, l, loc)) {
            return null;
        }
        return l;
    }

    public static void await(Condition c, int loc) throws InterruptedException {
        ThreadBuffer b = BUF.get();
        releasedDuring(b, beforeAwait(b, c, loc), loc, () -> {
            c.await();
            return null;
        });
    }

    public static void awaitUninterruptibly(Condition c, int loc) {
        ThreadBuffer b = BUF.get();
        releasedDuring(b, beforeAwait(b, c, loc), loc, () -> {
            c.awaitUninterruptibly();
            return null;
        });
    }

    public static long awaitNanos(Condition c, long ns, int loc) throws InterruptedException {
        ThreadBuffer b = BUF.get();
        return releasedDuring(b, beforeAwait(b, c, loc), loc, () -> c.awaitNanos(ns));
    }

    public static boolean await(Condition c, long time, TimeUnit unit, int loc)
            throws InterruptedException {
        ThreadBuffer b = BUF.get();
        return releasedDuring(b, beforeAwait(b, c, loc), loc, () -> c.await(time, unit));
    }

    // ---- java.util.concurrent synchronisers: vw before a release, vr after an acquire ----

    // A synchroniser has one variable per thread that ever released it, written at each of
    // that thread's releases; an acquire reads all of them. Each read is then of its
    // thread's latest release, an edge every correct reordering keeps (one shared variable
    // would order only the latest releaser's events before the acquire in predictive
    // analyses such as WCP, though a barrier or latch waits for every party).

    private static void released(Object o, int loc) {
        releasedIn(o, loc, 0);
    }

    private static void acquired(Object o, int loc) {
        acquiredIn(o, loc, 0);
    }

    // A barrier's (or phaser's) rounds alternate between two sets of these variables, the
    // odd rounds' flagged ODD: with one set, a thread that leaves round g late (its vr after
    // the wait returned) would read another party's arrival at round g + 1 (its vw before it
    // waits again), and that party's accesses between the rounds would seem to happen
    // before its own. Two suffice: a party arrives at round g + 2 only after every party
    // arrived at round g + 1, each after its vr of round g.

    /** Flags the variables of a barrier's odd rounds (in the {@code x} of a SYNC event). */
    static final long ODD = 1L << 40;

    private static void releasedIn(Object o, int loc, long round) {
        ThreadBuffer b = BUF.get();
        parties(o).add(b.thread);
        b.add(VW, SYNC, loc, b.idOf(o), (b.thread + 1) | (round & 1) * ODD);
    }

    private static void acquiredIn(Object o, int loc, long round) {
        ThreadBuffer b = BUF.get();
        long id = b.idOf(o);
        java.util.Set<Long> ps = parties(o);
        synchronized (ps) {
            for (long t : ps) {
                b.add(VR, SYNC, loc, id, (t + 1) | (round & 1) * ODD);
            }
        }
    }

    /**
     * Arrivals at each {@code CyclicBarrier} (identity keys): the round of an arrival is its
     * number divided by the parties (every arrival of a round comes before any of the
     * next). Negative once the barrier broke (a reset, a timeout, an interrupt): its rounds
     * are no longer counted, and all of them use the even variables, as one round would.
     */
    private static final Map<Object, java.util.concurrent.atomic.AtomicLong> ARRIVALS =
            Collections.synchronizedMap(new WeakHashMap<>());

    private static java.util.concurrent.atomic.AtomicLong arrivals(CyclicBarrier c) {
        return ARRIVALS.computeIfAbsent(c, k -> new java.util.concurrent.atomic.AtomicLong());
    }

    private static long roundOf(CyclicBarrier c) {
        long n = arrivals(c).getAndIncrement();
        return n < 0 ? 0 : n / c.getParties();
    }

    private static void broke(CyclicBarrier c) {
        arrivals(c).set(Long.MIN_VALUE / 2);
    }

    public static void countDown(CountDownLatch l, int loc) {
        released(l, loc);
        l.countDown();
    }

    public static void await(CountDownLatch l, int loc) throws InterruptedException {
        l.await();
        acquired(l, loc);
    }

    public static boolean await(CountDownLatch l, long time, TimeUnit unit, int loc)
            throws InterruptedException {
        boolean ok = l.await(time, unit);
        if (ok) {
            acquired(l, loc);
        }
        return ok;
    }

    public static void release(Semaphore s, int loc) {
        released(s, loc);
        s.release();
    }

    public static void release(Semaphore s, int n, int loc) {
        released(s, loc);
        s.release(n);
    }

    public static void acquire(Semaphore s, int loc) throws InterruptedException {
        s.acquire();
        acquired(s, loc);
    }

    public static void acquire(Semaphore s, int n, int loc) throws InterruptedException {
        s.acquire(n);
        acquired(s, loc);
    }

    public static void acquireUninterruptibly(Semaphore s, int loc) {
        s.acquireUninterruptibly();
        acquired(s, loc);
    }

    public static void acquireUninterruptibly(Semaphore s, int n, int loc) {
        s.acquireUninterruptibly(n);
        acquired(s, loc);
    }

    public static boolean tryAcquire(Semaphore s, int loc) {
        boolean ok = s.tryAcquire();
        if (ok) {
            acquired(s, loc);
        }
        return ok;
    }

    public static boolean tryAcquire(Semaphore s, int n, int loc) {
        boolean ok = s.tryAcquire(n);
        if (ok) {
            acquired(s, loc);
        }
        return ok;
    }

    public static boolean tryAcquire(Semaphore s, long time, TimeUnit unit, int loc)
            throws InterruptedException {
        boolean ok = s.tryAcquire(time, unit);
        if (ok) {
            acquired(s, loc);
        }
        return ok;
    }

    public static boolean tryAcquire(Semaphore s, int n, long time, TimeUnit unit, int loc)
            throws InterruptedException {
        boolean ok = s.tryAcquire(n, time, unit);
        if (ok) {
            acquired(s, loc);
        }
        return ok;
    }

    /** Every party's arrival (vw) comes before every party's departure (vr) of a round. */
    public static int await(CyclicBarrier c, int loc)
            throws InterruptedException, BrokenBarrierException {
        long round = roundOf(c);
        releasedIn(c, loc, round);
        int r;
        try {
            r = c.await();
        } catch (InterruptedException | BrokenBarrierException | RuntimeException e) {
            broke(c);
            throw e;
        }
        acquiredIn(c, loc, round);
        return r;
    }

    public static int await(CyclicBarrier c, long time, TimeUnit unit, int loc)
            throws InterruptedException, BrokenBarrierException, TimeoutException {
        long round = roundOf(c);
        releasedIn(c, loc, round);
        int r;
        try {
            r = c.await(time, unit);
        } catch (InterruptedException | BrokenBarrierException | TimeoutException
                | RuntimeException e) {
            broke(c);
            throw e;
        }
        acquiredIn(c, loc, round);
        return r;
    }

    /**
     * A phaser's arrivals (vw) come before the departures of the phases they end (vr); the
     * phase's parity picks the variables, as a barrier's round does. A party's phase does
     * not change before it arrives, so {@code getPhase()} before the arrival is the arrival's
     * phase. (A thread that awaits a phase without being a party may leave so late that the
     * phase two after has begun: it then reads those arrivals too.)
     */
    public static int arrive(java.util.concurrent.Phaser p, int loc) {
        releasedIn(p, loc, p.getPhase());
        return p.arrive();
    }

    public static int arriveAndDeregister(java.util.concurrent.Phaser p, int loc) {
        releasedIn(p, loc, p.getPhase());
        return p.arriveAndDeregister();
    }

    public static int arriveAndAwaitAdvance(java.util.concurrent.Phaser p, int loc) {
        int phase = p.getPhase();
        releasedIn(p, loc, phase);
        int r = p.arriveAndAwaitAdvance();
        acquiredIn(p, loc, phase);
        return r;
    }

    public static int awaitAdvance(java.util.concurrent.Phaser p, int phase, int loc) {
        int r = p.awaitAdvance(phase);
        acquiredIn(p, loc, phase);
        return r;
    }

    public static int awaitAdvanceInterruptibly(java.util.concurrent.Phaser p, int phase,
            int loc) throws InterruptedException {
        int r = p.awaitAdvanceInterruptibly(phase);
        acquiredIn(p, loc, phase);
        return r;
    }

    public static int awaitAdvanceInterruptibly(java.util.concurrent.Phaser p, int phase,
            long time, TimeUnit unit, int loc) throws InterruptedException, TimeoutException {
        int r = p.awaitAdvanceInterruptibly(phase, time, unit);
        acquiredIn(p, loc, phase);
        return r;
    }

    // ---- java.util.concurrent.atomic: one volatile variable per object ----------------

    /** Before a call that writes an atomic. */
    public static void atomicWrite(Object o, int loc) {
        if (o != null) {
            ThreadBuffer b = BUF.get();
            b.add(VW, SYNC, loc, b.idOf(o), 0);
        }
    }

    /** After a call that read an atomic. */
    public static void atomicRead(Object o, int loc) {
        if (o != null) {
            ThreadBuffer b = BUF.get();
            b.add(VR, SYNC, loc, b.idOf(o), 0);
        }
    }

    /** Drops the receiver kept for a call that only writes. */
    public static void forget(Object o, int loc) {}

    // ---- Thread.interrupt: a release by the interrupter, an acquire where it is seen ----

    public static void interrupt(Thread t, int loc) {
        released(t, loc);
        t.interrupt();
    }

    public static boolean isInterrupted(Thread t, int loc) {
        boolean r = t.isInterrupted();
        if (r) {
            acquired(t, loc);
        }
        return r;
    }

    /** Replaces the static {@code Thread.interrupted()}. */
    public static boolean interrupted(int loc) {
        boolean r = Thread.interrupted();
        if (r) {
            acquired(Thread.currentThread(), loc);
        }
        return r;
    }

    /** At the start of a handler of {@code InterruptedException}. */
    public static void caughtInterrupt(int loc) {
        acquired(Thread.currentThread(), loc);
    }

    // ---- executors: a task starts after its submission, Future.get after its end -------

    static void releasedSync(Object o, int loc) {
        released(o, loc);
    }

    static void acquiredSync(Object o, int loc) {
        acquired(o, loc);
    }

    /** The task behind each future returned by an instrumented {@code submit}. */
    private static final Map<Future<?>, Task> TASK_OF =
            Collections.synchronizedMap(new WeakHashMap<>());

    public static void execute(Executor ex, Runnable r, int loc) {
        Task t = new Task(ex, r, null, null);
        released(t, loc);
        ex.execute((Runnable) t);
    }

    private static Future<?> submitted(Task t, Future<?> f) {
        TASK_OF.put(f, t);
        return f;
    }

    public static Future<?> submit(ExecutorService ex, Runnable r, int loc) {
        Task t = new Task(ex, r, null, null);
        released(t, loc);
        return submitted(t, ex.submit((Runnable) t));
    }

    public static Future<?> submit(ExecutorService ex, Runnable r, Object result, int loc) {
        Task t = new Task(ex, r, null, result);
        released(t, loc);
        return submitted(t, ex.submit((Callable<Object>) t));
    }

    public static Future<?> submit(ExecutorService ex, Callable<?> c, int loc) {
        Task t = new Task(ex, null, c, null);
        released(t, loc);
        return submitted(t, ex.submit((Callable<Object>) t));
    }

    public static Object get(Future<?> f, int loc) throws InterruptedException, ExecutionException {
        Object v = f.get();
        Task t = TASK_OF.get(f);
        if (t != null) {
            acquired(t.done, loc);
        }
        return v;
    }

    public static Object get(Future<?> f, long time, TimeUnit unit, int loc)
            throws InterruptedException, ExecutionException, TimeoutException {
        Object v = f.get(time, unit);
        Task t = TASK_OF.get(f);
        if (t != null) {
            acquired(t.done, loc);
        }
        return v;
    }

    public static boolean awaitTermination(ExecutorService ex, long time, TimeUnit unit, int loc)
            throws InterruptedException {
        boolean ok = ex.awaitTermination(time, unit);
        if (ok) {
            acquired(ex, loc);
        }
        return ok;
    }

    // ---- values (ValuePass): each access and its record under a striped lock ----------

    private static final int STRIPES = 1024;
    private static final java.util.concurrent.atomic.AtomicIntegerArray LOCKS =
            new java.util.concurrent.atomic.AtomicIntegerArray(STRIPES);

    /**
     * Takes the lock of stripe {@code h}, held over one access and its record only, so the
     * order of the records of a variable's accesses is the order of the accesses. A thread
     * holds one stripe at a time.
     */
    private static void lockStripe(int h) {
        ThreadBuffer b = BUF.get();
        if (b.stripe != 0) {
            unlock(b);
        }
        int s = (h ^ (h >>> 16)) & (STRIPES - 1);
        for (int spins = 0; !LOCKS.compareAndSet(s, 0, 1); spins++) {
            if (spins < 64) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
        b.stripe = s + 1;
    }

    private static void unlock(ThreadBuffer b) {
        if (b.stripe != 0) {
            LOCKS.set(b.stripe - 1, 0);
            b.stripe = 0;
        }
    }

    public static void unlock() {
        unlock(BUF.get());
    }

    /** Before a field access (nothing when {@code o} is null: the access throws). */
    public static void lockField(Object o, int field) {
        if (o != null) {
            lockStripe(System.identityHashCode(o) * 31 + field);
        }
    }

    /** Before a static field access, the class initialised. */
    public static void lockStatic(int field) {
        lockStripe(field * 0x9E3779B1);
    }

    /** Before an array access that will not throw (a null array or a bad index locks nothing). */
    public static void lockElem(Object a, int i) {
        if (a != null && i >= 0 && i < java.lang.reflect.Array.getLength(a)) {
            lockStripe(System.identityHashCode(a) * 31 + i);
        }
    }

    /** Before an {@code aastore}: nothing when the store will throw. */
    public static void lockElemStore(Object a, int i, Object v) {
        if (a != null && i >= 0 && i < java.lang.reflect.Array.getLength(a)
                && (v == null || a.getClass().getComponentType().isInstance(v))) {
            lockStripe(System.identityHashCode(a) * 31 + i);
        }
    }

    /** Number of an object as a value (null is 0). */
    public static long id(Object o) {
        return o == null ? 0 : BUF.get().idOf(o);
    }

    private static long readValue(ThreadBuffer b, int op, int kind, int loc, long x, long y,
            long v, int flags) {
        long s = b.add(op, kind, loc, x, y);
        b.ext(VALUE, v, flags);
        unlock(b);
        return s;
    }

    /** After a field read of value {@code v}: records it, unlocks; returns its register. */
    public static long readField(Object o, long v, int field, int loc, int flags) {
        ThreadBuffer b = BUF.get();
        return readValue(b, (flags & VOLATILE) != 0 ? VR : R, FIELD, loc, b.idOf(o), field, v,
                flags);
    }

    public static long readStatic(long v, int field, int loc, int flags) {
        ThreadBuffer b = BUF.get();
        return readValue(b, (flags & VOLATILE) != 0 ? VR : R, STATIC, loc, 0, field, v, flags);
    }

    public static long readElem(Object a, int i, long v, int loc, int flags) {
        ThreadBuffer b = BUF.get();
        return readValue(b, R, ELEM, loc, b.idOf(a), i, v, flags);
    }

    private static void writeValue(ThreadBuffer b, int op, int kind, int loc, long x, long y,
            long v, int template, int flags) {
        b.add(op, kind, loc, x, y);
        b.ext(VALUE, v, (template & 0xffffffffL) | ((long) flags << 32));
        b.recorded = true;
    }

    /**
     * Before a field write of {@code v} (under the lock): records it with its expression
     * (template, -1 for the value as a constant); its operands follow.
     */
    public static void writeField(Object o, long v, int field, int loc, int template,
            int flags) {
        ThreadBuffer b = BUF.get();
        if (o == null) {
            b.recorded = false;
            return;
        }
        writeValue(b, (flags & VOLATILE) != 0 ? VW : W, FIELD, loc, b.idOf(o), field, v,
                template, flags);
    }

    public static void writeStatic(long v, int field, int loc, int template, int flags) {
        ThreadBuffer b = BUF.get();
        writeValue(b, (flags & VOLATILE) != 0 ? VW : W, STATIC, loc, 0, field, v, template,
                flags);
    }

    public static void writeElem(Object a, int i, long v, int loc, int template, int flags) {
        ThreadBuffer b = BUF.get();
        if (b.stripe == 0) {
            b.recorded = false; // the store throws
            return;
        }
        if ((flags >> 8) == ValuePass.WRAP_BYTE_OR_BOOL) {
            flags = (a instanceof boolean[] ? ValuePass.WRAP_BOOL : ValuePass.WRAP_BYTE) << 8;
        }
        writeValue(b, W, ELEM, loc, b.idOf(a), i, v, template, flags);
    }

    /** A register of the latest write's or branch's expression. */
    public static void operand(long reg) {
        ThreadBuffer b = BUF.get();
        if (b.recorded) {
            b.ext(OPERAND, reg, 0);
        }
    }

    /** A branch over reads ({@code taken}: 1 if its condition held); its operands follow. */
    public static void branch(int template, int taken, int loc) {
        ThreadBuffer b = BUF.get();
        b.add(BR, 0, loc, template, taken);
        b.recorded = true;
    }

    // ---- class initialisation: a write under a per-class lock, read at first use -------

    /** Classes whose instrumented static initialiser has completed. */
    private static final java.util.Set<Class<?>> INITIALISED =
            java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** At the start of {@code c}'s static initialiser. */
    public static void clinitEnter(Class<?> c, int loc) {
        ThreadBuffer b = BUF.get();
        b.add(ACQ, INIT, loc, b.idOf(c), 0);
    }

    /** When {@code c}'s static initialiser returns: the write every user reads. */
    public static void clinitExit(Class<?> c, int loc) {
        ThreadBuffer b = BUF.get();
        long id = b.idOf(c);
        b.add(VW, INIT, loc, id, 0);
        b.add(REL, INIT, loc, id, 0);
        INITIALISED.add(c);
    }

    /** When it throws: the class is not initialised, the lock is let go. */
    public static void clinitAbort(Class<?> c, int loc) {
        ThreadBuffer b = BUF.get();
        b.add(REL, INIT, loc, b.idOf(c), 0);
    }

    /**
     * Before a use of class {@code c} that initialises it (a static field, a static method,
     * {@code new}): the first time this thread uses it, initialises it (as the use would;
     * waiting for another thread's initialisation) and reads the initialisation of it and of
     * its superclasses, so everything their initialisers did comes before.
     */
    public static void classUse(Class<?> c, int loc) {
        ThreadBuffer b = BUF.get();
        if (!b.classesSeen.add(c)) {
            return;
        }
        try {
            Class.forName(c.getName(), true, c.getClassLoader());
        } catch (Throwable t) {
            return; // the use itself throws
        }
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            if (INITIALISED.contains(k)) {
                b.add(VR, INIT, loc, b.idOf(k), 0);
            }
        }
    }

    // ---- CompletableFuture.supplyAsync/runAsync and join/get: tasks as for executors ---

    private static Object poolOf(java.util.concurrent.Executor e) {
        return e != null ? e : java.util.concurrent.ForkJoinPool.commonPool();
    }

    private static <T> java.util.function.Supplier<T> supplier(Task t) {
        return () -> {
            try {
                @SuppressWarnings("unchecked")
                T v = (T) t.call();
                return v;
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        };
    }

    private static <T> java.util.concurrent.CompletableFuture<T> submitted(Task t,
            java.util.concurrent.CompletableFuture<T> f) {
        TASK_OF.put(f, t);
        return f;
    }

    public static <T> java.util.concurrent.CompletableFuture<T> supplyAsync(
            java.util.function.Supplier<T> s, int loc) {
        Task t = new Task(poolOf(null), null, s::get, null);
        released(t, loc);
        return submitted(t, java.util.concurrent.CompletableFuture.supplyAsync(supplier(t)));
    }

    public static <T> java.util.concurrent.CompletableFuture<T> supplyAsync(
            java.util.function.Supplier<T> s, java.util.concurrent.Executor e, int loc) {
        Task t = new Task(poolOf(e), null, s::get, null);
        released(t, loc);
        return submitted(t, java.util.concurrent.CompletableFuture.supplyAsync(supplier(t), e));
    }

    public static java.util.concurrent.CompletableFuture<Void> runAsync(Runnable r, int loc) {
        Task t = new Task(poolOf(null), r, null, null);
        released(t, loc);
        return submitted(t, java.util.concurrent.CompletableFuture.runAsync(t));
    }

    public static java.util.concurrent.CompletableFuture<Void> runAsync(Runnable r,
            java.util.concurrent.Executor e, int loc) {
        Task t = new Task(poolOf(e), r, null, null);
        released(t, loc);
        return submitted(t, java.util.concurrent.CompletableFuture.runAsync(t, e));
    }

    /** {@code CompletableFuture.join} of a future made by an instrumented call above. */
    public static Object join(java.util.concurrent.CompletableFuture<?> f, int loc) {
        Object v = f.join();
        Task t = TASK_OF.get(f);
        if (t != null) {
            acquired(t.done, loc);
        }
        return v;
    }
}
