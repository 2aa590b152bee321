import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * Runs a JavaGrande (section 2 or 3) benchmark with a smaller input than its size A:
 * {@code java JgfDriver BENCH_CLASS THREADS SIZE}. Sets the benchmark's static
 * {@code nthreads} when it has one, replaces the first entry of its {@code datasizes} (a field
 * of the benchmark or of a superclass) by SIZE and calls {@code JGFrun(0)}.
 */
public class JgfDriver {
    public static void main(String[] args) throws Exception {
        Class<?> c = Class.forName(args[0]);
        int threads = Integer.parseInt(args[1]);
        int size = Integer.parseInt(args[2]);
        try {
            c.getField("nthreads").setInt(null, threads);
        } catch (NoSuchFieldException e) {
            // passed to the constructor instead
        }
        Object bench;
        try {
            Constructor<?> k = c.getConstructor(int.class);
            bench = k.newInstance(threads);
        } catch (NoSuchMethodException e) {
            bench = c.getConstructor().newInstance();
        }
        boolean set = false;
        for (Class<?> k = c; k != null && !set; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField("datasizes");
                f.setAccessible(true);
                ((int[]) f.get(bench))[0] = size;
                set = true;
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        if (!set) {
            throw new IllegalArgumentException(args[0] + " has no datasizes field");
        }
        Method run = c.getMethod("JGFrun", int.class);
        run.invoke(bench, 0);
    }
}
