import java.util.concurrent.Phaser;

// As PhaserSafe, but a worker writes once more after its last arrival, which main reads
// after the phase has ended: nothing orders them.
public class PhaserRacy {
    static int[] data = new int[2];
    static int late;

    public static void main(String[] args) throws Exception {
        Phaser ph = new Phaser(3);
        Thread[] ts = new Thread[2];
        for (int k = 0; k < 2; k++) {
            int id = k;
            ts[k] = new Thread(() -> {
                data[id] = id + 1;
                ph.arriveAndAwaitAdvance();
                int other = data[1 - id];
                ph.arrive();
                if (id == 0) {
                    late = other; // RACE
                }
            });
            ts[k].start();
        }
        ph.arriveAndAwaitAdvance();
        ph.awaitAdvance(ph.arrive());
        System.out.println(late); // RACE
        for (Thread t : ts) {
            t.join();
        }
    }
}
