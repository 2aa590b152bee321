// The producer signals under the monitor, then writes the data it meant to hand over.
public class WaitRacy {
    static final Object lock = new Object();
    static boolean ready;
    static int data;

    public static void main(String[] args) throws Exception {
        Thread producer = new Thread(() -> {
            synchronized (lock) {
                ready = true;
                lock.notifyAll();
            }
            data = 42; // RACE
        });
        producer.start();
        synchronized (lock) {
            while (!ready) {
                lock.wait();
            }
        }
        System.out.println(data); // RACE
        producer.join();
    }
}
