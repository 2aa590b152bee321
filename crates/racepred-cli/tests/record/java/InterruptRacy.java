// Main interrupts a sleeping worker, then writes what the worker reads when it wakes.
public class InterruptRacy {
    static int data;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                System.out.println(data); // RACE
            }
        });
        t.start();
        t.interrupt();
        data = 42; // RACE
        t.join();
    }
}
