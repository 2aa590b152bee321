import java.util.concurrent.CountDownLatch;

// A worker counts a latch down, then writes what it meant to publish through it.
public class SynchronisersRacy {
    static int result;
    static int late;

    public static void main(String[] args) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            result = 1;
            done.countDown();
            late = 2; // RACE
        });
        t.start();
        done.await();
        System.out.println(result + late); // RACE
        t.join();
    }
}
