package racepred.agent;

import java.io.BufferedOutputStream;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.PriorityQueue;

/**
 * Writes the trace at exit: the events of every {@link ThreadBuffer} merged by sequence
 * number, as racepred's binary format ({@code .rpb}, docs/formats.md) or STD text (a name
 * ending in {@code .std}), and the location table {@code TRACE.locs} ({@code id<TAB>File.java:line},
 * each followed by a comment line naming the method).
 *
 * <p>Names: threads {@code T0} (the main thread), {@code T1}, … in order of appearance;
 * instance fields {@code pkg.Class.field@N} ({@code N} the object's number), static fields
 * {@code pkg.Class.field}, array elements {@code int[]@N[i]}, locks {@code Class@N} (the
 * monitor's or {@code Lock}'s class); locations are the agent's location numbers. A thread
 * whose start the agent did not see gets a fork by the main thread at the start of the
 * trace; a join of a thread that never appears is left out.
 */
final class TraceWriter {
    private TraceWriter() {}

    static void writeAtExit(String path) {
        long t0 = System.nanoTime();
        try {
            File out = new File(path).getAbsoluteFile();
            long[] counts = write(out);
            double s = (System.nanoTime() - t0) / 1e9;
            System.err.printf("racepred: recorded %d events of %d threads (%d variables, %d locks) in %s (%.2f s to write)%n",
                    counts[0], counts[1], counts[2], counts[3], out, s);
        } catch (Throwable e) {
            System.err.println("racepred: cannot write the trace to " + path + ": " + e);
        }
    }

    /** One thread's events, read in order: its spilled chunks, then its current one. */
    private static final class Cursor {
        final ThreadBuffer b;
        final int spilled;
        final long[] last;
        final int lastN;
        final long thread;
        private final ByteBuffer buf;
        int chunk;
        int i;
        long[] c;
        /** Sequence number of the current event. */
        long seq;
        /** The thread's id in the trace, once it has one. */
        int tid = -1;

        Cursor(ThreadBuffer b) throws IOException {
            this.b = b;
            thread = b.thread;
            spilled = b.spilled;
            last = b.cur;
            lastN = b.n;
            buf = spilled > 0
                    ? ByteBuffer.allocateDirect(ThreadBuffer.CHUNK * 32).order(ByteOrder.nativeOrder())
                    : null;
            c = load(0);
            seq = done() ? 0 : c[0];
        }

        private long[] load(int k) throws IOException {
            return k < spilled ? b.readChunk(k, buf) : last;
        }

        boolean done() {
            return chunk == spilled ? i >= lastN : chunk > spilled;
        }

        long word(int k) {
            return c[i * 4 + k];
        }

        /** Stamp of the event {@link Merge#emit} is writing (its registers' name). */
        long seq0;

        void advance() throws IOException {
            if (++i == ThreadBuffer.CHUNK && chunk < spilled) {
                chunk++;
                c = load(chunk);
                i = 0;
            }
            if (!done()) {
                seq = c[i * 4];
            }
        }
    }

    /** Dense ids per name table, and the name records still to write. */
    private static final class Names {
        final HashMap<Object, Integer>[] ids;
        final ArrayList<Integer> pendingKind = new ArrayList<>();
        final ArrayList<String> pendingName = new ArrayList<>();

        @SuppressWarnings("unchecked")
        Names() {
            ids = new HashMap[4];
            for (int k = 0; k < 4; k++) {
                ids[k] = new HashMap<>();
            }
        }

        /** Table codes as in the binary format: threads, variables, locks, locations. */
        int id(int table, Object key, String name) {
            Integer id = ids[table].get(key);
            if (id == null) {
                id = ids[table].size();
                ids[table].put(key, id);
                pendingKind.add(table);
                pendingName.add(name);
            }
            return id;
        }
    }

    private interface Sink {
        /** Writes the record of a new name {@code name} of table {@code table}. */
        void name(int table, String name) throws IOException;

        /** Writes the records of the names {@code n} has given ids since the last call. */
        default void names(Names n) throws IOException {
            for (int i = 0; i < n.pendingKind.size(); i++) {
                name(n.pendingKind.get(i), n.pendingName.get(i));
            }
            n.pendingKind.clear();
            n.pendingName.clear();
        }

        /**
         * An event; {@code text} (with {@code line}, its STD line) is its operation with
         * its value part when it has one (docs/formats.md, value-level extension), else null.
         */
        void event(int thread, int op, int target, int loc, Names n, String text, String line)
                throws IOException;

        void finish(long events) throws IOException;
    }

    private static int threadId(Names names, long thread) {
        Integer id = names.ids[0].get(thread);
        return id != null ? id : names.id(0, thread, "T" + names.ids[0].size());
    }

    static String className(long id) {
        String c = Ids.CLASS_OF.get(id);
        if (c == null) {
            return "Object";
        }
        if (c.endsWith(".class")) {
            String base = c.substring(0, c.length() - 6);
            return base.substring(base.lastIndexOf('.') + 1) + ".class";
        }
        int dims = 0;
        while (dims < c.length() && c.charAt(dims) == '[') {
            dims++;
        }
        if (dims > 0) {
            String e = c.substring(dims);
            switch (e) {
                case "I": e = "int"; break;
                case "J": e = "long"; break;
                case "Z": e = "boolean"; break;
                case "B": e = "byte"; break;
                case "C": e = "char"; break;
                case "S": e = "short"; break;
                case "F": e = "float"; break;
                case "D": e = "double"; break;
                default: e = e.substring(1, e.length() - 1);
            }
            c = e + "[]".repeat(dims);
        }
        return c.substring(c.lastIndexOf('.') + 1);
    }

    private static String targetName(int kind, long a, long b) {
        switch (kind) {
            case Rt.FIELD: return Registry.fieldName((int) b) + "@" + a;
            case Rt.STATIC: return Registry.fieldName((int) b);
            case Rt.ELEM: return className(a) + "@" + a + "[" + b + "]";
            case Rt.SYNC: return className(a) + "@" + a
                    + (b > 0 ? ".from@" + ((b & ~Rt.ODD) - 1) : "")
                    + ((b & Rt.ODD) != 0 ? ".odd" : "");
            case Rt.INIT: return className(a) + "@" + a + ".init";
            default: return className(a) + "@" + a;
        }
    }

    /** Writes the trace to {@code out} (through a temporary file); returns counts. */
    /** Turns the agent's events into the trace's, naming what each first mentions. */
    private static final class Merge {
        final Names names = new Names();
        final PairTable vars = new PairTable();
        final HashSet<Long> started = new HashSet<>();
        final HashSet<Integer> locsUsed = new HashSet<>();
        int[] locIds = new int[1024]; // agent location → dense id + 1
        final Sink sink;
        long events;

        Merge(Sink sink, long root) {
            this.sink = sink;
            names.id(0, root, "T0");
            started.add(root);
        }

        /** Operand registers of the current value event. */
        private long[] operands = new long[8];

        /**
         * Writes the current event of {@code c} and moves past it and the records of its
         * value (a separate method: the JIT compiles it early).
         */
        void emit(Cursor c) throws IOException {
            long w = c.word(1);
            int op0 = (int) (w & 0xff);
            c.seq0 = c.seq;
            if (op0 >= Rt.VALUE) {
                c.advance(); // a value record whose event was not kept
                return;
            }
            long ea0 = c.word(2);
            long eb0 = c.word(3);
            boolean hasValue = false;
            long value = 0;
            long vflags = 0;
            int nops = 0;
            c.advance();
            while (!c.done() && (int) (c.word(1) & 0xff) >= Rt.VALUE) {
                if ((int) (c.word(1) & 0xff) == Rt.VALUE) {
                    hasValue = true;
                    value = c.word(2);
                    vflags = c.word(3);
                } else {
                    if (nops == operands.length) {
                        operands = java.util.Arrays.copyOf(operands, nops * 2);
                    }
                    operands[nops++] = c.word(2);
                }
                c.advance();
            }
            emitEvent(c, w, ea0, eb0, hasValue, value, vflags, nops);
        }

        private String render(int template, int nops) {
            String t = Registry.templateText(template);
            StringBuilder s = new StringBuilder(t.length() + 8 * nops);
            for (int i = 0; i < t.length(); i++) {
                char ch = t.charAt(i);
                if (ch != '$') {
                    s.append(ch);
                    continue;
                }
                int k = 0;
                for (i++; t.charAt(i) != ' '; i++) {
                    k = k * 10 + (t.charAt(i) - '0');
                }
                s.append('r').append(k < nops ? operands[k] : -1);
            }
            return s.toString();
        }

        private static String constant(long v) {
            return v < 0 ? "(" + v + ")" : Long.toString(v);
        }

        private void emitEvent(Cursor c, long w, long ea, long eb, boolean hasValue,
                long value, long vflags, int nops) throws IOException {
            int op = (int) (w & 0xff);
            int kind = (int) (w >>> 8 & 0xff);
            int loc = (int) (w >>> 32);
            if (c.tid < 0) {
                if (started.add(c.thread)) {
                    sink.event(0, Rt.FORK, threadId(names, c.thread), -1, names, null, null);
                    events++;
                }
                c.tid = threadId(names, c.thread);
            }
            int target;
            if (op == Rt.BR) {
                String cond = render((int) ea, nops);
                String text = eb != 0 ? "br(" + cond + ")" : "br(!(" + cond + "))";
                sink.event(c.tid, op, -1, locId(loc), names, text, line(c.tid, text, loc));
                events++;
                return;
            }
            if (kind == Rt.THREAD) {
                if (op == Rt.FORK) {
                    if (!started.add(ea)) {
                        return;
                    }
                } else if (!started.contains(ea)) {
                    return; // join of a thread that never appeared
                }
                target = threadId(names, ea);
            } else if (kind == Rt.LOCK) {
                target = names.id(2, ea, targetName(kind, ea, eb));
            } else if (kind == Rt.INIT && (op == Rt.ACQ || op == Rt.REL)) {
                // Keyed apart from the monitor of the same Class object.
                target = names.id(2, -ea, targetName(kind, ea, eb));
            } else {
                target = vars.idOrAdd(kind, ea, eb);
                if (target < 0) {
                    target = -target - 1;
                    names.pendingKind.add(1);
                    names.pendingName.add(targetName(kind, ea, eb));
                }
            }
            int l = locId(loc);
            if (!hasValue) {
                sink.event(c.tid, op, target, l, names, null, null);
                events++;
                return;
            }
            String name = targetName(kind, ea, eb);
            String text;
            if (op == Rt.R || op == Rt.VR) {
                text = OPS[op] + "(" + name + ")->r" + c.seq0 + "=" + value;
            } else {
                int tpl = (int) vflags;
                int wrap = (int) (vflags >>> 40) & 0xff;
                String e = tpl < 0 ? constant(value) : render(tpl, nops);
                text = OPS[op] + "(" + name + ")=" + ValuePass.wrap(e, wrap);
            }
            sink.event(c.tid, op, target, l, names, text, line(c.tid, text, loc));
            events++;
            if ((op == Rt.R || op == Rt.VR) && (vflags & Rt.PIN) != 0) {
                // A pinned read: a branch keeps its value in every predicted run.
                String br = "br(r" + c.seq0 + "==" + constant(value) + ")";
                sink.event(c.tid, Rt.BR, -1, l, names, br, line(c.tid, br, loc));
                events++;
            }
        }

        private static String line(int tid, String text, int loc) {
            return "T" + tid + "|" + text + "|" + (loc < 0 ? "-" : Integer.toString(loc));
        }

        private int locId(int loc) {
            int l = -1;
            if (loc >= 0) {
                if (loc >= locIds.length) {
                    locIds = java.util.Arrays.copyOf(locIds, Math.max(loc + 1, locIds.length * 2));
                }
                l = locIds[loc] - 1;
                if (l < 0) {
                    l = names.id(3, loc, Integer.toString(loc));
                    locIds[loc] = l + 1;
                    locsUsed.add(loc);
                }
            }
            return l;
        }
    }

    /** Writes the trace to {@code out} (through a temporary file); returns counts. */
    static long[] write(File out) throws IOException {
        ArrayList<ThreadBuffer> all;
        synchronized (ThreadBuffer.ALL) {
            all = new ArrayList<>(ThreadBuffer.ALL);
        }
        File tmp = new File(out.getParentFile(), "." + out.getName() + ".tmp");
        boolean std = out.getName().endsWith(".std");
        long root = all.isEmpty() ? -1 : all.get(0).thread;
        Merge m;
        try (OutputStream os = new BufferedOutputStream(new FileOutputStream(tmp), 1 << 16)) {
            m = new Merge(std ? new StdSink(os) : new BinarySink(os), root);
            PriorityQueue<Cursor> q = new PriorityQueue<>((x, y) -> Long.compare(x.seq, y.seq));
            for (ThreadBuffer b : all) {
                Cursor c = new Cursor(b);
                if (!c.done()) {
                    q.add(c);
                    // A thread whose start was not seen is forked first thing, so that the
                    // fork orders none of the main thread's events before it.
                    if (b.thread != root && !Rt.FORKED.contains(b.thread)) {
                        m.started.add(b.thread);
                        m.sink.event(0, Rt.FORK, threadId(m.names, b.thread), -1, m.names, null, null);
                        m.events++;
                    }
                }
            }
            while (!q.isEmpty()) {
                Cursor c = q.poll();
                Cursor next = q.peek();
                long limit = next == null ? Long.MAX_VALUE : next.seq;
                // A run of events of one thread goes without touching the queue.
                do {
                    m.emit(c);
                } while (!c.done() && c.seq < limit);
                if (!c.done()) {
                    q.add(c);
                }
            }
            m.sink.finish(m.events);
        }
        Files.move(tmp.toPath(), out.toPath(), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        for (ThreadBuffer b : all) {
            if (b.spillFile != null) {
                b.spillFile.delete();
            }
        }
        writeLocations(new File(out.getPath() + ".locs"), m.locsUsed);
        return new long[] {m.events, m.names.ids[0].size(), m.vars.size(), m.names.ids[2].size()};
    }

    private static void writeLocations(File f, HashSet<Integer> used) throws IOException {
        ArrayList<Integer> ids = new ArrayList<>(used);
        ids.sort(null);
        try (Writer w = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(f),
                StandardCharsets.UTF_8))) {
            w.write("# racepred Java recorder: location<TAB>File.java:line, then the method\n");
            for (int id : ids) {
                String text = Registry.locText(id);
                if (text == null) {
                    continue;
                }
                w.write(id + "\t" + text + "\n");
                w.write("#\t" + Registry.locMethod(id) + "\n");
            }
        }
    }

    private static final String[] OPS = {"r", "w", "acq", "rel", "fork", "join", "vr", "vw",
        "sig", "wait", "mbegin", "mend", "begin", "end", "let", "br"};

    private static final class StdSink implements Sink {
        private final Writer w;
        private final ArrayList<String>[] byId;

        @SuppressWarnings("unchecked")
        StdSink(OutputStream os) {
            w = new OutputStreamWriter(os, StandardCharsets.UTF_8);
            byId = new ArrayList[4];
            for (int k = 0; k < 4; k++) {
                byId[k] = new ArrayList<>();
            }
        }

        @Override
        public void name(int table, String name) {
            byId[table].add(name);
        }

        @Override
        public void event(int thread, int op, int target, int loc, Names n, String text,
                String line) throws IOException {
            names(n);
            if (text != null) {
                w.write(byId[0].get(thread));
                w.write('|');
                w.write(text);
                w.write('|');
                w.write(loc < 0 ? "-" : byId[3].get(loc));
                w.write('\n');
                return;
            }
            int table = op == Rt.FORK || op == Rt.JOIN ? 0
                    : op == Rt.ACQ || op == Rt.REL ? 2 : 1;
            w.write(byId[0].get(thread));
            w.write('|');
            w.write(OPS[op]);
            w.write('(');
            w.write(byId[table].get(target));
            w.write(")|");
            w.write(loc < 0 ? "-" : byId[3].get(loc));
            w.write('\n');
        }

        @Override
        public void finish(long events) throws IOException {
            w.flush();
        }
    }

    /** docs/formats.md, "Binary": header, name records, blocks of 16-byte events, end. */
    private static final class BinarySink implements Sink {
        private static final int BLOCK = 4096;
        private final OutputStream os;
        private final ByteBuffer block = ByteBuffer.allocate(BLOCK * 16).order(ByteOrder.LITTLE_ENDIAN);
        private final ByteBuffer small = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        private int count;
        /** Events written, and the values-record lines of the current block. */
        private long index;
        private final StringBuilder values = new StringBuilder();

        BinarySink(OutputStream os) throws IOException {
            this.os = os;
            small.clear();
            small.put("RACEPRED".getBytes(StandardCharsets.US_ASCII));
            small.putShort((short) 1).putShort((short) 0).putInt(0);
            os.write(small.array(), 0, 16);
        }

        private void flushBlock() throws IOException {
            if (count == 0) {
                return;
            }
            small.clear();
            small.put((byte) 'E').put((byte) 0).putShort((short) 0).putInt(count).putInt(0);
            os.write(small.array(), 0, 12);
            os.write(block.array(), 0, count * 16);
            block.clear();
            count = 0;
            if (values.length() > 0) {
                // The values of the events written so far (their indices in the trace).
                byte[] b = values.toString().getBytes(StandardCharsets.UTF_8);
                small.clear();
                small.put((byte) 'V').put((byte) 0).putShort((short) 0).putInt(b.length);
                os.write(small.array(), 0, 8);
                os.write(b);
                values.setLength(0);
            }
        }

        @Override
        public void names(Names n) throws IOException {
            if (n.pendingKind.isEmpty()) {
                return;
            }
            // A name record must come before the block of the first event that uses it.
            flushBlock();
            Sink.super.names(n);
        }

        @Override
        public void name(int table, String name) throws IOException {
            byte[] b = name.getBytes(StandardCharsets.UTF_8);
            small.clear();
            small.put((byte) 'N').put((byte) table).putInt(b.length);
            os.write(small.array(), 0, 6);
            os.write(b);
        }

        @Override
        public void event(int thread, int op, int target, int loc, Names n, String text,
                String line) throws IOException {
            names(n);
            if (line != null) {
                values.append(index).append(' ').append(line).append('\n');
            }
            index++;
            block.putInt(thread).putInt(target).putInt(loc).put((byte) op).put((byte) 0)
                    .putShort((short) 0);
            if (++count == BLOCK) {
                flushBlock();
            }
        }

        @Override
        public void finish(long events) throws IOException {
            flushBlock();
            small.clear();
            small.put((byte) 'Z');
            for (int i = 0; i < 7; i++) {
                small.put((byte) 0);
            }
            small.putLong(events);
            os.write(small.array(), 0, 16);
        }
    }
}
