package samsa.compat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * Checks runs named checks one after the other in this JVM and reports each on stdout in the
 * line format that compat-tests/java_test.go parses:
 *
 * <pre>
 * === CHECK name
 * ... progress lines ...
 * --- PASS name (1234 ms)
 * --- FAIL name (1234 ms): what went wrong
 * </pre>
 *
 * A check fails by throwing; {@link #require} throws {@link CheckFailed} with a message that says
 * what was expected and what the broker answered.
 */
final class Checks {
    /** Body is one check. */
    interface Body {
        void run() throws Exception;
    }

    /** CheckFailed is a failed expectation, reported without a stack trace. */
    static final class CheckFailed extends RuntimeException {
        CheckFailed(String message) {
            super(message);
        }
    }

    private final Map<String, Body> checks = new LinkedHashMap<>();

    void add(String name, Body body) {
        checks.put(name, body);
    }

    /** run runs the named checks (all of them for "all") and returns the number that failed. */
    int run(List<String> names) {
        List<String> todo = new ArrayList<>();
        if (names.isEmpty() || names.contains("all")) {
            todo.addAll(checks.keySet());
        } else {
            for (String n : names) {
                if (!checks.containsKey(n)) {
                    System.out.println("--- FAIL " + n + " (0 ms): no such check; known: " + checks.keySet());
                    return 1;
                }
                todo.add(n);
            }
        }
        int failed = 0;
        for (String name : todo) {
            System.out.println("=== CHECK " + name);
            System.out.flush();
            long start = System.nanoTime();
            String failure = null;
            try {
                checks.get(name).run();
            } catch (CheckFailed e) {
                failure = e.getMessage();
            } catch (Throwable e) {
                Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                StringWriter sw = new StringWriter();
                cause.printStackTrace(new PrintWriter(sw));
                failure = cause + "\n" + sw;
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            if (failure == null) {
                System.out.println("--- PASS " + name + " (" + ms + " ms)");
            } else {
                failed++;
                System.out.println("--- FAIL " + name + " (" + ms + " ms): " + failure.replace("\n", "\n    "));
            }
            System.out.flush();
        }
        return failed;
    }

    static void require(boolean ok, String format, Object... args) {
        if (!ok) {
            throw new CheckFailed(String.format(format, args));
        }
    }

    static void log(String format, Object... args) {
        System.out.println("    " + String.format(format, args));
        System.out.flush();
    }
}
