import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

// Tables read under a read lock by two readers and written under the write lock
// (re-entrantly too), through ReentrantReadWriteLock and the ReadWriteLock interface.
public class ReadWriteSafe {
    static final ReadWriteLock rw = new ReentrantReadWriteLock();
    static final Lock r = rw.readLock();
    static final Lock w = rw.writeLock();
    static final ReentrantReadWriteLock rw2 = new ReentrantReadWriteLock();
    static int[] table = new int[4];
    static int[] other = new int[4];
    static int version;

    static int read(int i) {
        r.lock();
        try {
            return table[i] + version;
        } finally {
            r.unlock();
        }
    }

    static void write(int i, int v) {
        w.lock();
        try {
            w.lock();
            table[i] = v;
            w.unlock();
            version++;
        } finally {
            w.unlock();
        }
        rw2.writeLock().lock();
        other[(i + 1) % 4]++;
        rw2.writeLock().unlock();
    }

    static int read2(int i) {
        rw2.readLock().lock();
        try {
            return other[(i + 1) % 4];
        } finally {
            rw2.readLock().unlock();
        }
    }

    public static void main(String[] args) throws Exception {
        Thread reader = new Thread(() -> {
            int s = 0;
            for (int i = 0; i < 50; i++) {
                s += read(i % 4) + read2(i % 4);
            }
            System.out.println(s >= 0);
        });
        Thread writer = new Thread(() -> {
            for (int i = 0; i < 50; i++) {
                write(i % 4, i);
            }
        });
        reader.start();
        writer.start();
        int s = 0;
        for (int i = 0; i < 50; i++) {
            s += read(i % 4) + read2(i % 4);
        }
        reader.join();
        writer.join();
        System.out.println(s >= 0);
    }
}
