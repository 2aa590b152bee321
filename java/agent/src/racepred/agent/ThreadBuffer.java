package racepred.agent;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The events of one thread, in the order it performed them, each stamped with a number
 * from one global counter ({@link #SEQ}): the trace is the union of all buffers ordered by
 * that number. Only the owning thread appends; {@link TraceWriter} reads the buffers at exit.
 *
 * <p>An event is four {@code long}s: sequence number; operation, target kind and location
 * ({@code op | kind << 8 | loc << 32}); and two target words (object number and field
 * number, array number and index, lock or thread number). Events are kept in chunks of
 * {@link #CHUNK} events, so appending never copies.
 */
final class ThreadBuffer {
    static final AtomicLong SEQ = new AtomicLong();
    static final int CHUNK = 1 << 14;
    /** Every buffer ever created, in creation order (a lock per thread, not per event). */
    static final ArrayList<ThreadBuffer> ALL = new ArrayList<>();

    /** Number of the thread's {@link Thread} object ({@link Ids}). */
    final long thread;
    final ArrayList<long[]> full = new ArrayList<>();
    long[] cur = new long[CHUNK * 4];
    int n;
    /** Locks held and how often (re-entrant acquisitions nest; only the outer is recorded). */
    final IdentityHashMap<Object, int[]> held = new IdentityHashMap<>();

    private final Object[] cacheObj = new Object[256];
    private final long[] cacheId = new long[256];

    ThreadBuffer(Thread t) {
        this.thread = Ids.of(t);
        synchronized (ALL) {
            ALL.add(this);
        }
    }

    /** Object number through the thread's cache of recent objects. */
    long idOf(Object o) {
        int slot = System.identityHashCode(o) & 255;
        if (cacheObj[slot] == o) {
            return cacheId[slot];
        }
        long id = Ids.of(o);
        cacheObj[slot] = o;
        cacheId[slot] = id;
        return id;
    }

    void add(int op, int kind, int loc, long a, long b) {
        if (n == CHUNK) {
            full.add(cur);
            cur = new long[CHUNK * 4];
            n = 0;
        }
        int i = n * 4;
        long[] c = cur;
        c[i] = SEQ.getAndIncrement();
        c[i + 1] = (op & 0xff) | (kind & 0xff) << 8 | ((long) loc) << 32;
        c[i + 2] = a;
        c[i + 3] = b;
        n = n + 1;
    }

    /** Enters lock {@code o}: true if this is the outer acquisition. */
    boolean enter(Object o) {
        int[] d = held.get(o);
        if (d == null) {
            held.put(o, new int[] {1});
            return true;
        }
        d[0]++;
        return false;
    }

    /** Leaves lock {@code o}: true if this was the outer acquisition. */
    boolean leave(Object o) {
        int[] d = held.get(o);
        if (d == null) {
            return false;
        }
        if (--d[0] == 0) {
            held.remove(o);
            return true;
        }
        return false;
    }

    boolean holds(Object o) {
        return held.containsKey(o);
    }
}
