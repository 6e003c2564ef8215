package gregor.compat;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/** The deterministic records of compat-tests/scenarios.md ("The records"). */
final class Records {
    private Records() {}

    static final long TS_BASE = 1700000000000L;
    static final int VALUE_SIZE = 100;

    static byte[] key(int i) {
        return ("k-" + i).getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] value(int i) {
        byte[] v = new byte[VALUE_SIZE];
        for (int j = 0; j < VALUE_SIZE; j++) {
            v[j] = (byte) ('a' + (i * 7 + j * 13) % 26);
        }
        return v;
    }

    static Headers headers(int i) {
        RecordHeaders h = new RecordHeaders();
        h.add("h1", ("a-" + i).getBytes(StandardCharsets.US_ASCII));
        h.add("h2", ("b-" + i).getBytes(StandardCharsets.US_ASCII));
        return h;
    }

    static long timestamp(int i) {
        return TS_BASE + i;
    }

    /** The index i of a key "k-i", or -1 when the key is not of that form. */
    static int indexOf(byte[] key) {
        if (key == null) return -1;
        String s = new String(key, StandardCharsets.US_ASCII);
        if (!s.startsWith("k-")) return -1;
        try {
            return Integer.parseInt(s.substring(2));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static String headerText(Headers headers) {
        StringBuilder sb = new StringBuilder();
        for (Header h : headers) {
            if (sb.length() > 0) sb.append(',');
            sb.append(h.key()).append('=').append(text(h.value()));
        }
        return sb.toString();
    }

    static String text(byte[] b) {
        return b == null ? "\\N" : new String(b, StandardCharsets.ISO_8859_1);
    }

    /** The two digests of scenarios.md: over (offset,key,value,headers,timestamp) and without the timestamp. */
    static final class Digest {
        private final MessageDigest full = sha256();
        private final MessageDigest kvh = sha256();

        void add(long offset, byte[] key, byte[] value, Headers headers, long timestamp) {
            String common = offset + "\t" + text(key) + "\t" + text(value) + "\t" + headerText(headers);
            full.update((common + "\t" + timestamp + "\n").getBytes(StandardCharsets.ISO_8859_1));
            kvh.update((common + "\n").getBytes(StandardCharsets.ISO_8859_1));
        }

        String full() {
            return HexFormat.of().formatHex(full.digest());
        }

        String kvh() {
            return HexFormat.of().formatHex(kvh.digest());
        }

        private static MessageDigest sha256() {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
