// A worker increments a counter under a monitor; main increments it without one.
public class SyncRacy {
    static final Object lock = new Object();
    static int count;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            synchronized (lock) {
                count++; // RACE
            }
        });
        t.start();
        count++; // RACE
        t.join();
        System.out.println(count);
    }
}
