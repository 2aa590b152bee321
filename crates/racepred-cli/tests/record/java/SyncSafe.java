// Counters guarded by synchronized blocks, synchronized methods (instance and static),
// re-entrant acquisitions and an exception thrown out of a synchronized method.
public class SyncSafe {
    static final Object lock = new Object();
    static int count;
    static int[] cells = new int[4];
    int total;

    synchronized void add(int v) {
        total += v;
        if (v < 0) {
            throw new IllegalArgumentException("negative");
        }
        again(v);
    }

    synchronized void again(int v) {
        total += v;
    }

    static synchronized void bump() {
        count++;
    }

    void work(int id) {
        for (int i = 0; i < 100; i++) {
            synchronized (lock) {
                synchronized (lock) {
                    cells[i % 4] += id;
                }
            }
            add(1);
            try {
                add(-1);
            } catch (IllegalArgumentException e) {
                // the monitor was released on the way out
            }
            bump();
        }
    }

    public static void main(String[] args) throws Exception {
        SyncSafe s = new SyncSafe();
        Thread a = new Thread(() -> s.work(1));
        Thread b = new Thread(() -> s.work(2));
        a.start();
        b.start();
        s.work(3);
        a.join();
        b.join();
        System.out.println(s.total + " " + count + " " + cells[0]);
    }
}
