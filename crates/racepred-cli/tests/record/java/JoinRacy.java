// Main reads the worker's result before joining it.
public class JoinRacy {
    static int result;

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(() -> {
            result = 6 * 7; // RACE
        });
        t.start();
        int early = result; // RACE
        t.join();
        System.out.println(early + " " + result);
    }
}
