package racepred.agent;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
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
 * number, array number and index, lock or thread number). Events are kept in a chunk of
 * {@link #CHUNK} events; a full chunk is written to a file of the thread's own (in
 * {@link #SPILL_DIR}, deleted at exit), so memory does not grow with the run.
 */
final class ThreadBuffer {
    static final AtomicLong SEQ = new AtomicLong();
    static final int CHUNK = 1 << 14;
    /** Every buffer ever created, in creation order (a lock per thread, not per event). */
    static final ArrayList<ThreadBuffer> ALL = new ArrayList<>();
    /** Where full chunks go: {@code $RACEPRED_SPILL_DIR}, else the JVM's temporary directory. */
    static final File SPILL_DIR = new File(System.getenv("RACEPRED_SPILL_DIR") != null
            ? System.getenv("RACEPRED_SPILL_DIR") : System.getProperty("java.io.tmpdir"));

    /** Number of the thread's {@link Thread} object ({@link Ids}). */
    final long thread;
    /** Full chunks go to this file (created at the first), so memory stays one chunk. */
    File spillFile;
    /** Chunks written to {@link #spillFile} (each whole before the count grows). */
    volatile int spilled;
    private final ByteBuffer bytes = ByteBuffer.allocateDirect(CHUNK * 32)
            .order(ByteOrder.nativeOrder());
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

    /** Appends an event; returns its stamp. */
    long add(int op, int kind, int loc, long a, long b) {
        long s = SEQ.getAndIncrement();
        put(s, op, kind, loc, a, b);
        return s;
    }

    /** Stamp of the latest event (what the records of its values carry). */
    long last;

    private void put(long s, int op, int kind, int loc, long a, long b) {
        if (n == CHUNK) {
            spill();
        }
        int i = n * 4;
        long[] c = cur;
        c[i] = s;
        c[i + 1] = (op & 0xff) | (kind & 0xff) << 8 | ((long) loc) << 32;
        c[i + 2] = a;
        c[i + 3] = b;
        n = n + 1;
        last = s;
    }

    /**
     * Appends a record that belongs to the latest event (its value, an operand of its
     * expression): not an event, it carries that event's stamp.
     */
    void ext(int op, long a, long b) {
        put(last, op, 0, 0, a, b);
    }

    /** Classes this thread has used (after their initialisation: {@link Rt#classUse}). */
    final java.util.HashSet<Class<?>> classesSeen = new java.util.HashSet<>();
    /** With values: the stripe of {@link Rt}'s access locks held (+1), 0 if none. */
    int stripe;
    /** With values: whether the latest write was recorded (its operands follow it). */
    boolean recorded;

    private void spill() {
        try {
            if (spillFile == null) {
                spillFile = File.createTempFile("racepred-" + thread + "-", ".events", SPILL_DIR);
                spillFile.deleteOnExit();
            }
            bytes.clear();
            bytes.asLongBuffer().put(cur);
            bytes.limit(CHUNK * 32);
            // Opened per chunk: a thread that ends holds no file open.
            try (FileChannel ch = FileChannel.open(spillFile.toPath(), StandardOpenOption.WRITE,
                    StandardOpenOption.APPEND)) {
                while (bytes.hasRemaining()) {
                    ch.write(bytes);
                }
            }
            spilled = spilled + 1;
            n = 0;
        } catch (IOException e) {
            throw new UncheckedIOException("racepred: cannot write " + spillFile, e);
        }
    }

    /** Chunk {@code i} of the spilled ones, read back by {@link TraceWriter}. */
    long[] readChunk(int i, ByteBuffer buf) throws IOException {
        try (FileChannel ch = FileChannel.open(spillFile.toPath(), StandardOpenOption.READ)) {
            buf.clear();
            long at = (long) i * CHUNK * 32;
            while (buf.hasRemaining()) {
                if (ch.read(buf, at + buf.position()) < 0) {
                    throw new IOException(spillFile + ": short");
                }
            }
            buf.flip();
            long[] c = new long[CHUNK * 4];
            buf.asLongBuffer().get(c);
            return c;
        }
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
