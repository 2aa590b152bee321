/**
 * Class initialisation without a race: the initialiser's writes (run by whichever thread
 * uses Holder first) come before every other thread's first use of Holder, and afterwards
 * the threads only read.
 */
public class ClinitSafe {
    static class Base {
        static int[] shared = new int[4];

        static {
            shared[2] = 5;
        }
    }

    static class Holder extends Base {
        static int value;
        static int[] table = new int[2];

        static {
            value = 7;
            table[0] = 1;
        }

        static int sum() {
            return value + table[0] + shared[2];
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t1 = new Thread(() -> System.out.println(Holder.value + Holder.table[0]));
        Thread t2 = new Thread(() -> System.out.println(Holder.sum()));
        t1.start();
        t2.start();
        t1.join();
        t2.join();
        System.out.println(Holder.sum() + Base.shared[2]);
    }
}
