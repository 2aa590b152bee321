package racepred.agent;

import java.util.concurrent.Callable;

/**
 * A task handed to an executor by instrumented code, wrapped so that its start is an
 * acquire of its submission (a {@code vw} of this task by the submitting thread) and its end
 * a release that {@code Future.get} and {@code awaitTermination} acquire.
 */
final class Task implements Runnable, Callable<Object> {
    private final Runnable runnable;
    private final Callable<?> callable;
    private final Object result;
    /** The executor (its ends are what {@code awaitTermination} waits for). */
    final Object executor;
    /** Released when the task ends. */
    final Object done = new Object();

    Task(Object executor, Runnable r, Callable<?> c, Object result) {
        this.executor = executor;
        this.runnable = r;
        this.callable = c;
        this.result = result;
    }

    private void begin() {
        Rt.acquiredSync(this, -1);
    }

    private void end() {
        Rt.releasedSync(done, -1);
        Rt.releasedSync(executor, -1);
    }

    @Override
    public void run() {
        begin();
        try {
            if (runnable != null) {
                runnable.run();
            } else {
                callable.call();
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new RuntimeException(e);
        } finally {
            end();
        }
    }

    @Override
    public Object call() throws Exception {
        begin();
        try {
            if (callable != null) {
                return callable.call();
            }
            runnable.run();
            return result;
        } finally {
            end();
        }
    }
}
