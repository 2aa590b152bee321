/**
 * Class initialisation: whichever thread uses Holder first runs its initialiser, whose
 * writes come before every other thread's first use of Holder; the race is between T1's
 * later write and T2's read, not with the initialiser.
 */
public class ClinitRacy {
    static class Holder {
        static int value;
        static int[] table = new int[2];

        static {
            value = 7;
            table[0] = 1;
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t1 = new Thread(() -> {
            Holder.value = Holder.table[0] + 1; // RACE
        });
        Thread t2 = new Thread(() -> {
            int v = Holder.value; // RACE
            System.out.println(v + Holder.table[0]);
        });
        t1.start();
        t2.start();
        t1.join();
        t2.join();
    }
}
