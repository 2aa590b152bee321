import java.util.concurrent.atomic.AtomicInteger;

// Workers take tickets from an atomic counter, but one also bumps a plain counter.
public class AtomicRacy {
    static final AtomicInteger tickets = new AtomicInteger();
    static int plain;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            tickets.incrementAndGet();
            plain++; // RACE
        });
        t.start();
        tickets.getAndAdd(2);
        plain++; // RACE
        t.join();
        System.out.println(tickets.get() + plain);
    }
}
