// A one-slot queue handed between threads with wait/notifyAll on a synchronized object.
public class WaitSafe {
    private int slot;
    private boolean full;

    synchronized void put(int v) throws InterruptedException {
        while (full) {
            wait();
        }
        slot = v;
        full = true;
        notifyAll();
    }

    synchronized int take() throws InterruptedException {
        while (!full) {
            wait(1000);
        }
        full = false;
        notifyAll();
        return slot;
    }

    public static void main(String[] args) throws Exception {
        WaitSafe q = new WaitSafe();
        Thread producer = new Thread(() -> {
            try {
                for (int i = 0; i < 20; i++) {
                    q.put(i);
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        });
        producer.start();
        int sum = 0;
        for (int i = 0; i < 20; i++) {
            sum += q.take();
        }
        producer.join();
        System.out.println(sum);
    }
}
