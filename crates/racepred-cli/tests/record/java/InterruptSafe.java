// Data handed to threads by interrupting them: one sleeping (InterruptedException), one
// polling isInterrupted(), one polling Thread.interrupted(); they are never joined.
public class InterruptSafe {
    static int forSleeper;
    static int forPoller;
    static int forStatic;

    public static void main(String[] args) throws Exception {
        Thread sleeper = new Thread(() -> {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                System.out.println(forSleeper);
            }
        });
        Thread poller = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                Thread.onSpinWait();
            }
            System.out.println(forPoller);
        });
        Thread checker = new Thread(() -> {
            while (!Thread.interrupted()) {
                Thread.onSpinWait();
            }
            System.out.println(forStatic);
        });
        sleeper.start();
        poller.start();
        checker.start();
        forSleeper = 1;
        sleeper.interrupt();
        forPoller = 2;
        poller.interrupt();
        forStatic = 3;
        checker.interrupt();
    }
}
