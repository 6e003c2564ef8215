// JaasFixtures runs Kafka 4.4's own JaasConfig parser and PlainSaslServer on
// the cases of broker/security/sasl/testdata/kafka-cases.txt and writes what
// Kafka makes of each to broker/security/sasl/testdata/kafka-fixtures.txt,
// which the Go tests compare against. See README.md in this directory.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;

import org.apache.kafka.common.security.plain.PlainLoginModule;
import org.apache.kafka.common.security.plain.internals.PlainSaslServer;
import org.apache.kafka.common.security.plain.internals.PlainServerCallbackHandler;

public class JaasFixtures {
    static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        List<String> out = new ArrayList<>();
        var ctor = Class.forName("org.apache.kafka.common.security.JaasConfig").getDeclaredConstructor(String.class, String.class);
        ctor.setAccessible(true);
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            if (line.isBlank() || line.startsWith("#")) continue;
            String[] f = line.split(" ", 2);
            byte[] input = HEX.parseHex(f.length > 1 ? f[1] : "");
            String result;
            if (f[0].equals("jaas")) {
                try {
                    Configuration c = (Configuration) ctor.newInstance("ctx", new String(input, StandardCharsets.UTF_8));
                    StringBuilder sb = new StringBuilder("ok");
                    for (AppConfigurationEntry e : c.getAppConfigurationEntry("ctx")) {
                        sb.append(' ').append(HEX.formatHex(e.getLoginModuleName().getBytes(StandardCharsets.UTF_8)))
                          .append(':').append(e.getControlFlag().toString().replace("LoginModuleControlFlag: ", "").toUpperCase());
                        Map<String, Object> opts = new TreeMap<>();
                        // A null key (a number or symbol before '=') is written as "-".
                        for (var o : e.getOptions().entrySet()) {
                            String k = o.getKey() == null ? "-" : HEX.formatHex(((String) o.getKey()).getBytes(StandardCharsets.UTF_8));
                            opts.put(k, o.getValue());
                        }
                        for (var o : opts.entrySet())
                            sb.append(':').append(o.getKey())
                              .append('=').append(HEX.formatHex(((String) o.getValue()).getBytes(StandardCharsets.UTF_8)));
                    }
                    result = sb.toString();
                } catch (java.lang.reflect.InvocationTargetException ite) {
                    result = "error " + ite.getCause().getMessage();
                }
            } else {
                PlainServerCallbackHandler h = new PlainServerCallbackHandler();
                h.configure(Map.of(), "PLAIN", List.of(new AppConfigurationEntry(PlainLoginModule.class.getName(),
                        AppConfigurationEntry.LoginModuleControlFlag.REQUIRED, Map.of("user_alice", "alice-secret", "user_\u00e9", "p\u00e9"))));
                PlainSaslServer s = new PlainSaslServer(h);
                try {
                    s.evaluateResponse(input);
                    result = "ok " + HEX.formatHex(s.getAuthorizationID().getBytes(StandardCharsets.UTF_8));
                } catch (Exception e) {
                    result = "error " + e.getMessage();
                }
            }
            out.add(line + "\t" + result);
        }
        Files.write(Path.of(args[1]), out);
    }
}
