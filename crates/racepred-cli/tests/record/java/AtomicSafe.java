import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

// Data published through atomics: a reference set after the data is filled, a flag taken
// by compareAndSet, a long counter; the thread is never joined.
public class AtomicSafe {
    static final AtomicReference<int[]> box = new AtomicReference<>();
    static final AtomicBoolean claimed = new AtomicBoolean();
    static final AtomicLong done = new AtomicLong();
    static int owner;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            int[] data = new int[] {1, 2, 3};
            data[1] = 20;
            box.set(data);
            if (claimed.compareAndSet(false, true)) {
                owner = 1;
            }
            done.addAndGet(1L);
        });
        t.start();
        int[] seen;
        while ((seen = box.get()) == null) {
            Thread.onSpinWait();
        }
        int v = seen[1];
        while (done.get() == 0L) {
            Thread.onSpinWait();
        }
        if (claimed.compareAndSet(false, true)) {
            owner = 2;
        }
        System.out.println(v + owner);
    }
}
