package racepred.agent;

import static racepred.agent.ValuePass.*;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.FieldInsnNode;
import org.objectweb.asm.tree.InsnList;
import org.objectweb.asm.tree.InsnNode;
import org.objectweb.asm.tree.JumpInsnNode;
import org.objectweb.asm.tree.LabelNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.LineNumberNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.VarInsnNode;
import org.objectweb.asm.tree.analysis.Frame;

/**
 * The rewrite of one method by {@link ValuePass}: from the dataflow's frames, the pins
 * (reads whose value every predicted run keeps) and the expression templates of writes and
 * branches, then the instrumentation of each field and array access and each branch over
 * reads (docs/recording.md, "Values for RECIPE").
 */
final class ValueRewrite implements Opcodes {
    final MethodNode mn;
    final Ctx ctx;
    final Frame<Sym>[] frames;
    final AbstractInsnNode[] insns;
    final int superCall;
    final BitSet pinned = new BitSet();
    final BitSet holes = new BitSet();
    /** Per instruction: the template of its write or branch and its holes. */
    final HashMap<Integer, Object[]> templates = new HashMap<>();
    final int[] lines;
    int stampBase;
    int tObj, tIdx, tI, tJ, tF, tD, tA;

    ValueRewrite(MethodNode mn, Ctx ctx, Frame<Sym>[] frames, int superCall) {
        this.mn = mn;
        this.ctx = ctx;
        this.frames = frames;
        this.insns = mn.instructions.toArray();
        this.superCall = superCall;
        lines = new int[insns.length];
        int line = 0;
        for (int i = 0; i < insns.length; i++) {
            if (insns[i] instanceof LineNumberNode) {
                line = ((LineNumberNode) insns[i]).line;
            }
            lines[i] = line;
        }
    }

    boolean active(int i) {
        return i > superCall;
    }

    Sym stack(int i, int fromTop) {
        Frame<Sym> f = frames[i];
        return f.getStack(f.getStackSize() - 1 - fromTop);
    }

    void pin(Sym v) {
        pinned.or(v.deps);
    }

    /** A template for a write of {@code v}: {text, hole sites} or null (a constant). */
    Object[] template(Sym v) {
        if (v.expr == null) {
            pin(v);
            return null;
        }
        if (v.deps.isEmpty()) {
            return null;
        }
        ArrayList<Integer> hs = new ArrayList<>();
        StringBuilder s = new StringBuilder();
        v.expr.render(s, hs);
        for (int h : hs) {
            holes.set(h);
        }
        return new Object[] {s.toString(), hs};
    }

    Object[] condition(int op, Sym a, Sym b) {
        if (a.expr == null || (b != null && b.expr == null)) {
            pin(a);
            if (b != null) {
                pin(b);
            }
            return null;
        }
        Node x = a.expr;
        Node y = b == null ? Node.k(0) : b.expr;
        String rel;
        switch (op) {
            case IFEQ: case IF_ICMPEQ: case IF_ACMPEQ: case IFNULL: rel = "=="; break;
            case IFNE: case IF_ICMPNE: case IF_ACMPNE: case IFNONNULL: rel = "!="; break;
            case IFLT: case IF_ICMPLT: rel = "<"; break;
            case IFGE: case IF_ICMPGE: rel = ">="; break;
            case IFGT: case IF_ICMPGT: rel = ">"; break;
            default: rel = "<="; break;
        }
        return template(expr('I', Node.bin(rel, x, y)));
    }

    /** The uses of every value: pins and templates. */
    void scan() {
        for (int i = 0; i < insns.length; i++) {
            AbstractInsnNode n = insns[i];
            if (frames[i] == null || n.getOpcode() < 0) {
                continue;
            }
            int op = n.getOpcode();
            switch (op) {
                case GETFIELD:
                    pin(stack(i, 0));
                    break;
                case PUTFIELD: {
                    Sym v = stack(i, 0);
                    Sym base = stack(i, 1);
                    pin(base);
                    if (writeTraced(i)) {
                        templates.put(i, new Object[] {template(v)});
                    } else {
                        pin(v);
                    }
                    break;
                }
                case PUTSTATIC:
                    if (writeTraced(i)) {
                        templates.put(i, new Object[] {template(stack(i, 0))});
                    } else {
                        pin(stack(i, 0));
                    }
                    break;
                case IALOAD: case BALOAD: case CALOAD: case SALOAD:
                case LALOAD: case FALOAD: case DALOAD: case AALOAD:
                    pin(stack(i, 0));
                    pin(stack(i, 1));
                    break;
                case IASTORE: case BASTORE: case CASTORE: case SASTORE:
                case LASTORE: case FASTORE: case DASTORE: case AASTORE:
                    pin(stack(i, 1));
                    pin(stack(i, 2));
                    if (active(i)) {
                        templates.put(i, new Object[] {template(stack(i, 0))});
                    } else {
                        pin(stack(i, 0));
                    }
                    break;
                case IFEQ: case IFNE: case IFLT: case IFGE: case IFGT: case IFLE:
                case IFNULL: case IFNONNULL:
                    if (active(i)) {
                        templates.put(i, new Object[] {condition(op, stack(i, 0), null)});
                    } else {
                        pin(stack(i, 0));
                    }
                    break;
                case IF_ICMPEQ: case IF_ICMPNE: case IF_ICMPLT: case IF_ICMPGE:
                case IF_ICMPGT: case IF_ICMPLE: case IF_ACMPEQ: case IF_ACMPNE:
                    if (active(i)) {
                        templates.put(i, new Object[] {
                            condition(op, stack(i, 1), stack(i, 0))});
                    } else {
                        pin(stack(i, 0));
                        pin(stack(i, 1));
                    }
                    break;
                case IDIV: case IREM: case LDIV: case LREM:
                    pin(stack(i, 0));
                    break;
                case INVOKEVIRTUAL: case INVOKESPECIAL: case INVOKESTATIC:
                case INVOKEINTERFACE: case INVOKEDYNAMIC: case MULTIANEWARRAY: {
                    int args = argCount(n);
                    for (int k = 0; k < args; k++) {
                        pin(stack(i, k));
                    }
                    break;
                }
                case TABLESWITCH: case LOOKUPSWITCH: case IRETURN: case LRETURN:
                case FRETURN: case DRETURN: case ARETURN: case ATHROW: case MONITORENTER:
                case MONITOREXIT: case CHECKCAST: case ARRAYLENGTH: case NEWARRAY:
                case ANEWARRAY:
                    pin(stack(i, 0));
                    break;
                default:
            }
        }
        // A template's registers must not be pinned away: pins only add branches.
    }

    int argCount(AbstractInsnNode n) {
        if (n.getOpcode() == MULTIANEWARRAY) {
            return ((org.objectweb.asm.tree.MultiANewArrayInsnNode) n).dims;
        }
        String desc = n.getOpcode() == INVOKEDYNAMIC
                ? ((org.objectweb.asm.tree.InvokeDynamicInsnNode) n).desc
                : ((MethodInsnNode) n).desc;
        int k = Type.getArgumentTypes(desc).length;
        return n.getOpcode() == INVOKESTATIC || n.getOpcode() == INVOKEDYNAMIC ? k : k + 1;
    }

    boolean writeTraced(int i) {
        if (!active(i)) {
            return false;
        }
        return ctx.traced((FieldInsnNode) insns[i]) != null;
    }

    int newLocal(int size) {
        int l = mn.maxLocals;
        mn.maxLocals += size;
        return l;
    }

    int loc(int i) {
        return Registry.loc(ctx.owner, ctx.source, lines[i], mn.name);
    }

    void run() {
        scan();
        tObj = newLocal(1);
        tIdx = newLocal(1);
        tI = newLocal(1);
        tJ = newLocal(2);
        tF = newLocal(1);
        tD = newLocal(2);
        tA = newLocal(1);
        HashMap<Integer, Integer> stamp = new HashMap<>();
        InsnList init = new InsnList();
        for (int s = holes.nextSetBit(0); s >= 0; s = holes.nextSetBit(s + 1)) {
            int l = newLocal(2);
            stamp.put(s, l);
            init.add(new InsnNode(LCONST_0));
            init.add(new VarInsnNode(LSTORE, l));
        }
        LabelNode end = null;
        InsnList stubs = new InsnList();
        for (int i = 0; i < insns.length; i++) {
            AbstractInsnNode n = insns[i];
            if (frames[i] == null || !active(i)) {
                continue;
            }
            int op = n.getOpcode();
            switch (op) {
                case GETFIELD: case GETSTATIC:
                    if (ctx.readSites.get(i)) {
                        fieldRead(i, (FieldInsnNode) n, stamp.get(i));
                    }
                    break;
                case PUTFIELD: case PUTSTATIC:
                    if (templates.containsKey(i)) {
                        fieldWrite(i, (FieldInsnNode) n, stamp);
                    }
                    break;
                case IALOAD: case BALOAD: case CALOAD: case SALOAD:
                case LALOAD: case FALOAD: case DALOAD: case AALOAD:
                    if (ctx.readSites.get(i)) {
                        elemRead(i, n, stamp.get(i));
                    }
                    break;
                case IASTORE: case BASTORE: case CASTORE: case SASTORE:
                case LASTORE: case FASTORE: case DASTORE: case AASTORE:
                    elemWrite(i, n, stamp);
                    break;
                default:
                    if (n instanceof JumpInsnNode && templates.get(i) != null
                            && templates.get(i)[0] != null) {
                        branch(i, (JumpInsnNode) n, stamp, stubs);
                    }
            }
        }
        mn.instructions.insert(init);
        mn.instructions.add(stubs);
    }

    // Value on top of the stack → temporaries and back.
    int store(char s) {
        switch (s) {
            case 'J': return LSTORE;
            case 'F': return FSTORE;
            case 'D': return DSTORE;
            case 'A': return ASTORE;
            default: return ISTORE;
        }
    }

    int tmp(char s) {
        switch (s) {
            case 'J': return tJ;
            case 'F': return tF;
            case 'D': return tD;
            case 'A': return tA;
            default: return tI;
        }
    }

    void load(InsnList l, char s) {
        l.add(new VarInsnNode(store(s) - (ISTORE - ILOAD), tmp(s)));
    }

    /** Loads the temporary value of sort s as a long (floats as bits, objects by number). */
    void loadLong(InsnList l, char s) {
        load(l, s);
        switch (s) {
            case 'J': break;
            case 'F':
                l.add(new MethodInsnNode(INVOKESTATIC, "java/lang/Float", "floatToRawIntBits",
                        "(F)I", false));
                l.add(new InsnNode(I2L));
                break;
            case 'D':
                l.add(new MethodInsnNode(INVOKESTATIC, "java/lang/Double",
                        "doubleToRawLongBits", "(D)J", false));
                break;
            case 'A':
                l.add(rt("id", "(Ljava/lang/Object;)J"));
                break;
            default:
                l.add(new InsnNode(I2L));
        }
    }

    static MethodInsnNode rt(String name, String desc) {
        return new MethodInsnNode(INVOKESTATIC, RT, name, desc, false);
    }

    static AbstractInsnNode push(int v) {
        return new LdcInsnNode(v);
    }

    void afterRead(InsnList l, Integer stampLocal) {
        if (stampLocal != null) {
            l.add(new VarInsnNode(LSTORE, stampLocal));
        } else {
            l.add(new InsnNode(POP2));
        }
    }

    int readFlags(int i, boolean vol) {
        return (pinned.get(i) ? Rt.PIN : 0) | (vol ? Rt.VOLATILE : 0);
    }

    void fieldRead(int i, FieldInsnNode f, Integer stampLocal) {
        Hierarchy.Field h = ctx.traced(f);
        boolean vol = (h.access & ACC_VOLATILE) != 0;
        int fid = Registry.field(h.owner, f.name);
        char s = sortOf(Type.getType(f.desc));
        InsnList before = new InsnList();
        InsnList after = new InsnList();
        if (f.getOpcode() == GETFIELD) {
            lockField(before, fid);
            after.add(new VarInsnNode(store(s), tmp(s)));
            after.add(new VarInsnNode(ALOAD, tObj));
            loadLong(after, s);
            after.add(push(fid));
            insertRead(f, before, after, i, vol, rt("readField", "(Ljava/lang/Object;JIII)J"),
                    stampLocal, s);
        } else {
            lockStatic(before, f, fid);
            after.add(new VarInsnNode(store(s), tmp(s)));
            loadLong(after, s);
            after.add(push(fid));
            insertRead(f, before, after, i, vol, rt("readStatic", "(JIII)J"), stampLocal, s);
        }
    }

    /**
     * Locks field {@code fid} of the object on the stack, keeping the object in {@code tObj}
     * and on the stack.
     */
    void lockField(InsnList l, int fid) {
        l.add(new VarInsnNode(ASTORE, tObj));
        l.add(new VarInsnNode(ALOAD, tObj));
        l.add(push(fid));
        l.add(rt("lockField", "(Ljava/lang/Object;I)V"));
        l.add(new VarInsnNode(ALOAD, tObj));
    }

    /**
     * Locks static field {@code fid} ({@code f}), initialising its class first, so that its
     * initialiser never runs under the lock.
     */
    static void lockStatic(InsnList l, FieldInsnNode f, int fid) {
        l.add(new FieldInsnNode(GETSTATIC, f.owner, f.name, f.desc));
        l.add(new InsnNode(Type.getType(f.desc).getSize() == 2 ? POP2 : POP));
        l.add(push(fid));
        l.add(rt("lockStatic", "(I)V"));
    }

    /**
     * Puts {@code before} before the read {@code at} (instruction {@code i}) and
     * {@code after} after it, {@code after} ending with the rest of {@code call}'s arguments
     * (location, flags), the call, its stamp kept in {@code stampLocal} (or dropped) and the
     * value read (sort {@code s}) back on the stack.
     */
    void insertRead(AbstractInsnNode at, InsnList before, InsnList after, int i, boolean vol,
            MethodInsnNode call, Integer stampLocal, char s) {
        after.add(push(loc(i)));
        after.add(push(readFlags(i, vol)));
        after.add(call);
        afterRead(after, stampLocal);
        load(after, s);
        mn.instructions.insertBefore(at, before);
        mn.instructions.insert(at, after);
    }

    void operands(InsnList l, Object[] tpl, HashMap<Integer, Integer> stamp) {
        if (tpl == null) {
            return;
        }
        @SuppressWarnings("unchecked")
        List<Integer> hs = (List<Integer>) tpl[1];
        for (int h : hs) {
            l.add(new VarInsnNode(LLOAD, stamp.get(h)));
            l.add(rt("operand", "(J)V"));
        }
    }

    int templateId(Object[] tpl) {
        if (tpl == null) {
            return -1;
        }
        return Registry.template((String) tpl[0], ((List<?>) tpl[1]).size());
    }

    void fieldWrite(int i, FieldInsnNode f, HashMap<Integer, Integer> stamp) {
        Hierarchy.Field h = ctx.traced(f);
        boolean vol = (h.access & ACC_VOLATILE) != 0;
        int fid = Registry.field(h.owner, f.name);
        char s = sortOf(Type.getType(f.desc));
        Object[] tpl = (Object[]) templates.get(i)[0];
        int flags = (vol ? Rt.VOLATILE : 0) | wrapOf(f.desc) << 8;
        InsnList before = new InsnList();
        before.add(new VarInsnNode(store(s), tmp(s)));
        if (f.getOpcode() == PUTFIELD) {
            lockField(before, fid);
            loadLong(before, s);
            before.add(push(fid));
            writeCall(before, i, tpl, flags, rt("writeField", "(Ljava/lang/Object;JIIII)V"), stamp);
            before.add(new VarInsnNode(ALOAD, tObj));
        } else {
            lockStatic(before, f, fid);
            loadLong(before, s);
            before.add(push(fid));
            writeCall(before, i, tpl, flags, rt("writeStatic", "(JIIII)V"), stamp);
        }
        load(before, s);
        mn.instructions.insertBefore(f, before);
        mn.instructions.insert(f, rt("unlock", "()V"));
    }

    void elemRead(int i, AbstractInsnNode n, Integer stampLocal) {
        char s = elemSort(n.getOpcode());
        InsnList before = new InsnList();
        before.add(new VarInsnNode(ISTORE, tIdx));
        before.add(new VarInsnNode(ASTORE, tObj));
        before.add(new VarInsnNode(ALOAD, tObj));
        before.add(new VarInsnNode(ILOAD, tIdx));
        before.add(rt("lockElem", "(Ljava/lang/Object;I)V"));
        before.add(new VarInsnNode(ALOAD, tObj));
        before.add(new VarInsnNode(ILOAD, tIdx));
        InsnList after = new InsnList();
        after.add(new VarInsnNode(store(s), tmp(s)));
        after.add(new VarInsnNode(ALOAD, tObj));
        after.add(new VarInsnNode(ILOAD, tIdx));
        loadLong(after, s);
        insertRead(n, before, after, i, false, rt("readElem", "(Ljava/lang/Object;IJII)J"),
                stampLocal, s);
    }

    void elemWrite(int i, AbstractInsnNode n, HashMap<Integer, Integer> stamp) {
        int op = n.getOpcode();
        char s = elemSort(op);
        Object[] tpl = (Object[]) templates.get(i)[0];
        int w = op == BASTORE ? WRAP_BYTE_OR_BOOL : op == CASTORE ? WRAP_CHAR
                : op == SASTORE ? WRAP_SHORT : WRAP_NONE;
        InsnList before = new InsnList();
        before.add(new VarInsnNode(store(s), tmp(s)));
        before.add(new VarInsnNode(ISTORE, tIdx));
        before.add(new VarInsnNode(ASTORE, tObj));
        before.add(new VarInsnNode(ALOAD, tObj));
        before.add(new VarInsnNode(ILOAD, tIdx));
        if (op == AASTORE) {
            load(before, s);
            before.add(rt("lockElemStore", "(Ljava/lang/Object;ILjava/lang/Object;)V"));
        } else {
            before.add(rt("lockElem", "(Ljava/lang/Object;I)V"));
        }
        before.add(new VarInsnNode(ALOAD, tObj));
        before.add(new VarInsnNode(ILOAD, tIdx));
        loadLong(before, s);
        writeCall(before, i, tpl, w << 8, rt("writeElem", "(Ljava/lang/Object;IJIII)V"), stamp);
        before.add(new VarInsnNode(ALOAD, tObj));
        before.add(new VarInsnNode(ILOAD, tIdx));
        load(before, s);
        mn.instructions.insertBefore(n, before);
        mn.instructions.insert(n, rt("unlock", "()V"));
    }

    /**
     * Ends the arguments of a write's {@code call} (after its target and value): the location
     * of instruction {@code i}, the id of its value's template {@code tpl} and {@code flags};
     * then the call, and the template's operands.
     */
    void writeCall(InsnList l, int i, Object[] tpl, int flags, MethodInsnNode call,
            HashMap<Integer, Integer> stamp) {
        l.add(push(loc(i)));
        l.add(push(templateId(tpl)));
        l.add(push(flags));
        l.add(call);
        operands(l, tpl, stamp);
    }

    /** Records a branch of template {@code id} at {@code loc}: taken (1) or not (0). */
    void branchCall(InsnList l, int id, int taken, int loc, Object[] tpl,
            HashMap<Integer, Integer> stamp) {
        l.add(push(id));
        l.add(push(taken));
        l.add(push(loc));
        l.add(rt("branch", "(III)V"));
        operands(l, tpl, stamp);
    }

    /** A branch over reads: its outcome recorded on both edges. */
    void branch(int i, JumpInsnNode j, HashMap<Integer, Integer> stamp, InsnList stubs) {
        Object[] tpl = (Object[]) templates.get(i)[0];
        int id = templateId(tpl);
        int loc = loc(i);
        InsnList fall = new InsnList();
        branchCall(fall, id, 0, loc, tpl, stamp);
        LabelNode target = j.label;
        LabelNode taken = new LabelNode();
        j.label = taken;
        stubs.add(taken);
        branchCall(stubs, id, 1, loc, tpl, stamp);
        stubs.add(new JumpInsnNode(GOTO, target));
        mn.instructions.insert(j, fall);
    }
}
