import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

// Data handed over through a CountDownLatch, a Semaphore used as a mutex and as a signal,
// and the phases of a CyclicBarrier; the threads are never joined.
public class SynchronisersSafe {
    static int fromLatch;
    static int guarded;
    static int signalled;
    static int[] phase = new int[2];
    static int sum;

    public static void main(String[] args) throws Exception {
        CountDownLatch latch = new CountDownLatch(2);
        Semaphore mutex = new Semaphore(1);
        Semaphore signal = new Semaphore(0);
        CyclicBarrier barrier = new CyclicBarrier(2);
        Thread t = new Thread(() -> {
            try {
                fromLatch = 1;
                latch.countDown();
                mutex.acquire();
                guarded++;
                mutex.release();
                phase[0] = 5;
                barrier.await();
                sum = phase[0] + phase[1];
                barrier.await(10, TimeUnit.SECONDS);
                signalled = 3;
                signal.release();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        t.start();
        latch.countDown();
        latch.await();
        int a = fromLatch;
        while (!mutex.tryAcquire(1, TimeUnit.MILLISECONDS)) {
            Thread.yield();
        }
        guarded++;
        mutex.release();
        phase[1] = 6;
        barrier.await();
        barrier.await();
        int s = sum;
        signal.acquire();
        System.out.println(a + guarded + signalled + s);
    }
}
