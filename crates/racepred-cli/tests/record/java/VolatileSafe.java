// Data published through a volatile flag (static and instance, boolean and long).
public class VolatileSafe {
    static volatile boolean ready;
    static int data;
    volatile long stamp;
    int[] payload = new int[3];

    public static void main(String[] args) throws Exception {
        VolatileSafe box = new VolatileSafe();
        Thread t = new Thread(() -> {
            data = 42;
            box.payload[1] = 5;
            box.stamp = 1L;
            ready = true;
        });
        t.start();
        while (!ready) {
            Thread.onSpinWait();
        }
        long s = box.stamp;
        System.out.println(data + box.payload[1] + s);
        t.join();
    }
}
