package racepred.agent;

import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.commons.AdviceAdapter;

/**
 * Instruments each application class as it loads (JDK classes, the agent and its ASM are
 * left alone): calls into {@link Rt} around field and array accesses, monitors,
 * synchronized methods, {@code Object.wait}, {@code Thread.start}/{@code join} and
 * {@code java.util.concurrent.locks.Lock}/{@code Condition} calls, and the release and
 * acquire methods of {@code CountDownLatch}, {@code Semaphore}, {@code CyclicBarrier} and
 * {@code Phaser},
 * calls on {@code java.util.concurrent.atomic} objects, executors' {@code execute},
 * {@code submit} and {@code awaitTermination}, {@code Future.get}, {@code CompletableFuture}'s
 * {@code supplyAsync}, {@code runAsync} and {@code join}, and
 * {@code Thread.interrupt} with
 * where an interrupt is seen ({@code interrupted}, {@code isInterrupted}, a handler of
 * {@code InterruptedException}). A class initialiser ({@code <clinit>}) is a section of a
 * lock of its class ending with a volatile write, which a thread's first use of the class
 * elsewhere (static field, static method, {@code new}) reads. Not recorded: accesses to
 * final fields, and any code of a constructor before it calls its superclass's
 * constructor.
 */
final class Transformer implements ClassFileTransformer {
    private static final String RT = "racepred/agent/Rt";
    private static volatile boolean warned;

    static boolean skipped(String name) {
        return name.startsWith("java/") || name.startsWith("javax/") || name.startsWith("jdk/")
                || name.startsWith("sun/") || name.startsWith("com/sun/")
                || name.startsWith("racepred/agent/") || name.startsWith("org/objectweb/asm/");
    }

    @Override
    public byte[] transform(ClassLoader loader, String name, Class<?> redefined,
            ProtectionDomain pd, byte[] bytes) {
        if (name == null || loader == null || skipped(name)) {
            return null;
        }
        try {
            ClassReader cr = new ClassReader(bytes);
            ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_FRAMES) {
                @Override
                protected String getCommonSuperClass(String a, String b) {
                    return Hierarchy.commonSuperClass(loader, a, b);
                }
            };
            cr.accept(new ClassAdapter(cw, loader), ClassReader.SKIP_FRAMES);
            return cw.toByteArray();
        } catch (Throwable t) {
            if (!warned) {
                warned = true;
                System.err.println("racepred: cannot instrument " + name + " (left as is): " + t);
            }
            return null;
        }
    }

    private static final class ClassAdapter extends ClassVisitor {
        private final ClassLoader loader;
        private String owner;
        private String source;
        private int version;

        ClassAdapter(ClassVisitor cv, ClassLoader loader) {
            super(Opcodes.ASM9, cv);
            this.loader = loader;
        }

        @Override
        public void visit(int version, int access, String name, String sig, String sup,
                String[] itfs) {
            this.owner = name;
            this.version = version & 0xffff;
            super.visit(version, access, name, sig, sup, itfs);
        }

        @Override
        public void visitSource(String source, String debug) {
            this.source = source;
            super.visitSource(source, debug);
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String desc, String sig,
                String[] exc) {
            MethodVisitor mv = super.visitMethod(access, name, desc, sig, exc);
            if (mv == null
                    || (access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) {
                return mv;
            }
            MethodAdapter adapter = new MethodAdapter(mv, access, name, desc, this);
            if (!Rt.values) {
                return adapter;
            }
            // With values, the value pass instruments the method's field and array
            // accesses and branches first; the adapter then adds the rest.
            ClassAdapter cls = this;
            return new org.objectweb.asm.tree.MethodNode(Opcodes.ASM9, access, name, desc, sig,
                    exc) {
                @Override
                public void visitEnd() {
                    adapter.valuesDone = ValuePass.rewrite(this, cls.owner, cls.source,
                            cls.loader);
                    accept(adapter);
                }
            };
        }
    }

    private static final class MethodAdapter extends AdviceAdapter {
        private final ClassAdapter cls;
        private final String method;
        private final boolean sync;
        private final boolean isStatic;
        /** False in a constructor until it has called its superclass's constructor. */
        private boolean active;
        /** In a class initialiser, recorded under the class's initialisation lock. */
        private final boolean clinit;
        /** The value pass instrumented this method's field and array accesses. */
        boolean valuesDone;
        private int line;
        private int entryLoc = -1;
        private boolean entryKnown;
        private final Label start = new Label();
        private final Label handler = new Label();

        MethodAdapter(MethodVisitor mv, int access, String name, String desc, ClassAdapter cls) {
            super(Opcodes.ASM9, mv, access, name, desc);
            this.cls = cls;
            this.method = name;
            this.sync = (access & Opcodes.ACC_SYNCHRONIZED) != 0;
            this.isStatic = (access & Opcodes.ACC_STATIC) != 0;
            this.clinit = name.equals("<clinit>");
        }

        private int loc() {
            return Registry.loc(cls.owner, cls.source, line, method);
        }

        private void pushInt(int v) {
            super.visitLdcInsn(v);
        }

        private void call(String name, String desc) {
            super.visitMethodInsn(INVOKESTATIC, RT, name, desc, false);
        }

        private void pushLock(MethodVisitor to) {
            if (isStatic) {
                to.visitLdcInsn(Type.getObjectType(cls.owner));
            } else {
                to.visitVarInsn(ALOAD, 0);
            }
        }

        @Override
        protected void onMethodEnter() {
            active = true;
            if (sync) {
                // Its line is the method's first, known at its first line number entry.
                entryLoc = Registry.reserveLoc();
                pushLock(this);
                pushInt(entryLoc);
                call("monitorEnter", "(Ljava/lang/Object;I)V");
                super.visitLabel(start);
            } else if (initGuard()) {
                entryLoc = Registry.reserveLoc();
                super.visitLdcInsn(Type.getObjectType(cls.owner));
                pushInt(entryLoc);
                call("clinitEnter", "(Ljava/lang/Class;I)V");
                super.visitLabel(start);
            }
        }

        /** A class initialiser recorded as a section of the class's initialisation lock. */
        private boolean initGuard() {
            return clinit && cls.version >= Opcodes.V1_5;
        }

        /**
         * Before a use of class {@code owner} that initialises it: {@link Rt#classUse}, when
         * its initialisation (or a superclass's) is instrumented. Uses of the class's own
         * members are not marked: the code running them was reached through a use of the
         * class, or runs on the thread that initialised it.
         */
        private void classUse(String owner) {
            if (active && cls.version >= Opcodes.V1_5 && !owner.equals(cls.owner)
                    && !owner.startsWith("[") && !skipped(owner)
                    && Hierarchy.initialises(cls.loader, owner)) {
                super.visitLdcInsn(Type.getObjectType(owner));
                pushInt(loc());
                call("classUse", "(Ljava/lang/Class;I)V");
            }
        }

        @Override
        public void visitTypeInsn(int opcode, String type) {
            if (opcode == NEW) {
                classUse(type);
            }
            super.visitTypeInsn(opcode, type);
        }

        @Override
        public void visitLineNumber(int ln, Label l) {
            super.visitLineNumber(ln, l);
            line = ln;
            if (entryLoc >= 0 && !entryKnown) {
                entryKnown = true;
                Registry.fillLoc(entryLoc, cls.owner, cls.source, ln, method);
            }
        }

        @Override
        protected void onMethodExit(int opcode) {
            if (sync && opcode != ATHROW) {
                pushLock(this);
                pushInt(loc());
                call("monitorExit", "(Ljava/lang/Object;I)V");
            } else if (initGuard() && opcode != ATHROW) {
                super.visitLdcInsn(Type.getObjectType(cls.owner));
                pushInt(loc());
                call("clinitExit", "(Ljava/lang/Class;I)V");
            }
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            if (sync) {
                // An exception leaving the method releases its monitor: a catch-all handler,
                // last in the table so that the method's own handlers come first.
                Label end = new Label();
                super.visitLabel(end);
                mv.visitTryCatchBlock(start, end, handler, null);
                mv.visitLabel(handler);
                pushLock(mv);
                mv.visitLdcInsn(loc());
                mv.visitMethodInsn(INVOKESTATIC, RT, "monitorExit", "(Ljava/lang/Object;I)V",
                        false);
                mv.visitInsn(ATHROW);
            } else if (initGuard()) {
                // An initialiser that throws lets the initialisation lock go.
                Label end = new Label();
                super.visitLabel(end);
                mv.visitTryCatchBlock(start, end, handler, null);
                mv.visitLabel(handler);
                mv.visitLdcInsn(Type.getObjectType(cls.owner));
                mv.visitLdcInsn(loc());
                mv.visitMethodInsn(INVOKESTATIC, RT, "clinitAbort", "(Ljava/lang/Class;I)V",
                        false);
                mv.visitInsn(ATHROW);
            }
            super.visitMaxs(maxStack, maxLocals);
        }

        @Override
        public void visitFieldInsn(int opcode, String owner, String name, String desc) {
            if (opcode == GETSTATIC || opcode == PUTSTATIC) {
                classUse(owner);
            }
            if (!active || valuesDone) {
                super.visitFieldInsn(opcode, owner, name, desc);
                return;
            }
            Hierarchy.Field f = Hierarchy.field(cls.loader, owner, name);
            int access = f == null ? 0 : f.access;
            if ((access & ACC_FINAL) != 0) {
                super.visitFieldInsn(opcode, owner, name, desc);
                return;
            }
            int id = Registry.field(f == null ? owner : f.owner, name);
            boolean vol = (access & ACC_VOLATILE) != 0;
            boolean wide = desc.equals("J") || desc.equals("D");
            switch (opcode) {
                case GETFIELD:
                    if (vol) {
                        super.visitInsn(DUP);
                        super.visitFieldInsn(opcode, owner, name, desc);
                        if (wide) {
                            super.visitInsn(DUP2_X1);
                            super.visitInsn(POP2);
                        } else {
                            super.visitInsn(SWAP);
                        }
                        pushInt(id);
                        pushInt(loc());
                        call("volatileRead", "(Ljava/lang/Object;II)V");
                    } else {
                        super.visitInsn(DUP);
                        pushInt(id);
                        pushInt(loc());
                        call("read", "(Ljava/lang/Object;II)V");
                        super.visitFieldInsn(opcode, owner, name, desc);
                    }
                    break;
                case PUTFIELD:
                    if (wide) {
                        super.visitInsn(DUP2_X1);
                        super.visitInsn(POP2);
                        super.visitInsn(DUP_X2);
                    } else {
                        super.visitInsn(DUP2);
                        super.visitInsn(POP);
                    }
                    pushInt(id);
                    pushInt(loc());
                    call(vol ? "volatileWrite" : "write", "(Ljava/lang/Object;II)V");
                    super.visitFieldInsn(opcode, owner, name, desc);
                    break;
                case GETSTATIC:
                    if (vol) {
                        super.visitFieldInsn(opcode, owner, name, desc);
                        pushInt(id);
                        pushInt(loc());
                        call("volatileReadStatic", "(II)V");
                    } else {
                        pushInt(id);
                        pushInt(loc());
                        call("readStatic", "(II)V");
                        super.visitFieldInsn(opcode, owner, name, desc);
                    }
                    break;
                default: // PUTSTATIC
                    pushInt(id);
                    pushInt(loc());
                    call(vol ? "volatileWriteStatic" : "writeStatic", "(II)V");
                    super.visitFieldInsn(opcode, owner, name, desc);
                    break;
            }
        }

        @Override
        public void visitInsn(int opcode) {
            if (!active) {
                super.visitInsn(opcode);
                return;
            }
            switch (opcode) {
                case IALOAD: case LALOAD: case FALOAD: case DALOAD:
                case AALOAD: case BALOAD: case CALOAD: case SALOAD:
                    if (valuesDone) {
                        super.visitInsn(opcode);
                        return;
                    }
                    super.visitInsn(DUP2);
                    pushInt(loc());
                    call("arrayRead", "(Ljava/lang/Object;II)V");
                    super.visitInsn(opcode);
                    return;
                case IASTORE: store(opcode, "iastore", "[II"); return;
                case LASTORE: store(opcode, "lastore", "[JJ"); return;
                case FASTORE: store(opcode, "fastore", "[FF"); return;
                case DASTORE: store(opcode, "dastore", "[DD"); return;
                case CASTORE: store(opcode, "castore", "[CI"); return;
                case SASTORE: store(opcode, "sastore", "[SI"); return;
                case BASTORE: store(opcode, "bastore", "Ljava/lang/Object;I"); return;
                case AASTORE: store(opcode, "aastore", "[Ljava/lang/Object;Ljava/lang/Object;"); return;
                case MONITORENTER:
                    super.visitInsn(DUP);
                    super.visitInsn(MONITORENTER);
                    pushInt(loc());
                    call("monitorEnter", "(Ljava/lang/Object;I)V");
                    return;
                case MONITOREXIT:
                    super.visitInsn(DUP);
                    pushInt(loc());
                    call("monitorExit", "(Ljava/lang/Object;I)V");
                    super.visitInsn(MONITOREXIT);
                    return;
                default:
                    super.visitInsn(opcode);
            }
        }

        /** Replaces an array store by Rt's, whose parameters are (array, index, value). */
        private void store(int opcode, String name, String arrayAndValue) {
            if (valuesDone) {
                super.visitInsn(opcode);
                return;
            }
            // arrayAndValue = array descriptor then value descriptor; the index goes between.
            String arr;
            String val;
            if (arrayAndValue.startsWith("Ljava/lang/Object;")) {
                arr = "Ljava/lang/Object;";
                val = arrayAndValue.substring(arr.length());
            } else if (arrayAndValue.startsWith("[Ljava/lang/Object;")) {
                arr = "[Ljava/lang/Object;";
                val = arrayAndValue.substring(arr.length());
            } else {
                arr = arrayAndValue.substring(0, 2);
                val = arrayAndValue.substring(2);
            }
            pushInt(loc());
            call(name, "(" + arr + "I" + val + "I)V");
        }

        private void replace(String name, String recv, String desc) {
            pushInt(loc());
            Type t = Type.getMethodType(desc);
            StringBuilder d = new StringBuilder("(").append(recv);
            for (Type a : t.getArgumentTypes()) {
                d.append(a.getDescriptor());
            }
            d.append("I)").append(t.getReturnType().getDescriptor());
            call(name, d.toString());
        }

        private static final String CF = "java/util/concurrent/CompletableFuture";
        private static final String SUPPLIER = "Ljava/util/function/Supplier;";
        private static final String EXEC = "Ljava/util/concurrent/Executor;";
        private static final String LOCK = "java/util/concurrent/locks/Lock";
        private static final String COND = "java/util/concurrent/locks/Condition";
        private static final String RWLOCK = "java/util/concurrent/locks/ReadWriteLock";
        private static final String RRWLOCK = "java/util/concurrent/locks/ReentrantReadWriteLock";

        /** Handlers of {@code InterruptedException}: an interrupt is seen there. */
        private final java.util.HashSet<Label> interruptHandlers = new java.util.HashSet<>();

        @Override
        public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
            if ("java/lang/InterruptedException".equals(type)) {
                interruptHandlers.add(handler);
            }
            super.visitTryCatchBlock(start, end, handler, type);
        }

        @Override
        public void visitLabel(Label label) {
            super.visitLabel(label);
            if (active && interruptHandlers.contains(label)) {
                pushInt(loc());
                call("caughtInterrupt", "(I)V");
            }
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String name, String desc,
                boolean itf) {
            if (opcode == INVOKESTATIC) {
                classUse(owner);
            }
            if (active && opcode == INVOKESTATIC && owner.equals("java/lang/Thread")
                    && name.equals("interrupted") && desc.equals("()Z")) {
                pushInt(loc());
                call("interrupted", "(I)Z");
                return;
            }
            if (active && opcode == INVOKESTATIC && owner.equals(CF)
                    && ((name.equals("supplyAsync") && (desc.equals("(" + SUPPLIER + ")L" + CF + ";")
                            || desc.equals("(" + SUPPLIER + EXEC + ")L" + CF + ";")))
                        || (name.equals("runAsync") && (desc.equals("(Ljava/lang/Runnable;)L" + CF + ";")
                            || desc.equals("(Ljava/lang/Runnable;" + EXEC + ")L" + CF + ";"))))) {
                replace(name, "", desc);
                return;
            }
            if (active && opcode == INVOKEVIRTUAL && name.equals("join")
                    && desc.equals("()Ljava/lang/Object;")
                    && Hierarchy.isSubtype(cls.loader, owner, CF)) {
                replace(name, "L" + CF + ";", desc);
                return;
            }
            if (!active || (opcode != INVOKEVIRTUAL && opcode != INVOKEINTERFACE)) {
                super.visitMethodInsn(opcode, owner, name, desc, itf);
                return;
            }
            ClassLoader loader = cls.loader;
            if (opcode == INVOKEVIRTUAL && name.equals("wait")
                    && (desc.equals("()V") || desc.equals("(J)V") || desc.equals("(JI)V"))) {
                replace("wait", "Ljava/lang/Object;", desc);
                return;
            }
            if (opcode == INVOKEVIRTUAL && (name.equals("start") || name.equals("join")
                    || name.equals("interrupt") || name.equals("isInterrupted"))
                    && Hierarchy.isSubtype(loader, owner, "java/lang/Thread")) {
                if (name.equals("start") && desc.equals("()V")) {
                    super.visitInsn(DUP);
                    pushInt(loc());
                    call("beforeStart", "(Ljava/lang/Object;I)V");
                    super.visitMethodInsn(opcode, owner, name, desc, itf);
                    return;
                }
                if ((name.equals("interrupt") && desc.equals("()V"))
                        || (name.equals("isInterrupted") && desc.equals("()Z"))) {
                    replace(name, "Ljava/lang/Thread;", desc);
                    return;
                }
                if (name.equals("join") && (desc.equals("()V") || desc.equals("(J)V")
                        || desc.equals("(JI)V"))) {
                    replace("join", "Ljava/lang/Thread;", desc);
                    return;
                }
            }
            if (isLockMethod(name, desc) && (owner.equals(LOCK)
                    || Hierarchy.isSubtype(loader, owner, LOCK))) {
                replace(name, "L" + LOCK + ";", desc);
                return;
            }
            if (opcode == INVOKEVIRTUAL && owner.startsWith("java/util/concurrent/atomic/")
                    && !name.equals("<init>")) {
                atomic(opcode, owner, name, desc, itf);
                return;
            }
            if ((name.equals("readLock") || name.equals("writeLock"))
                    && desc.equals("()Ljava/util/concurrent/locks/Lock;")
                    && Hierarchy.isSubtype(loader, owner, RWLOCK)) {
                replace(name, "L" + RWLOCK + ";", desc);
                return;
            }
            if ((name.equals("readLock") || name.equals("writeLock"))
                    && desc.startsWith("()L" + RRWLOCK + "$")
                    && Hierarchy.isSubtype(loader, owner, RRWLOCK)) {
                replace(name, "L" + RRWLOCK + ";", desc);
                return;
            }
            String exec = executorMethod(loader, owner, name, desc);
            if (exec != null) {
                replace(name, "L" + exec + ";", desc);
                return;
            }
            String sync = synchroniser(loader, owner, name, desc);
            if (sync != null) {
                replace(name, "L" + sync + ";", desc);
                return;
            }
            if (isAwait(name, desc) && (owner.equals(COND)
                    || Hierarchy.isSubtype(loader, owner, COND))) {
                replace(name, "L" + COND + ";", desc);
                return;
            }
            super.visitMethodInsn(opcode, owner, name, desc, itf);
        }

        private static boolean isLockMethod(String name, String desc) {
            switch (name) {
                case "lock": case "lockInterruptibly": case "unlock":
                    return desc.equals("()V");
                case "tryLock":
                    return desc.equals("()Z")
                            || desc.equals("(JLjava/util/concurrent/TimeUnit;)Z");
                case "newCondition":
                    return desc.equals("()Ljava/util/concurrent/locks/Condition;");
                default:
                    return false;
            }
        }

        /**
         * A call on a {@code java.util.concurrent.atomic} object: {@code vw} of the object
         * before it unless it only reads ({@code get…}, {@code …Value}), {@code vr} after it
         * unless it only writes ({@code set…}, {@code lazySet}). The arguments wait in fresh
         * locals while a copy of the receiver is taken.
         */
        private void atomic(int opcode, String owner, String name, String desc, boolean itf) {
            boolean reads = !name.startsWith("set") && !name.equals("lazySet");
            boolean writes = !(name.startsWith("get") && !name.startsWith("getAnd"))
                    && !name.endsWith("Value") && !name.equals("toString");
            Type[] args = Type.getArgumentTypes(desc);
            int[] locals = new int[args.length];
            for (int k = args.length - 1; k >= 0; k--) {
                locals[k] = newLocal(args[k]);
                storeLocal(locals[k]);
            }
            int loc = loc();
            super.visitInsn(DUP);
            if (writes) {
                super.visitInsn(DUP);
                pushInt(loc);
                call("atomicWrite", "(Ljava/lang/Object;I)V");
            }
            for (int k = 0; k < args.length; k++) {
                loadLocal(locals[k]);
            }
            super.visitMethodInsn(opcode, owner, name, desc, itf);
            Type ret = Type.getReturnType(desc);
            if (ret.getSize() == 1) {
                super.visitInsn(SWAP);
            } else if (ret.getSize() == 2) {
                super.visitInsn(DUP2_X1);
                super.visitInsn(POP2);
            }
            pushInt(loc);
            call(reads ? "atomicRead" : "forget", "(Ljava/lang/Object;I)V");
        }

        private static final String EXECUTOR = "java/util/concurrent/Executor";
        private static final String EXECUTOR_SERVICE = "java/util/concurrent/ExecutorService";
        private static final String FUTURE = "java/util/concurrent/Future";

        /** The interface whose method Rt replaces (executors and futures), or null. */
        private static String executorMethod(ClassLoader loader, String owner, String name,
                String desc) {
            String cls;
            switch (name) {
                case "execute":
                    cls = desc.equals("(Ljava/lang/Runnable;)V") ? EXECUTOR : null;
                    break;
                case "submit":
                    cls = desc.equals("(Ljava/lang/Runnable;)Ljava/util/concurrent/Future;")
                            || desc.equals("(Ljava/util/concurrent/Callable;)Ljava/util/concurrent/Future;")
                            || desc.equals("(Ljava/lang/Runnable;Ljava/lang/Object;)Ljava/util/concurrent/Future;")
                            ? EXECUTOR_SERVICE : null;
                    break;
                case "awaitTermination":
                    cls = desc.equals("(J" + UNIT + ")Z") ? EXECUTOR_SERVICE : null;
                    break;
                case "get":
                    cls = desc.equals("()Ljava/lang/Object;")
                            || desc.equals("(J" + UNIT + ")Ljava/lang/Object;") ? FUTURE : null;
                    break;
                default:
                    cls = null;
            }
            return cls != null && Hierarchy.isSubtype(loader, owner, cls) ? cls : null;
        }

        private static final String LATCH = "java/util/concurrent/CountDownLatch";
        private static final String SEMAPHORE = "java/util/concurrent/Semaphore";
        private static final String BARRIER = "java/util/concurrent/CyclicBarrier";
        private static final String PHASER = "java/util/concurrent/Phaser";
        private static final String UNIT = "Ljava/util/concurrent/TimeUnit;";

        /** The synchroniser class whose method Rt replaces, or null. */
        private static String synchroniser(ClassLoader loader, String owner, String name,
                String desc) {
            String cls;
            switch (name) {
                case "countDown":
                    cls = desc.equals("()V") ? LATCH : null;
                    break;
                case "await":
                    cls = desc.equals("()V") || desc.equals("(J" + UNIT + ")Z") ? LATCH
                            : desc.equals("()I") || desc.equals("(J" + UNIT + ")I") ? BARRIER
                            : null;
                    break;
                case "release": case "acquire": case "acquireUninterruptibly":
                    cls = desc.equals("()V") || desc.equals("(I)V") ? SEMAPHORE : null;
                    break;
                case "arrive": case "arriveAndDeregister": case "arriveAndAwaitAdvance":
                    cls = desc.equals("()I") ? PHASER : null;
                    break;
                case "awaitAdvance": case "awaitAdvanceInterruptibly":
                    cls = desc.equals("(I)I") || desc.equals("(IJ" + UNIT + ")I") ? PHASER
                            : null;
                    break;
                case "tryAcquire":
                    cls = desc.equals("()Z") || desc.equals("(I)Z")
                            || desc.equals("(J" + UNIT + ")Z")
                            || desc.equals("(IJ" + UNIT + ")Z") ? SEMAPHORE : null;
                    break;
                default:
                    cls = null;
            }
            return cls != null && Hierarchy.isSubtype(loader, owner, cls) ? cls : null;
        }

        private static boolean isAwait(String name, String desc) {
            switch (name) {
                case "await":
                    return desc.equals("()V")
                            || desc.equals("(JLjava/util/concurrent/TimeUnit;)Z");
                case "awaitUninterruptibly":
                    return desc.equals("()V");
                case "awaitNanos":
                    return desc.equals("(J)J");
                default:
                    return false;
            }
        }
    }
}
