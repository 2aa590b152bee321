/**
 * Values of reads, writes and branches (`racepred record --values`): 32-bit overflow,
 * narrowing stores, long arithmetic, an index that comes from a read (pinned), a branch
 * over two reads, a value passed to a call (pinned), a float copied as its bits and a
 * bitwise or (spelled without `|`, which separates the fields of an STD line).
 */
public class ValuesExprs {
    static int a;
    static int b;
    static int c;
    static long l;
    static byte by;
    static char ch;
    static float f;
    static float g;
    static int o;
    static int[] arr;

    public static void main(String[] args) {
        arr = new int[4];
        a = 2147483647;
        b = 3;
        c = a + b;
        l = (long) a * b - 1;
        by = (byte) (c >> 1);
        ch = (char) (a + 1);
        f = 1.5f;
        g = f;
        o = a | b;
        if (a > b) {
            arr[b] = c;
        }
        int i = arr[b];
        System.out.println(i + " " + l + " " + by + " " + (int) ch + " " + g);
    }
}
