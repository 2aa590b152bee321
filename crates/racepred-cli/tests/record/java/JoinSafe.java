// Data handed to threads before start() and taken back after join(), in a Thread subclass
// too, and an array filled by several workers each in its own slots.
public class JoinSafe {
    static int input;
    static int[] out = new int[8];

    static class Worker extends Thread {
        final int id;
        long sum;

        Worker(int id) {
            this.id = id;
        }

        @Override
        public void run() {
            for (int i = id; i < out.length; i += 2) {
                out[i] = input + i;
                sum += out[i];
            }
        }
    }

    public static void main(String[] args) throws Exception {
        input = 10;
        Worker a = new Worker(0);
        Worker b = new Worker(1);
        a.start();
        b.start();
        a.join();
        b.join(60_000);
        input = 0;
        System.out.println(a.sum + b.sum + out[3]);
    }
}
