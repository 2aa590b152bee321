import java.util.concurrent.Phaser;

// Two workers and main on a phaser: each worker writes its slot in phase 0 and reads the
// other's in phase 1; main reads the results after phase 1 has ended.
public class PhaserSafe {
    static int[] data = new int[2];
    static int[] sums = new int[2];

    public static void main(String[] args) throws Exception {
        Phaser ph = new Phaser(3);
        Thread[] ts = new Thread[2];
        for (int k = 0; k < 2; k++) {
            int id = k;
            ts[k] = new Thread(() -> {
                data[id] = id + 1;
                ph.arriveAndAwaitAdvance();
                sums[id] = data[1 - id];
                ph.arrive();
            });
            ts[k].start();
        }
        ph.arriveAndAwaitAdvance();
        ph.awaitAdvance(ph.arrive());
        System.out.println(sums[0] + sums[1]);
        for (Thread t : ts) {
            t.join();
        }
    }
}
