/**
 * Two threads increment a shared counter and a shared array element without a lock (racy
 * read-modify-writes), recorded with values: the values of the trace must agree with its
 * order, every read seeing the value of the write recorded last before it.
 */
public class ValuesCounter {
    static int count;
    static long[] cells = new long[2];

    public static void main(String[] args) throws Exception {
        Runnable inc = () -> {
            for (int k = 0; k < 2000; k++) {
                count = count + 1; // RACE
                cells[1] += 2; // RACE
            }
        };
        Thread t1 = new Thread(inc);
        Thread t2 = new Thread(inc);
        t1.start();
        t2.start();
        t1.join();
        t2.join();
        System.out.println(count + " " + cells[1]);
    }
}
