import java.util.concurrent.locks.ReentrantReadWriteLock;

// A reader updates a statistic while holding only the read lock.
public class ReadWriteRacy {
    static final ReentrantReadWriteLock rw = new ReentrantReadWriteLock();
    static int value;
    static int reads;

    static void read() {
        rw.readLock().lock();
        try {
            int v = value;
            reads++; // RACE
        } finally {
            rw.readLock().unlock();
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(ReadWriteRacy::read);
        t.start();
        read();
        t.join();
        System.out.println(reads);
    }
}
