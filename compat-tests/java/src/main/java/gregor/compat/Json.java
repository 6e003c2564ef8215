package gregor.compat;

import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** Just enough JSON output for the adapter's one result line (no dependency needed). */
final class Json {
    private Json() {}

    static String write(Object o) {
        StringBuilder sb = new StringBuilder();
        write(sb, o);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String s) {
            string(sb, s);
        } else if (o instanceof Boolean || o instanceof Integer || o instanceof Long || o instanceof Short) {
            sb.append(o);
        } else if (o instanceof Number n) {
            sb.append(n.toString());
        } else if (o instanceof Map<?, ?> m) {
            sb.append('{');
            Iterator<? extends Map.Entry<?, ?>> it = m.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> e = it.next();
                string(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue());
                if (it.hasNext()) sb.append(", ");
            }
            sb.append('}');
        } else if (o instanceof List<?> l) {
            sb.append('[');
            for (int i = 0; i < l.size(); i++) {
                if (i > 0) sb.append(", ");
                write(sb, l.get(i));
            }
            sb.append(']');
        } else {
            string(sb, o.toString());
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }
}
