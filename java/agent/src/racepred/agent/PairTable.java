package racepred.agent;

/**
 * Dense ids for keys of three numbers (kind, a, b), in order of first lookup: the writer's
 * variable table, without an object per lookup. Open addressing, linear probing.
 */
final class PairTable {
    private long[] as = new long[1 << 12];
    private long[] bs = new long[1 << 12];
    private int[] ids = new int[1 << 12]; // id + 1; 0 = empty
    private int size;

    int size() {
        return size;
    }

    /** The id of (kind, a, b), or -(new id) - 1 when it was not there (now added). */
    int idOrAdd(int kind, long a, long b) {
        long ka = a ^ ((long) kind << 56);
        int mask = ids.length - 1;
        int i = mix(ka, b) & mask;
        while (ids[i] != 0) {
            if (as[i] == ka && bs[i] == b) {
                return ids[i] - 1;
            }
            i = (i + 1) & mask;
        }
        as[i] = ka;
        bs[i] = b;
        ids[i] = ++size;
        int id = size - 1;
        if (size * 2 > ids.length) {
            grow();
        }
        return -id - 1;
    }

    private static int mix(long a, long b) {
        long h = a * 0x9E3779B97F4A7C15L + b;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        return (int) (h ^ (h >>> 32));
    }

    private void grow() {
        long[] oa = as, ob = bs;
        int[] oi = ids;
        as = new long[oa.length * 2];
        bs = new long[ob.length * 2];
        ids = new int[oi.length * 2];
        int mask = ids.length - 1;
        for (int j = 0; j < oi.length; j++) {
            if (oi[j] != 0) {
                int i = mix(oa[j], ob[j]) & mask;
                while (ids[i] != 0) {
                    i = (i + 1) & mask;
                }
                as[i] = oa[j];
                bs[i] = ob[j];
                ids[i] = oi[j];
            }
        }
    }
}
