// Harness runs Apache Kafka's own classes on the cases of the listener and
// principal tests and prints what Kafka makes of each, in the text form the
// Go tests print, so that `go test` compares without Java.
//
//   java -cp <kafka 4.4.0 classpath> Harness.java listeners CASES
//   java -cp <kafka 4.4.0 classpath> Harness.java principal CASES
//
// A cases file is a list of blocks: "case NAME", lines, "end". Lines starting
// with # are comments. See the cases files for the line kinds.
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.x500.X500Principal;

import kafka.server.KafkaConfig;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.security.plain.PlainAuthenticateCallback;
import org.apache.kafka.common.security.plain.internals.PlainSaslServer;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.ScramCredentialCallback;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.security.scram.internals.ScramSaslServer;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

public class Harness {
    // The minimal valid combined-mode base every listeners case starts from.
    static Map<String, String> base() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("process.roles", "broker,controller");
        m.put("node.id", "1");
        m.put("controller.quorum.voters", "1@localhost:9093");
        m.put("controller.listener.names", "CONTROLLER");
        m.put("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093");
        m.put("log.dirs", "/tmp/kafkaconfig-harness");
        return m;
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(args[1]), StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder();
        List<String> block = null;
        String name = null;
        for (String line : lines) {
            if (line.startsWith("#") || (block == null && line.isBlank())) continue;
            if (line.startsWith("case ")) {
                name = line.substring(5);
                block = new ArrayList<>();
            } else if (line.equals("end")) {
                out.append("case ").append(name).append('\n');
                if (args[0].equals("listeners")) listeners(block, out);
                else principal(block, out);
                out.append("end\n");
                block = null;
            } else {
                block.add(line);
            }
        }
        System.out.print(out);
    }

    static String err(Throwable e) {
        return "error " + e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    static String ep(String kind, Endpoint e) {
        return kind + "\t" + e.listener() + "\t" + e.securityProtocol().name + "\t"
            + (e.host() == null ? "<null>" : e.host()) + "\t" + e.port();
    }

    static void listeners(List<String> block, StringBuilder out) throws Exception {
        Map<String, String> props = base();
        List<String[]> gets = new ArrayList<>();
        for (String line : block) {
            if (line.startsWith("get ")) {
                gets.add(line.substring(4).split(" "));
            } else if (line.startsWith("-")) {
                props.remove(line.substring(1));
            } else {
                int eq = line.indexOf('=');
                props.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        KafkaConfig config;
        try {
            config = new KafkaConfig(props, false);
        } catch (Exception e) {
            out.append(err(e)).append('\n');
            return;
        }
        try {
            for (Endpoint e : scala.jdk.javaapi.CollectionConverters.asJava(config.listeners()))
                out.append(ep("listener", e)).append('\n');
            for (Endpoint e : scala.jdk.javaapi.CollectionConverters.asJava(config.effectiveAdvertisedBrokerListeners()))
                out.append(ep("advertised", e)).append('\n');
            for (Endpoint e : scala.jdk.javaapi.CollectionConverters.asJava(config.effectiveAdvertisedControllerListeners()))
                out.append(ep("advertised-controller", e)).append('\n');
            out.append("inter-broker\t").append(config.interBrokerListenerName().value()).append('\t')
                .append(config.interBrokerSecurityProtocol().name).append('\n');
            out.append("controller-names\t").append(String.join(",", config.controllerListenerNames())).append('\n');
            TreeMap<String, String> map = new TreeMap<>();
            for (Map.Entry<ListenerName, SecurityProtocol> e : config.effectiveListenerSecurityProtocolMap().entrySet())
                map.put(e.getKey().value(), e.getValue().name);
            StringBuilder sb = new StringBuilder();
            for (Map.Entry<String, String> e : map.entrySet()) {
                if (sb.length() > 0) sb.append(',');
                sb.append(e.getKey()).append(':').append(e.getValue());
            }
            out.append("protocol-map\t").append(sb).append('\n');
        } catch (Exception e) {
            out.append(err(e)).append('\n');
            return;
        }
        Method cb = Class.forName("org.apache.kafka.common.network.ChannelBuilders")
            .getDeclaredMethod("channelBuilderConfigs", AbstractConfig.class, ListenerName.class);
        cb.setAccessible(true);
        Map<String, Object> defaults = KafkaConfig.configDef().defaultValues();
        for (String[] g : gets) {
            ListenerName ln = ListenerName.normalised(g[0]);
            @SuppressWarnings("unchecked")
            Map<String, Object> configs = (Map<String, Object>) cb.invoke(null, config, ln);
            String key = g.length == 3 ? g[1].toLowerCase(java.util.Locale.ROOT) + "." + g[2] : g[1];
            Object v = configs.get(key);
            boolean set = props.containsKey(ln.configPrefix() + key) || (g.length == 2 && props.containsKey(key));
            String shown;
            if (v == null || (!set && java.util.Objects.equals(v, defaults.get(key)))) shown = "<unset>";
            else if (v instanceof Password) shown = ((Password) v).value();
            else if (v instanceof Class) shown = ((Class<?>) v).getName();
            else shown = v.toString();
            out.append("get\t").append(String.join(" ", g)).append('\t').append(shown).append('\n');
        }
    }

    static void principal(List<String> block, StringBuilder out) throws Exception {
        SslPrincipalMapper mapper = null;
        for (String line : block) {
            int sp = line.indexOf(' ');
            String kind = sp < 0 ? line : line.substring(0, sp);
            String arg = sp < 0 ? "" : line.substring(sp + 1);
            switch (kind) {
                case "rules":
                case "rules-null":
                    try {
                        mapper = SslPrincipalMapper.fromRules(kind.equals("rules") ? arg : null);
                        out.append("mapper\t").append(mapper).append('\n');
                    } catch (Exception e) {
                        mapper = null;
                        out.append(err(e)).append('\n');
                    }
                    break;
                case "dn": {
                    String dn;
                    try {
                        dn = new X500Principal(HexFormat.of().parseHex(arg)).getName();
                    } catch (Exception e) {
                        out.append("dn\t").append(arg).append('\t').append(err(e)).append('\n');
                        break;
                    }
                    out.append("dn\t").append(arg).append('\t').append(dn).append('\n');
                    map(mapper, dn, out);
                    break;
                }
                case "name":
                    map(mapper, arg, out);
                    break;
                case "plain": {
                    // authzid NUL authcid NUL password, given as hex.
                    PlainSaslServer server = new PlainSaslServer(callbacks -> {
                        for (Callback c : callbacks)
                            if (c instanceof PlainAuthenticateCallback) ((PlainAuthenticateCallback) c).authenticated(true);
                    });
                    try {
                        server.evaluateResponse(HexFormat.of().parseHex(arg));
                        out.append("plain\t").append(arg).append("\tUser:").append(server.getAuthorizationID()).append('\n');
                    } catch (Exception e) {
                        out.append("plain\t").append(arg).append('\t').append(err(e)).append('\n');
                    }
                    break;
                }
                case "scram": {
                    // The client-first message, given as hex.
                    String[] user = new String[1];
                    ScramSaslServer server = new ScramSaslServer(ScramMechanism.SCRAM_SHA_256, Map.of(), callbacks -> {
                        for (Callback c : callbacks) {
                            if (c instanceof NameCallback) user[0] = ((NameCallback) c).getDefaultName();
                            if (c instanceof ScramCredentialCallback)
                                ((ScramCredentialCallback) c).scramCredential(new ScramCredential(new byte[16], new byte[32], new byte[32], 4096));
                        }
                    });
                    try {
                        server.evaluateResponse(HexFormat.of().parseHex(arg));
                        out.append("scram\t").append(arg).append("\tUser:").append(user[0]).append('\n');
                    } catch (Exception e) {
                        out.append("scram\t").append(arg).append('\t').append(err(e)).append('\n');
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown line " + line);
            }
        }
    }

    static void map(SslPrincipalMapper mapper, String dn, StringBuilder out) {
        try {
            out.append("name\t").append(dn).append("\tUser:").append(mapper.getName(dn)).append('\n');
        } catch (Exception e) {
            out.append("name\t").append(dn).append('\t').append(err(e)).append('\n');
        }
    }
}
