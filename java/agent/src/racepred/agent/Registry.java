package racepred.agent;

import java.util.ArrayList;
import java.util.HashMap;

/**
 * Numbers given at instrumentation time: fields (by declaring class and name) and source
 * locations ({@code File.java:line}, with the method they are in). Only the transformer
 * adds to them, once per class; {@link TraceWriter} reads them at exit.
 */
final class Registry {
    private Registry() {}

    private static final HashMap<String, Integer> FIELD_IDS = new HashMap<>();
    /** {@code Class.field} of each field number (simple class name, without the package). */
    private static final ArrayList<String> FIELD_NAMES = new ArrayList<>();
    private static final HashMap<String, Integer> LOC_IDS = new HashMap<>();
    private static final ArrayList<String> LOC_TEXT = new ArrayList<>();
    private static final ArrayList<String> LOC_METHOD = new ArrayList<>();

    static synchronized int field(String owner, String name) {
        String key = owner + "." + name;
        Integer id = FIELD_IDS.get(key);
        if (id == null) {
            id = FIELD_NAMES.size();
            FIELD_IDS.put(key, id);
            FIELD_NAMES.add(simple(owner) + "." + name);
        }
        return id;
    }

    static synchronized String fieldName(int id) {
        return id >= 0 && id < FIELD_NAMES.size() ? FIELD_NAMES.get(id) : "field" + id;
    }

    /**
     * The location of line {@code line} of {@code source} (the class's SourceFile) in class
     * {@code owner}'s method {@code method}; -1 when the line is unknown.
     */
    static synchronized int loc(String owner, String source, int line, String method) {
        if (line <= 0 || source == null) {
            return -1;
        }
        int slash = owner.lastIndexOf('/');
        String pkg = slash < 0 ? "" : owner.substring(0, slash + 1);
        String key = pkg + source + ":" + line;
        Integer id = LOC_IDS.get(key);
        if (id == null) {
            id = LOC_TEXT.size();
            LOC_IDS.put(key, id);
            LOC_TEXT.add(source + ":" + line);
            LOC_METHOD.add(owner.replace('/', '.') + "." + method);
        }
        return id;
    }

    /** A location whose line is given later ({@link #fillLoc}), e.g. a method's entry. */
    static synchronized int reserveLoc() {
        LOC_TEXT.add(null);
        LOC_METHOD.add(null);
        return LOC_TEXT.size() - 1;
    }

    static synchronized void fillLoc(int id, String owner, String source, int line,
            String method) {
        if (source != null && line > 0) {
            LOC_TEXT.set(id, source + ":" + line);
            LOC_METHOD.set(id, owner.replace('/', '.') + "." + method);
        }
    }

    static synchronized int locCount() {
        return LOC_TEXT.size();
    }

    static synchronized String locText(int id) {
        return LOC_TEXT.get(id);
    }

    static synchronized String locMethod(int id) {
        return LOC_METHOD.get(id);
    }

    private static final HashMap<String, Integer> TEMPLATE_IDS = new HashMap<>();
    private static final ArrayList<String> TEMPLATES = new ArrayList<>();

    /**
     * The number of an expression template of the value pass: text with holes {@code $k }
     * (k: the k-th register operand recorded with the event).
     */
    static synchronized int template(String text, int holes) {
        Integer id = TEMPLATE_IDS.get(text);
        if (id == null) {
            id = TEMPLATES.size();
            TEMPLATE_IDS.put(text, id);
            TEMPLATES.add(text);
        }
        return id;
    }

    static synchronized String templateText(int id) {
        return TEMPLATES.get(id);
    }

    /** {@code a/b/C$D} → {@code C$D}. */
    static String simple(String internalName) {
        return internalName.substring(internalName.lastIndexOf('/') + 1);
    }
}
