import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

// A balance guarded by a ReentrantLock (lock, re-entrant lock, tryLock, lockInterruptibly,
// through the Lock interface too) and a hand-off through one of its Conditions.
public class LockSafe {
    static final ReentrantLock lock = new ReentrantLock();
    static final Lock asLock = lock;
    static final Condition ready = lock.newCondition();
    static long balance;
    static boolean done;
    static int handedOff;

    static void deposit(long v) throws InterruptedException {
        lock.lock();
        try {
            lock.lock();
            balance += v;
            lock.unlock();
        } finally {
            lock.unlock();
        }
        while (!asLock.tryLock(10, TimeUnit.MILLISECONDS)) {
            Thread.yield();
        }
        try {
            balance += v;
        } finally {
            asLock.unlock();
        }
        asLock.lockInterruptibly();
        try {
            balance -= v;
        } finally {
            asLock.unlock();
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            try {
                for (int i = 0; i < 50; i++) {
                    deposit(2);
                }
                handedOff = 7;
                lock.lock();
                try {
                    done = true;
                    ready.signalAll();
                } finally {
                    lock.unlock();
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        });
        t.start();
        for (int i = 0; i < 50; i++) {
            deposit(3);
        }
        lock.lock();
        try {
            while (!done) {
                ready.await();
            }
        } finally {
            lock.unlock();
        }
        System.out.println(balance + " " + handedOff);
        t.join();
    }
}
