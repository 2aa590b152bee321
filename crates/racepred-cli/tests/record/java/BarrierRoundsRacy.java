import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Phaser;

// Two threads meet at a CyclicBarrier, then at a Phaser, 500 times each; between two
// meetings one writes and the other reads, unordered. The thread that leaves a round last
// must not synchronise with the other's arrival at the next round: each round races.
public class BarrierRoundsRacy {
    static final int ROUNDS = 500;
    static int x, y;

    public static void main(String[] args) throws Exception {
        CyclicBarrier bar = new CyclicBarrier(2);
        Phaser ph = new Phaser(2);
        Thread w = new Thread(() -> {
            try {
                for (int r = 0; r < ROUNDS; r++) {
                    bar.await();
                    x = r; // RACE
                }
                bar.await();
                for (int r = 0; r < ROUNDS; r++) {
                    ph.arriveAndAwaitAdvance();
                    y = r; // RACE
                }
                ph.arriveAndAwaitAdvance();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        w.start();
        long s = 0;
        for (int r = 0; r < ROUNDS; r++) {
            bar.await();
            s += x; // RACE
        }
        bar.await();
        for (int r = 0; r < ROUNDS; r++) {
            ph.arriveAndAwaitAdvance();
            s += y; // RACE
        }
        ph.arriveAndAwaitAdvance();
        w.join();
        System.out.println(s > 0);
    }
}
