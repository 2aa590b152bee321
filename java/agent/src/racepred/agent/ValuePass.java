package racepred.agent;

import java.util.BitSet;
import java.util.List;
import java.util.Objects;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.FieldInsnNode;
import org.objectweb.asm.tree.IincInsnNode;
import org.objectweb.asm.tree.IntInsnNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.objectweb.asm.tree.analysis.Frame;
import org.objectweb.asm.tree.analysis.Interpreter;
import org.objectweb.asm.tree.analysis.Value;

/**
 * Value recording ({@code racepred record --values}): instruments one method's field and
 * array accesses so that each read records the value it saw and each write the value it
 * wrote as an expression over the thread's earlier reads, and records each branch whose
 * condition depends on reads, with its outcome (the value-trace format of RECIPE,
 * docs/formats.md).
 *
 * <p>A dataflow pass over the method's bytecode (ASM's {@link Analyzer} with {@link Interp})
 * gives every stack and local value either an expression over constants and the values of
 * traced reads of the same method invocation, or "opaque": a value the trace cannot express
 * (a parameter, a call's result, a field not traced, a float computation, two different
 * expressions meeting where paths join), with the reads it depends on. A write or branch
 * over an expression records the expression, its registers being the reads' registers
 * ({@code r<N>}, N the read's stamp); over an opaque value, the value as run (a constant).
 * A read whose value reaches anything the trace cannot follow — an opaque value that is
 * written or branched on, an address (a field's base object, an array or an index), a
 * call's argument, a returned or thrown value, a monitor, a divisor, a field not traced —
 * is <em>pinned</em>: a branch {@code br(r<N>==V)} right after it keeps its value in every
 * predicted run, so no prediction lets such a read see another value.
 *
 * <p>Each access is recorded atomically with the access itself (a striped spin lock of
 * {@link Rt}, taken for the access and its record only), so the values in the trace agree
 * with its order even for racy accesses.
 */
final class ValuePass {
    private ValuePass() {}

    static final String RT = "racepred/agent/Rt";
    /** Expressions larger than this many nodes become opaque. */
    private static final int MAX_NODES = 48;

    // ---- symbolic expressions -----------------------------------------------------------

    static final class Node {
        static final int CONST = 0, READ = 1, UN = 2, BIN = 3;
        final int kind;
        final long c;
        final int site;
        final String op;
        final Node a, b;
        final int nodes;
        private final int hash;

        private Node(int kind, long c, int site, String op, Node a, Node b) {
            this.kind = kind;
            this.c = c;
            this.site = site;
            this.op = op;
            this.a = a;
            this.b = b;
            this.nodes = 1 + (a == null ? 0 : a.nodes) + (b == null ? 0 : b.nodes);
            this.hash = Objects.hash(kind, c, site, op, a, b);
        }

        static Node k(long c) {
            return new Node(CONST, c, -1, null, null, null);
        }

        static Node read(int site) {
            return new Node(READ, 0, site, null, null, null);
        }

        static Node un(String op, Node a) {
            return new Node(UN, 0, -1, op, a, null);
        }

        static Node bin(String op, Node a, Node b) {
            return new Node(BIN, 0, -1, op, a, b);
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Node)) {
                return false;
            }
            Node n = (Node) o;
            return hash == n.hash && kind == n.kind && c == n.c && site == n.site
                    && Objects.equals(op, n.op) && Objects.equals(a, n.a)
                    && Objects.equals(b, n.b);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        void reads(BitSet out) {
            if (kind == READ) {
                out.set(site);
            }
            if (a != null) {
                a.reads(out);
            }
            if (b != null) {
                b.reads(out);
            }
        }

        /** Text of the expression, read sites as holes {@code $k} (k: index in holes). */
        void render(StringBuilder s, List<Integer> holes) {
            switch (kind) {
                case CONST:
                    if (c < 0) {
                        s.append('(').append(c).append(')');
                    } else {
                        s.append(c);
                    }
                    break;
                case READ: {
                    int k = holes.indexOf(site);
                    if (k < 0) {
                        k = holes.size();
                        holes.add(site);
                    }
                    s.append('$').append(k).append(' ');
                    break;
                }
                case UN:
                    s.append('(').append(op);
                    a.render(s, holes);
                    s.append(')');
                    break;
                default:
                    s.append('(');
                    a.render(s, holes);
                    s.append(op);
                    b.render(s, holes);
                    s.append(')');
            }
        }
    }

    static Node sext(Node e, int bits) {
        return Node.bin(">>", Node.bin("<<", e, Node.k(64 - bits)), Node.k(64 - bits));
    }

    /** The text that wraps a value stored to a field or element of a narrow type. */
    static final int WRAP_NONE = 0, WRAP_BYTE = 1, WRAP_SHORT = 2, WRAP_CHAR = 3,
            WRAP_BOOL = 4, WRAP_BYTE_OR_BOOL = 5;

    static String wrap(String e, int w) {
        switch (w) {
            case WRAP_BYTE: return "((" + e + "<<56)>>56)";
            case WRAP_SHORT: return "((" + e + "<<48)>>48)";
            case WRAP_CHAR: return "(" + e + "&65535)";
            case WRAP_BOOL: return "(" + e + "&1)";
            default: return e;
        }
    }

    static int wrapOf(String desc) {
        switch (desc) {
            case "B": return WRAP_BYTE;
            case "S": return WRAP_SHORT;
            case "C": return WRAP_CHAR;
            case "Z": return WRAP_BOOL;
            default: return WRAP_NONE;
        }
    }

    /**
     * An abstract value: its size, its sort ({@code I J F D A}, {@code R} a return address,
     * {@code ?} unusable), its expression ({@code null}: opaque) and the read sites it
     * depends on.
     */
    static final class Sym implements Value {
        final int size;
        final char sort;
        final Node expr;
        final BitSet deps;
        /** The uninitialised {@code this} of a constructor. */
        final boolean isThis;

        Sym(int size, char sort, Node expr, BitSet deps, boolean isThis) {
            this.size = size;
            this.sort = sort;
            this.expr = expr != null && expr.nodes > MAX_NODES ? null : expr;
            this.deps = deps;
            this.isThis = isThis;
        }

        @Override
        public int getSize() {
            return size;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Sym)) {
                return false;
            }
            Sym s = (Sym) o;
            return size == s.size && sort == s.sort && isThis == s.isThis
                    && Objects.equals(expr, s.expr) && deps.equals(s.deps);
        }

        @Override
        public int hashCode() {
            return Objects.hash(size, sort, expr, deps, isThis);
        }
    }

    private static final BitSet NONE = new BitSet();
    static final Sym UNUSABLE = new Sym(1, '?', null, NONE, false);

    static char sortOf(Type t) {
        switch (t.getSort()) {
            case Type.LONG: return 'J';
            case Type.FLOAT: return 'F';
            case Type.DOUBLE: return 'D';
            case Type.OBJECT: case Type.ARRAY: return 'A';
            default: return 'I';
        }
    }

    static Sym opaque(char sort, BitSet deps) {
        return new Sym(sort == 'J' || sort == 'D' ? 2 : 1, sort, null, deps, false);
    }

    static Sym expr(char sort, Node e) {
        BitSet d = new BitSet();
        e.reads(d);
        return new Sym(sort == 'J' || sort == 'D' ? 2 : 1, sort, e, d, false);
    }

    static BitSet union(Sym... vs) {
        BitSet d = new BitSet();
        for (Sym v : vs) {
            d.or(v.deps);
        }
        return d;
    }

    /** The dataflow of one method: which accesses are traced decides which values are reads. */
    final class Interp extends Interpreter<Sym> implements Opcodes {
        final MethodNode mn;
        final boolean ctor;
        /** Index of the constructor's call of its superclass's (or another) constructor. */
        int superCall = Integer.MAX_VALUE;
        final int knownSuper;
        final Ctx ctx;

        Interp(MethodNode mn, Ctx ctx, int knownSuper) {
            super(ASM9);
            this.mn = mn;
            this.ctx = ctx;
            this.ctor = mn.name.equals("<init>");
            this.knownSuper = knownSuper;
        }

        private int index(AbstractInsnNode n) {
            return mn.instructions.indexOf(n);
        }

        boolean active(AbstractInsnNode n) {
            return !ctor || index(n) > knownSuper;
        }

        @Override
        public Sym newValue(Type t) {
            if (t == null) {
                return UNUSABLE;
            }
            if (t.getSort() == Type.VOID) {
                return null;
            }
            return opaque(sortOf(t), NONE);
        }

        @Override
        public Sym newParameterValue(boolean instance, int local, Type t) {
            if (ctor && instance && local == 0) {
                return new Sym(1, 'A', null, NONE, true);
            }
            return newValue(t);
        }

        @Override
        public Sym newOperation(AbstractInsnNode n) {
            switch (n.getOpcode()) {
                case ACONST_NULL: return expr('A', Node.k(0));
                case ICONST_M1: case ICONST_0: case ICONST_1: case ICONST_2: case ICONST_3:
                case ICONST_4: case ICONST_5:
                    return expr('I', Node.k(n.getOpcode() - ICONST_0));
                case LCONST_0: case LCONST_1: return expr('J', Node.k(n.getOpcode() - LCONST_0));
                case FCONST_0: case FCONST_1: case FCONST_2:
                    return expr('F', Node.k(Float.floatToRawIntBits(n.getOpcode() - FCONST_0)));
                case DCONST_0: case DCONST_1:
                    return expr('D', Node.k(Double.doubleToRawLongBits(n.getOpcode() - DCONST_0)));
                case BIPUSH: case SIPUSH: return expr('I', Node.k(((IntInsnNode) n).operand));
                case LDC: {
                    Object c = ((LdcInsnNode) n).cst;
                    if (c instanceof Integer) {
                        return expr('I', Node.k((Integer) c));
                    } else if (c instanceof Long) {
                        return expr('J', Node.k((Long) c));
                    } else if (c instanceof Float) {
                        return expr('F', Node.k(Float.floatToRawIntBits((Float) c)));
                    } else if (c instanceof Double) {
                        return expr('D', Node.k(Double.doubleToRawLongBits((Double) c)));
                    } else if (c instanceof org.objectweb.asm.ConstantDynamic) {
                        return opaque(sortOf(Type.getType(
                                ((org.objectweb.asm.ConstantDynamic) c).getDescriptor())), NONE);
                    }
                    return opaque('A', NONE);
                }
                case JSR: return new Sym(1, 'R', null, NONE, false);
                case GETSTATIC: return fieldRead((FieldInsnNode) n);
                default: // NEW
                    return opaque('A', NONE);
            }
        }

        /**
         * The value a field read {@code f} pushes: the read itself where it is traced (and
         * the pass is active there), else an opaque value of the field's sort.
         */
        private Sym fieldRead(FieldInsnNode f) {
            char s = sortOf(Type.getType(f.desc));
            if (active(f) && ctx.traced(f) != null) {
                ctx.readSites.set(index(f));
                return expr(s, Node.read(index(f)));
            }
            return opaque(s, NONE);
        }

        @Override
        public Sym copyOperation(AbstractInsnNode n, Sym v) {
            return v;
        }

        private Sym un(char sort, Sym v, java.util.function.Function<Node, Node> f) {
            return v.expr == null ? opaque(sort, v.deps) : expr(sort, f.apply(v.expr));
        }

        @Override
        public Sym unaryOperation(AbstractInsnNode n, Sym v) {
            switch (n.getOpcode()) {
                case INEG: return un('I', v, e -> sext(Node.un("-", e), 32));
                case LNEG: return un('J', v, e -> Node.un("-", e));
                case IINC: {
                    int inc = ((IincInsnNode) n).incr;
                    return un('I', v, e -> sext(Node.bin("+", e, Node.k(inc)), 32));
                }
                case L2I: return un('I', v, e -> sext(e, 32));
                case I2L: return un('J', v, e -> e);
                case I2B: return un('I', v, e -> sext(e, 8));
                case I2S: return un('I', v, e -> sext(e, 16));
                case I2C: return un('I', v, e -> Node.bin("&", e, Node.k(65535)));
                case I2F: case L2F: case D2F: case FNEG: return opaque('F', v.deps);
                case I2D: case L2D: case F2D: case DNEG: return opaque('D', v.deps);
                case F2I: case D2I: return opaque('I', v.deps);
                case F2L: case D2L: return opaque('J', v.deps);
                case GETFIELD: return fieldRead((FieldInsnNode) n);
                case NEWARRAY: case ANEWARRAY: return opaque('A', NONE);
                case ARRAYLENGTH: case INSTANCEOF: return opaque('I', v.deps);
                case CHECKCAST: return v;
                default: // jumps, switches, returns, putstatic, monitors, athrow
                    return null;
            }
        }

        private Sym bin(char sort, Sym a, Sym b, java.util.function.BinaryOperator<Node> f) {
            if (a.expr == null || b.expr == null) {
                return opaque(sort, union(a, b));
            }
            return expr(sort, f.apply(a.expr, b.expr));
        }

        @Override
        public Sym binaryOperation(AbstractInsnNode n, Sym a, Sym b) {
            switch (n.getOpcode()) {
                case IADD: return bin('I', a, b, (x, y) -> sext(Node.bin("+", x, y), 32));
                case ISUB: return bin('I', a, b, (x, y) -> sext(Node.bin("-", x, y), 32));
                case IMUL: return bin('I', a, b, (x, y) -> sext(Node.bin("*", x, y), 32));
                case IDIV: return bin('I', a, b, (x, y) -> sext(Node.bin("/", x, y), 32));
                case IREM: return bin('I', a, b, (x, y) -> Node.bin("%", x, y));
                case ISHL: return bin('I', a, b, (x, y) ->
                        sext(Node.bin("<<", x, Node.bin("&", y, Node.k(31))), 32));
                case ISHR: return bin('I', a, b, (x, y) ->
                        Node.bin(">>", x, Node.bin("&", y, Node.k(31))));
                case IUSHR: return bin('I', a, b, (x, y) -> sext(Node.bin(">>",
                        Node.bin("&", x, Node.k(0xffffffffL)), Node.bin("&", y, Node.k(31))), 32));
                case IAND: case LAND: return bin(n.getOpcode() == IAND ? 'I' : 'J', a, b,
                        (x, y) -> Node.bin("&", x, y));
                // x | y spelled (x ^ y) ^ (x & y): a `|` would end the STD line's field.
                case IOR: case LOR: return bin(n.getOpcode() == IOR ? 'I' : 'J', a, b,
                        (x, y) -> Node.bin("^", Node.bin("^", x, y), Node.bin("&", x, y)));
                case IXOR: case LXOR: return bin(n.getOpcode() == IXOR ? 'I' : 'J', a, b,
                        (x, y) -> Node.bin("^", x, y));
                case LADD: return bin('J', a, b, (x, y) -> Node.bin("+", x, y));
                case LSUB: return bin('J', a, b, (x, y) -> Node.bin("-", x, y));
                case LMUL: return bin('J', a, b, (x, y) -> Node.bin("*", x, y));
                case LDIV: return bin('J', a, b, (x, y) -> Node.bin("/", x, y));
                case LREM: return bin('J', a, b, (x, y) -> Node.bin("%", x, y));
                case LSHL: return bin('J', a, b, (x, y) -> Node.bin("<<", x, y));
                case LSHR: return bin('J', a, b, (x, y) -> Node.bin(">>", x, y));
                case LUSHR: return bin('J', a, b, (x, y) -> {
                    // (x >> n) & ((1 << (63 - n) << 1) - 1), n = y & 63: a logical shift.
                    Node s = Node.bin("&", y, Node.k(63));
                    Node mask = Node.bin("-", Node.bin("<<", Node.bin("<<", Node.k(1),
                            Node.bin("-", Node.k(63), s)), Node.k(1)), Node.k(1));
                    return Node.bin("&", Node.bin(">>", x, s), mask);
                });
                case LCMP: return bin('I', a, b,
                        (x, y) -> Node.bin("-", Node.bin(">", x, y), Node.bin("<", x, y)));
                case FADD: case FSUB: case FMUL: case FDIV: case FREM:
                    return opaque('F', union(a, b));
                case DADD: case DSUB: case DMUL: case DDIV: case DREM:
                    return opaque('D', union(a, b));
                case FCMPL: case FCMPG: case DCMPL: case DCMPG:
                    return opaque('I', union(a, b));
                case IALOAD: case BALOAD: case CALOAD: case SALOAD:
                case LALOAD: case FALOAD: case DALOAD: case AALOAD: {
                    char s = elemSort(n.getOpcode());
                    if (active(n)) {
                        ctx.readSites.set(index(n));
                        return expr(s, Node.read(index(n)));
                    }
                    return opaque(s, NONE);
                }
                default: // conditional jumps, putfield
                    return null;
            }
        }

        @Override
        public Sym ternaryOperation(AbstractInsnNode n, Sym a, Sym b, Sym c) {
            return null;
        }

        @Override
        public Sym naryOperation(AbstractInsnNode n, List<? extends Sym> vs) {
            int op = n.getOpcode();
            if (op == MULTIANEWARRAY) {
                return opaque('A', NONE);
            }
            String desc = op == INVOKEDYNAMIC
                    ? ((org.objectweb.asm.tree.InvokeDynamicInsnNode) n).desc
                    : ((MethodInsnNode) n).desc;
            if (op == INVOKESPECIAL && ((MethodInsnNode) n).name.equals("<init>")
                    && !vs.isEmpty() && vs.get(0).isThis) {
                superCall = Math.min(superCall, index(n));
            }
            return newValue(Type.getReturnType(desc));
        }

        @Override
        public void returnOperation(AbstractInsnNode n, Sym v, Sym expected) {}

        @Override
        public Sym merge(Sym a, Sym b) {
            if (a.equals(b)) {
                return a;
            }
            if (a.size != b.size || a.sort != b.sort || a.sort == '?') {
                return UNUSABLE;
            }
            BitSet d = union(a, b);
            Sym m = new Sym(a.size, a.sort, null, d, false);
            return m.equals(a) ? a : m;
        }
    }

    static char elemSort(int op) {
        switch (op) {
            case Opcodes.LALOAD: case Opcodes.LASTORE: return 'J';
            case Opcodes.FALOAD: case Opcodes.FASTORE: return 'F';
            case Opcodes.DALOAD: case Opcodes.DASTORE: return 'D';
            case Opcodes.AALOAD: case Opcodes.AASTORE: return 'A';
            default: return 'I';
        }
    }

    /** What the pass knows of the method's class. */
    static final class Ctx {
        final String owner;
        final String source;
        final ClassLoader loader;
        final BitSet readSites = new BitSet();

        Ctx(String owner, String source, ClassLoader loader) {
            this.owner = owner;
            this.source = source;
            this.loader = loader;
        }

        /** The field if its accesses are traced (not final), else null. */
        Hierarchy.Field traced(FieldInsnNode f) {
            Hierarchy.Field h = Hierarchy.field(loader, f.owner, f.name);
            int access = h == null ? 0 : h.access;
            if ((access & Opcodes.ACC_FINAL) != 0) {
                return null;
            }
            return h != null ? h : new Hierarchy.Field(f.owner, 0);
        }
    }

    // ---- the rewrite ---------------------------------------------------------------------

    /**
     * Instruments {@code mn}'s field and array accesses and branches with values; false (and
     * {@code mn} untouched) when the method cannot be analysed, in which case the caller
     * instruments its accesses without values.
     */
    static boolean rewrite(MethodNode mn, String owner, String source, ClassLoader loader) {
        if (mn.name.equals("<clinit>") || mn.instructions.size() == 0) {
            return false;
        }
        ValuePass outer = new ValuePass();
        Ctx ctx = new Ctx(owner, source, loader);
        Frame<Sym>[] frames;
        int superCall = -1;
        try {
            if (mn.name.equals("<init>")) {
                Interp first = outer.new Interp(mn, new Ctx(owner, source, loader),
                        Integer.MAX_VALUE);
                new Analyzer<>(first).analyze(owner, mn);
                if (first.superCall == Integer.MAX_VALUE) {
                    return false;
                }
                superCall = first.superCall;
            }
            Interp in = outer.new Interp(mn, ctx, superCall);
            frames = new Analyzer<>(in).analyze(owner, mn);
        } catch (AnalyzerException | RuntimeException e) {
            return false;
        }
        new ValueRewrite(mn, ctx, frames, superCall).run();
        return true;
    }
}
