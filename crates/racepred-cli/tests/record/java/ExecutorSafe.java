import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

// Inputs written before submit()/execute(), results read after Future.get() and after
// awaitTermination(); tasks on a pool of 3 threads, each on its own slot.
public class ExecutorSafe {
    static int[] in = new int[8];
    static int[] out = new int[8];
    static int[] late = new int[8];

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        List<Future<Integer>> fs = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            in[i] = i + 1;
            final int k = i;
            Callable<Integer> task = () -> {
                out[k] = in[k] * 10;
                return k;
            };
            fs.add(pool.submit(task));
        }
        int s = 0;
        for (Future<Integer> f : fs) {
            int k = f.get();
            s += out[k];
        }
        for (int i = 0; i < 8; i++) {
            final int k = i;
            pool.execute(() -> late[k] = out[k] + 1);
        }
        pool.shutdown();
        if (pool.awaitTermination(60, TimeUnit.SECONDS)) {
            for (int v : late) {
                s += v;
            }
        }
        System.out.println(s);
    }
}
