import java.util.concurrent.CompletableFuture;

// The main thread writes what the task reads after handing the task over: nothing orders
// them.
public class CompletableRacy {
    static int data;
    static int out;

    public static void main(String[] args) throws Exception {
        CompletableFuture<Integer> f = CompletableFuture.supplyAsync(() -> {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                return -1;
            }
            out = data + 1; // RACE
            return out;
        });
        data = 5; // RACE
        int r = f.join();
        System.out.println(out + r);
    }
}
