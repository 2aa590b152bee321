package racepred.agent;

import java.lang.instrument.Instrumentation;

/**
 * Entry point of racepred's Java recorder ({@code -javaagent:racepred-agent.jar}).
 *
 * <p>It installs {@link Transformer}, which instruments the application's classes as they
 * load, and a shutdown hook that writes the trace ({@link TraceWriter}). Where the trace
 * goes: the agent argument ({@code -javaagent:racepred-agent.jar=out.rpb}), else
 * {@code $RACEPRED_RECORD_OUT}, else {@code java.rpb} in the working directory; a name
 * ending in {@code .std} is written as STD text, anything else in the binary format.
 */
public final class Agent {
    private Agent() {}

    public static void premain(String arg, Instrumentation inst) {
        String out = arg != null && !arg.isEmpty() ? arg : System.getenv("RACEPRED_RECORD_OUT");
        if (out == null || out.isEmpty()) {
            out = "java.rpb";
        }
        // `racepred record --values`: reads, writes and branches carry values (ValuePass).
        Rt.values = "1".equals(System.getenv("RACEPRED_VALUES"));
        final String path = out;
        // The main thread is the trace's first thread even if a class loaded before main()
        // records nothing: give it its buffer now.
        Rt.buffer();
        inst.addTransformer(new Transformer(), false);
        Thread hook = new Thread(() -> TraceWriter.writeAtExit(path), "racepred-writer");
        Runtime.getRuntime().addShutdownHook(hook);
    }
}
