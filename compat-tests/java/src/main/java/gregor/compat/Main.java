package gregor.compat;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;

/**
 * The `java` adapter: {@code run-java <scenario> --bootstrap HOST:PORT --topic T --data-dir DIR}.
 * Prints one JSON object on its last stdout line and exits 0 (pass), 1 (fail) or 3 (not applicable),
 * as compat-tests/README.md ("The adapter contract") says.
 */
public final class Main {
    static final int EXIT_PASS = 0;
    static final int EXIT_FAIL = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_NA = 3;

    /** Thrown by a scenario that this client cannot express. */
    static final class NotApplicable extends RuntimeException {
        NotApplicable(String why) {
            super(why);
        }
    }

    /** What a scenario hands back: its observations and the checks that failed. */
    static final class Outcome {
        final Map<String, Object> observed = new LinkedHashMap<>();
        final List<String> failures = new ArrayList<>();

        Outcome put(String key, Object value) {
            observed.put(key, value);
            return this;
        }

        /** Records a failed check unless {@code actual} equals {@code expected}. */
        void expect(String what, Object expected, Object actual) {
            if (expected == null ? actual != null : !expected.equals(actual)) {
                failures.add(what + ": expected " + Json.write(expected) + ", got " + Json.write(actual));
            }
        }

        void check(boolean condition, String failure) {
            if (!condition) failures.add(failure);
        }
    }

    record Args(String scenario, String bootstrap, String topic, String dataDir) {}

    public static void main(String[] argv) {
        PrintStream out = System.out;
        Args args;
        try {
            args = parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("usage: run-java <scenario> --bootstrap HOST:PORT --topic T [--data-dir DIR]: " + e.getMessage());
            finish(out, false, Map.of(), "usage: " + e.getMessage(), EXIT_USAGE);
            return;
        }
        Outcome outcome;
        try {
            outcome = Scenarios.run(args);
        } catch (NotApplicable e) {
            finish(out, false, Map.of(), "n/a: " + e.getMessage(), EXIT_NA);
            return;
        } catch (Throwable t) {
            t.printStackTrace();
            finish(out, false, Map.of(), "exception: " + describe(t), EXIT_FAIL);
            return;
        }
        boolean ok = outcome.failures.isEmpty();
        finish(out, ok, outcome.observed, String.join("; ", outcome.failures), ok ? EXIT_PASS : EXIT_FAIL);
    }

    private static void finish(PrintStream out, boolean ok, Map<String, Object> observed, String error, int code) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("ok", ok);
        result.put("observed", observed);
        result.put("error", error == null ? "" : error);
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("client", "java");
        info.put("kafka-clients", org.apache.kafka.common.utils.AppInfoParser.getVersion());
        result.put("info", info);
        out.println();
        out.println(Json.write(result));
        out.flush();
        // some client threads are not daemons; leave at once
        Runtime.getRuntime().halt(code);
    }

    static Args parse(String[] argv) {
        if (argv.length < 1) throw new IllegalArgumentException("missing scenario");
        String scenario = argv[0], bootstrap = null, topic = null, dataDir = null;
        for (int i = 1; i < argv.length; i++) {
            String a = argv[i];
            if (i + 1 >= argv.length) throw new IllegalArgumentException("missing value for " + a);
            switch (a) {
                case "--bootstrap" -> bootstrap = argv[++i];
                case "--topic" -> topic = argv[++i];
                case "--data-dir" -> dataDir = argv[++i];
                default -> throw new IllegalArgumentException("unknown option " + a);
            }
        }
        if (bootstrap == null) throw new IllegalArgumentException("--bootstrap is required");
        if (topic == null) throw new IllegalArgumentException("--topic is required");
        return new Args(scenario, bootstrap, topic, dataDir);
    }

    /** Kafka's name for the error behind an exception (TOPIC_ALREADY_EXISTS, ...), or its class name. */
    static String errorName(Throwable t) {
        Throwable c = unwrap(t);
        if (c instanceof ApiException) {
            Errors e = Errors.forException(c);
            if (e != Errors.UNKNOWN_SERVER_ERROR || c.getClass() == org.apache.kafka.common.errors.UnknownServerException.class) {
                return e.name();
            }
        }
        return c.getClass().getSimpleName();
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static String describe(Throwable t) {
        Throwable c = unwrap(t);
        String s = c.getClass().getName() + ": " + c.getMessage();
        Throwable root = c;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        if (root != c) s += " (caused by " + root.getClass().getName() + ": " + root.getMessage() + ")";
        return s;
    }
}
