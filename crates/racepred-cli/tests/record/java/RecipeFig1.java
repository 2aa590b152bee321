/**
 * RECIPE's Fig. 1 (papers/recipe-relaxed-sound.txt): x = 0, y = 0; T1 writes y = 3, x = 1,
 * y = 5; T2 branches on y > 2 and divides by x. T2 waits (outside the trace: isAlive is no
 * synchronisation) until T1 has ended, so the run is e1 e2 e3 e4 e5. The race between the
 * write of x and T2's read of x needs T2's read of y to see 3 instead of 5, with the branch
 * going the same way: value-level prediction (recipe) finds it, mcm does not.
 */
public class RecipeFig1 {
    static int x;
    static int y;

    public static void main(String[] args) throws Exception {
        x = 0;
        y = 0;
        Thread t1 = new Thread(() -> {
            y = 3;
            x = 1; // RACE
            y = 5;
        });
        Thread t2 = new Thread(() -> {
            while (t1.isAlive()) {
                Thread.onSpinWait();
            }
            if (y > 2) {
                System.out.println(1 / x); // RACE
            } else {
                System.out.println(2 / x);
            }
        });
        t1.start();
        t2.start();
        t1.join();
        t2.join();
    }
}
