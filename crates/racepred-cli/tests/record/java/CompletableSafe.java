import java.util.concurrent.CompletableFuture;

// A value handed to a CompletableFuture task before it is submitted, its result read after
// join (and get): both ordered.
public class CompletableSafe {
    static int data;
    static int out;
    static int out2;

    public static void main(String[] args) throws Exception {
        data = 1;
        CompletableFuture<Integer> f = CompletableFuture.supplyAsync(() -> {
            out = data + 1;
            return out;
        });
        int r = f.join();
        CompletableFuture<Void> g = CompletableFuture.runAsync(() -> out2 = out + r);
        g.get();
        System.out.println(out + out2 + r);
    }
}
