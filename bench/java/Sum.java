// 4 threads each sum their quarter of a shared array PASSES times, adding their partial
// sum to a total under a monitor every 16 elements: almost every bytecode an array read,
// the worst case for the recorder. Usage: java Sum PASSES
public class Sum {
    static final Object lock = new Object();
    static long total;
    static int[] data = new int[1 << 16];

    public static void main(String[] args) throws Exception {
        int passes = Integer.parseInt(args[0]);
        for (int i = 0; i < data.length; i++) {
            data[i] = i;
        }
        Thread[] ts = new Thread[4];
        for (int t = 0; t < 4; t++) {
            final int id = t;
            ts[t] = new Thread(() -> {
                long sum = 0;
                for (int p = 0; p < passes; p++) {
                    for (int i = id; i < data.length; i += 4) {
                        sum += data[i];
                        if ((i & 63) == id) {
                            synchronized (lock) {
                                total += sum;
                                sum = 0;
                            }
                        }
                    }
                }
                synchronized (lock) {
                    total += sum;
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println(total);
    }
}
