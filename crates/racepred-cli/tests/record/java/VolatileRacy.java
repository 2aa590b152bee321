// The writer publishes through a volatile flag but writes the data after it.
public class VolatileRacy {
    static volatile boolean ready;
    static int data;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            ready = true;
            data = 42; // RACE
        });
        t.start();
        while (!ready) {
            Thread.onSpinWait();
        }
        System.out.println(data); // RACE
        t.join();
    }
}
