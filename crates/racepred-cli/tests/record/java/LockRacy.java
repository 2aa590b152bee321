import java.util.concurrent.locks.ReentrantLock;

// Two threads update a balance; one forgets the ReentrantLock.
public class LockRacy {
    static final ReentrantLock lock = new ReentrantLock();
    static long balance;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            lock.lock();
            try {
                balance += 10; // RACE
            } finally {
                lock.unlock();
            }
        });
        t.start();
        balance -= 5; // RACE
        t.join();
        System.out.println(balance);
    }
}
