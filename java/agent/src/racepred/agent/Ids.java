package racepred.agent;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Identity of objects: a number per object, never reused, that does not keep the object
 * alive. Variables of instance fields and array elements, locks and threads are named by it.
 *
 * <p>A weak identity table split into {@link #STRIPES} stripes by identity hash code, each
 * with its own lock (so there is no global lock per access), and a small per-thread cache
 * of the last objects looked up (see {@link ThreadBuffer#idOf}).
 */
final class Ids {
    private Ids() {}

    private static final int STRIPES = 64;
    private static final Stripe[] TABLE = new Stripe[STRIPES];
    private static final AtomicLong NEXT = new AtomicLong(1);
    /** Class name of each object numbered (for the names of locks and variables). */
    static final ConcurrentHashMap<Long, String> CLASS_OF = new ConcurrentHashMap<>();

    static {
        for (int i = 0; i < STRIPES; i++) {
            TABLE[i] = new Stripe();
        }
    }

    private static final class Entry extends WeakReference<Object> {
        final int hash;
        final long id;
        Entry next;

        Entry(Object o, int hash, long id, ReferenceQueue<Object> q, Entry next) {
            super(o, q);
            this.hash = hash;
            this.id = id;
            this.next = next;
        }
    }

    private static final class Stripe {
        Entry[] buckets = new Entry[64];
        int size;
        final ReferenceQueue<Object> queue = new ReferenceQueue<>();

        synchronized long idOf(Object o, int h) {
            expunge();
            int i = (h >>> 6) & (buckets.length - 1);
            for (Entry e = buckets[i]; e != null; e = e.next) {
                if (e.hash == h && e.get() == o) {
                    return e.id;
                }
            }
            long id = NEXT.getAndIncrement();
            buckets[i] = new Entry(o, h, id, queue, buckets[i]);
            if (++size > buckets.length * 2) {
                grow();
            }
            CLASS_OF.put(id, o instanceof Class
                    ? ((Class<?>) o).getName() + ".class"
                    : o.getClass().getName());
            return id;
        }

        private void grow() {
            Entry[] old = buckets;
            buckets = new Entry[old.length * 2];
            for (Entry head : old) {
                for (Entry e = head; e != null; ) {
                    Entry n = e.next;
                    int i = (e.hash >>> 6) & (buckets.length - 1);
                    e.next = buckets[i];
                    buckets[i] = e;
                    e = n;
                }
            }
        }

        private void expunge() {
            for (Object r; (r = queue.poll()) != null; ) {
                Entry dead = (Entry) r;
                int i = (dead.hash >>> 6) & (buckets.length - 1);
                Entry prev = null;
                for (Entry e = buckets[i]; e != null; prev = e, e = e.next) {
                    if (e == dead) {
                        if (prev == null) {
                            buckets[i] = e.next;
                        } else {
                            prev.next = e.next;
                        }
                        size--;
                        break;
                    }
                }
            }
        }
    }

    /** The number of {@code o} (not null). */
    static long of(Object o) {
        int h = System.identityHashCode(o);
        return TABLE[h & (STRIPES - 1)].idOf(o, h);
    }
}
