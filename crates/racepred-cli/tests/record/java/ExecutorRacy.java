import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

// Main submits a task, then changes the input the task reads.
public class ExecutorRacy {
    static int input;

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        input = 1;
        Future<Integer> f = pool.submit(() -> input * 2); // RACE
        input = 5; // RACE
        System.out.println(f.get());
        pool.shutdown();
    }
}
