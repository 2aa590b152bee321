package racepred.agent;

import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.Opcodes;

/**
 * What the transformer needs to know of other classes, read from their class files through
 * the loader (never by loading them, which could recurse into the transformer): superclass,
 * interfaces, and the access flags of declared fields (volatile, final).
 */
final class Hierarchy {
    private Hierarchy() {}

    static final class Info {
        String superName;
        String[] interfaces = new String[0];
        int access;
        /** The class has a static initialiser ({@code <clinit>}). */
        boolean hasClinit;
        final Map<String, Integer> fields = new HashMap<>();
    }

    /** A field as resolved: its declaring class and access flags. */
    static final class Field {
        final String owner;
        final int access;

        Field(String owner, int access) {
            this.owner = owner;
            this.access = access;
        }
    }

    private static final Info MISSING = new Info();
    private static final ConcurrentHashMap<String, Info> CACHE = new ConcurrentHashMap<>();

    static Info info(ClassLoader loader, String name) {
        Info i = CACHE.get(name);
        if (i == null) {
            i = read(loader, name);
            CACHE.putIfAbsent(name, i);
        }
        return i == MISSING ? null : i;
    }

    private static Info read(ClassLoader loader, String name) {
        String res = name + ".class";
        try (InputStream in = loader != null
                ? loader.getResourceAsStream(res)
                : ClassLoader.getSystemResourceAsStream(res)) {
            InputStream s = in;
            if (s == null) {
                s = ClassLoader.getSystemResourceAsStream(res);
            }
            if (s == null) {
                return MISSING;
            }
            try (InputStream t = s) {
                return parse(t.readAllBytes());
            }
        } catch (Exception e) {
            return MISSING;
        }
    }

    static Info parse(byte[] bytes) {
        Info info = new Info();
        new ClassReader(bytes).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public void visit(int version, int access, String name, String sig, String sup,
                    String[] itfs) {
                info.superName = sup;
                info.access = access;
                info.interfaces = itfs == null ? new String[0] : itfs;
            }

            @Override
            public org.objectweb.asm.MethodVisitor visitMethod(int access, String name,
                    String desc, String sig, String[] exc) {
                if (name.equals("<clinit>")) {
                    info.hasClinit = true;
                }
                return null;
            }

            @Override
            public FieldVisitor visitField(int access, String name, String desc, String sig,
                    Object value) {
                info.fields.put(name, access);
                return null;
            }
        }, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return info;
    }

    /** Resolves field {@code name} referenced through {@code owner} (JVMS 5.4.3.2). */
    static Field field(ClassLoader loader, String owner, String name) {
        for (int depth = 0; owner != null && depth < 64; depth++) {
            Info i = info(loader, owner);
            if (i == null) {
                return null;
            }
            Integer acc = i.fields.get(name);
            if (acc != null) {
                return new Field(owner, acc);
            }
            for (String itf : i.interfaces) {
                Field f = field(loader, itf, name);
                if (f != null) {
                    return f;
                }
            }
            owner = i.superName;
        }
        return null;
    }

    /**
     * Whether using class {@code name} may wait for an instrumented static initialiser: its
     * own or a superclass's (JDK classes are not instrumented).
     */
    static boolean initialises(ClassLoader loader, String name) {
        for (int depth = 0; name != null && depth < 64; depth++) {
            if (Transformer.skipped(name)) {
                return false;
            }
            Info i = info(loader, name);
            if (i == null) {
                return false;
            }
            if (i.hasClinit) {
                return true;
            }
            name = i.superName;
        }
        return false;
    }

    /** Whether {@code name} is {@code target} or extends or implements it. */
    static boolean isSubtype(ClassLoader loader, String name, String target) {
        for (int depth = 0; name != null && depth < 64; depth++) {
            if (name.equals(target)) {
                return true;
            }
            Info i = info(loader, name);
            if (i == null) {
                return false;
            }
            for (String itf : i.interfaces) {
                if (isSubtype(loader, itf, target)) {
                    return true;
                }
            }
            name = i.superName;
        }
        return false;
    }

    /** For frame computation: the closest common superclass, {@code Object} when unsure. */
    static String commonSuperClass(ClassLoader loader, String a, String b) {
        Info ia = info(loader, a);
        Info ib = info(loader, b);
        if (ia == null || ib == null || (ia.access & Opcodes.ACC_INTERFACE) != 0
                || (ib.access & Opcodes.ACC_INTERFACE) != 0) {
            return "java/lang/Object";
        }
        java.util.HashSet<String> up = new java.util.HashSet<>();
        for (String c = a; c != null; ) {
            up.add(c);
            Info i = info(loader, c);
            c = i == null ? null : i.superName;
        }
        for (String c = b; c != null; ) {
            if (up.contains(c)) {
                return c;
            }
            Info i = info(loader, c);
            c = i == null ? null : i.superName;
        }
        return "java/lang/Object";
    }
}
