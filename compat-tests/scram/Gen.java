// Gen writes the expected values of broker/security/scram's tests with
// Apache Kafka 4.4.0's own classes: SCRAM exchanges run through Kafka's
// ScramSaslServer, credentials from ScramFormatter, the parse results of
// Kafka's ScramMessages and ScramCredentialUtils, metadata records from
// MetadataRecordSerde, and AlterUserScramCredentials decisions from the
// controller's ScramControlManager. Output: tab-separated lines on stdout
// (strings base64, records hex); see run.sh.
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;

import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData;
import org.apache.kafka.common.metadata.RemoveUserScramCredentialRecord;
import org.apache.kafka.common.metadata.UserScramCredentialRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.ScramCredentialCallback;
import org.apache.kafka.common.security.scram.internals.ScramCredentialUtils;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.security.scram.internals.ScramMessages;
import org.apache.kafka.common.security.scram.internals.ScramSaslServer;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

public class Gen {
    static final Base64.Encoder B64 = Base64.getEncoder();

    static String b64(String s) { return B64.encodeToString(s.getBytes(StandardCharsets.UTF_8)); }
    static String b64(byte[] b) { return B64.encodeToString(b); }

    static void out(String... fields) { System.out.println(String.join("\t", fields)); }

    public static void main(String[] args) throws Exception {
        exchanges();
        credentials();
        messages();
        credentialStrings();
        records();
        alterations();
    }

    // exchange mech user password salt iterations clientFirst serverFirst clientFinal serverFinal
    static void exchanges() throws Exception {
        exchange(ScramMechanism.SCRAM_SHA_512, "user", "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", 4096, "", "rOprNGfwEbeRWgbNEkqO");
        exchange(ScramMechanism.SCRAM_SHA_512, "al=ice,x", "correct horse \u00e9", "c2FsdHNhbHQ=", 8192, "", "fyko+d2lbbFgONRv9qkxdawL");
        exchange(ScramMechanism.SCRAM_SHA_256, "al=ice,x", "pw", "c2FsdA==", 4096, ",foo=bar", "abc");
        exchange(ScramMechanism.SCRAM_SHA_256, "bob", "secret", "AAECAwQ=", 16384, "", "n0nce");
    }

    static void exchange(ScramMechanism mech, String user, String password, String saltB64, int iterations,
                         String exts, String clientNonce) throws Exception {
        ScramFormatter f = new ScramFormatter(mech);
        byte[] salt = Base64.getDecoder().decode(saltB64);
        byte[] salted = f.saltedPassword(password, salt, iterations);
        ScramCredential cred = f.generateCredential(salt, salted, iterations);
        CallbackHandler handler = (Callback[] cbs) -> {
            String name = null;
            for (Callback cb : cbs) {
                if (cb instanceof NameCallback nc) name = nc.getDefaultName();
                if (cb instanceof ScramCredentialCallback sc && user.equals(name)) sc.scramCredential(cred);
            }
        };
        ScramSaslServer server = new ScramSaslServer(mech, Map.of(), handler);
        String clientFirst = "n,,n=" + ScramFormatter.saslName(user) + ",r=" + clientNonce + exts;
        byte[] serverFirst = server.evaluateResponse(clientFirst.getBytes(StandardCharsets.UTF_8));
        ScramMessages.ClientFirstMessage cf = new ScramMessages.ClientFirstMessage(clientFirst.getBytes(StandardCharsets.UTF_8));
        ScramMessages.ServerFirstMessage sf = new ScramMessages.ServerFirstMessage(serverFirst);
        ScramMessages.ClientFinalMessage fin = new ScramMessages.ClientFinalMessage("n,,".getBytes(StandardCharsets.UTF_8), sf.nonce());
        fin.proof(f.clientProof(salted, cf, sf, fin));
        byte[] serverFinal = server.evaluateResponse(fin.toBytes());
        if (!server.isComplete() || !user.equals(server.getAuthorizationID())) throw new AssertionError("exchange did not complete");
        out("exchange", mech.mechanismName(), b64(user), b64(password), saltB64, Integer.toString(iterations),
            b64(clientFirst), b64(serverFirst), b64(fin.toBytes()), b64(serverFinal));
    }

    // credential mech password salt iterations saltedPasswordHex credentialString
    static void credentials() throws Exception {
        String[][] cases = {
            {"pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", "4096"},
            {"p\u00e4ss w\u00f6rd", "", "4096"},
            {"x", "QUJD", "1"},
            {"long password long password long password long password long password", "c2FsdA==", "16384"},
        };
        for (ScramMechanism mech : ScramMechanism.values()) {
            ScramFormatter f = new ScramFormatter(mech);
            for (String[] c : cases) {
                byte[] salt = Base64.getDecoder().decode(c[1]);
                int it = Integer.parseInt(c[2]);
                byte[] salted = f.saltedPassword(c[0], salt, it);
                ScramCredential cred = f.generateCredential(salt, salted, it);
                out("credential", mech.mechanismName(), b64(c[0]), c[1], c[2], HexFormat.of().formatHex(salted),
                    ScramCredentialUtils.credentialToString(cred));
            }
        }
    }

    // parse kind input ok|err result
    static void messages() {
        String[] clientFirst = {
            "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            "n,a=user,n=user,r=abc",
            "n,a=us=3Der,n=us=3Der,r=abc",
            "n,,m=ext,n=user,r=abc",
            "n,,n=us=2Cer=3D,r=abc,tokenauth=true",
            "n,,n=user,r=abc,a=1,b=x=y,a=2",
            "n,,n=user,r=abc,tokenauth=TRUE",
            "n,,n=user,r=abc,tokenauth=yes",
            "y,,n=user,r=abc",
            "p=tls-unique,,n=user,r=abc",
            "n,,n=user",
            "n,,n=,r=abc",
            "n,,n=user,r=",
            "n,,n=us=er,r=abc",
            "n,,n=us=2cer,r=abc",
            "n,a=,n=user,r=abc",
            "n,,n=user,r=a b",
            "n,,n=user,r=abc,",
            "n,,n=user,r=abc,1x=y",
            "n,,n=user,r=abc,x=",
            "n,,n=us\u00e9r,r=abc",
            "n,,n=user,r=abc\n",
            "N,,n=user,r=abc",
            "",
            "n,,n=user,r=abc,ext=a=b=c",
        };
        for (String s : clientFirst) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            try {
                ScramMessages.ClientFirstMessage m = new ScramMessages.ClientFirstMessage(b);
                out("parse", "client-first", b64(b), "ok", b64(m.authorizationId()), b64(m.saslName()), b64(m.nonce()),
                    b64(m.clientFirstMessageBare()), Boolean.toString(m.extensions().tokenAuthenticated()));
            } catch (Exception e) {
                out("parse", "client-first", b64(b), "err", b64(strip(e.getMessage(), s)));
            }
        }
        String[] serverFirst = {
            "r=abcdef,s=c2FsdA==,i=4096",
            "m=x,r=abcdef,s=c2FsdA==,i=4096,ext=1",
            "r=abcdef,s=,i=1",
            "r=abcdef,s=c2FsdA==,i=0",
            "r=abcdef,s=c2FsdA==,i=000004096",
            "r=abcdef,s=c2FsdA==,i=2147483647",
            "r=abcdef,s=c2FsdA==,i=2147483648",
            "r=abcdef,s=c2FsdA==,i=-1",
            "r=abcdef,s=c2FsdA=,i=4096",
            "r=abcdef,s=c2FsdB==,i=4096",
            "r=,s=c2FsdA==,i=4096",
            "r=abcdef,s=c2FsdA==",
        };
        for (String s : serverFirst) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            try {
                ScramMessages.ServerFirstMessage m = new ScramMessages.ServerFirstMessage(b);
                out("parse", "server-first", b64(b), "ok", b64(m.nonce()), b64(m.salt()), Integer.toString(m.iterations()));
            } catch (Exception e) {
                out("parse", "server-first", b64(b), "err", b64(strip(e.getMessage(), s)));
            }
        }
        String[] clientFinal = {
            "c=biws,r=abcdef,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            "c=biws,r=abcdef,ext=1,p=AAAA",
            "c=,r=abcdef,p=",
            "c=biwt,r=abcdef,p=AAAB",
            "c=biws,r=abcdef",
            "c=biws,p=AAAA",
            "c=biw,r=abcdef,p=AAAA",
            "c=biws,r=abcdef,p=AAA",
            "c=biws,r=abc def,p=AAAA",
            "r=abcdef,c=biws,p=AAAA",
            "c=biws,r=abcdef,p=AAAA,x=y",
        };
        for (String s : clientFinal) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            try {
                ScramMessages.ClientFinalMessage m = new ScramMessages.ClientFinalMessage(b);
                out("parse", "client-final", b64(b), "ok", b64(m.channelBinding()), b64(m.nonce()), b64(m.proof()),
                    b64(m.clientFinalMessageWithoutProof()));
            } catch (Exception e) {
                out("parse", "client-final", b64(b), "err", b64(strip(e.getMessage(), s)));
            }
        }
        String[] serverFinal = {
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
            "v=AAAA,ext=1",
            "v=",
            "e=invalid-proof",
            "e=other-error,ext=1",
            "e=",
            "e=a=b",
            "x=AAAA",
            "v=AAA",
        };
        for (String s : serverFinal) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            try {
                ScramMessages.ServerFinalMessage m = new ScramMessages.ServerFinalMessage(b);
                out("parse", "server-final", b64(b), "ok", m.error() == null ? "null" : b64(m.error()),
                    m.serverSignature() == null ? "null" : b64(m.serverSignature()));
            } catch (Exception e) {
                out("parse", "server-final", b64(b), "err", b64(strip(e.getMessage(), s)));
            }
        }
    }

    // strip drops the message text Kafka appends to a refusal.
    static String strip(String msg, String input) {
        String suffix = ": " + input;
        return msg.endsWith(suffix) ? msg.substring(0, msg.length() - suffix.length()) : msg;
    }

    // credstring input ok|err credentialToString-of-result|exception-class
    static void credentialStrings() {
        String[] cases = {
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=4096",
            "iterations=4096,server_key=AQID,stored_key=AAAA,salt=c2FsdA==",
            "salt=c2FsdA,stored_key=AAAA,server_key=AQI,iterations=4096",
            "salt=,stored_key=,server_key=,iterations=0",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=+4096",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=-5",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=2147483648",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=x",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=4096,,,",
            ",salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=4096",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,iterations=1,extra=1",
            "salt=a,stored_key=AAAA,server_key=AQID,iterations=1,salt=c2FsdA==",
            "salt=c2FsdA==,stored_key=AAAA,server_key=AQID,salt=x,iterations=1",
            "salt=c2Fsd,stored_key=AAAA,server_key=AQID,iterations=1",
            "salt=c2F=sdA,stored_key=AAAA,server_key=AQID,iterations=1",
            "salt=c2FsdA===,stored_key=AAAA,server_key=AQID,iterations=1",
            "salt=c2FsdA=,stored_key=AAAA,server_key=AQID,iterations=1",
            "salt=c2Fsd==,stored_key=AAAA,server_key=AQID,iterations=1",
            "salt=c2Fs dA==,stored_key=AAAA,server_key=AQID,iterations=1",
            "salt=c2FsdA==,stored_key=AA-_,server_key=AQID,iterations=1",
            "salt=c2FsdB==,stored_key=AAAA,server_key=AQID,iterations=1",
            "=x,salt=c2FsdA==,stored_key=AAAA,server_key=AQID",
            "",
            ",,,",
            "salt",
        };
        for (String s : cases) {
            try {
                ScramCredential c = ScramCredentialUtils.credentialFromString(s);
                out("credstring", b64(s), "ok", ScramCredentialUtils.credentialToString(c));
            } catch (Exception e) {
                out("credstring", b64(s), "err", e.getClass().getSimpleName());
            }
        }
    }

    static String hex(ApiMessage m) {
        MetadataRecordSerde serde = new MetadataRecordSerde();
        ApiMessageAndVersion mv = new ApiMessageAndVersion(m, (short) 0);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buf = ByteBuffer.allocate(serde.recordSize(mv, cache));
        serde.write(mv, cache, new ByteBufferAccessor(buf));
        return HexFormat.of().formatHex(buf.array());
    }

    // record nameB64 mech salt stored server iterations hex; remove nameB64 mech hex
    static void records() {
        Object[][] recs = {
            {"alice", (byte) 1, "c2FsdA==", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "Hx4dHBsaGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA=", 4096},
            {"", (byte) 2, "", "", "", 0},
            {"b\u00f6b", (byte) 0, "AA==", "AQ==", "Ag==", -1},
            {"x".repeat(200), (byte) -1, "c2FsdHNhbHRzYWx0", "AAAA", "AAAA", Integer.MAX_VALUE},
        };
        for (Object[] r : recs) {
            UserScramCredentialRecord rec = new UserScramCredentialRecord()
                .setName((String) r[0]).setMechanism((Byte) r[1])
                .setSalt(Base64.getDecoder().decode((String) r[2]))
                .setStoredKey(Base64.getDecoder().decode((String) r[3]))
                .setServerKey(Base64.getDecoder().decode((String) r[4]))
                .setIterations((Integer) r[5]);
            out("record", b64((String) r[0]), r[1].toString(), (String) r[2], (String) r[3], (String) r[4], r[5].toString(), hex(rec));
            RemoveUserScramCredentialRecord rm = new RemoveUserScramCredentialRecord()
                .setName((String) r[0]).setMechanism((Byte) r[1]);
            out("remove", b64((String) r[0]), r[1].toString(), hex(rm));
        }
    }

    record Op(String kind, String name, byte mech, int iterations, byte[] salt, byte[] salted) {}

    static Op exists(String name, int mech) { return new Op("exists", name, (byte) mech, 0, null, null); }
    static Op del(String name, int mech) { return new Op("delete", name, (byte) mech, 0, null, null); }
    static Op up(String name, int mech, int it, String salt, String salted) {
        return new Op("upsert", name, (byte) mech, it, salt.getBytes(StandardCharsets.UTF_8), salted.getBytes(StandardCharsets.UTF_8));
    }

    static void alterations() throws Exception {
        alter("upsert-ok", true, up("alice", 1, 4096, "salt", "salted-password"), up("bob", 2, 16384, "", "x"));
        alter("iterations", true, up("few", 1, 4095, "s", "p"), up("many", 2, 16385, "s", "p"), up("neg", 1, -1, "s", "p"));
        alter("empty-name", true, up("", 1, 4096, "s", "p"), del("", 2));
        alter("unknown-mechanism", true, up("a", 0, 4096, "s", "p"), up("b", 3, 4096, "s", "p"), del("c", -1));
        alter("empty-salted-password", true, up("a", 1, 4096, "s", ""), up("b", 1, 4096, "", "p"));
        alter("delete", true, exists("alice", 1), del("alice", 1), del("bob", 1), del("alice2", 2), exists("alice2", 1));
        alter("duplicates", true, exists("a", 1), exists("a", 2), del("a", 1), del("a", 2),
              up("b", 1, 4096, "s", "p"), up("b", 2, 4096, "s", "p"),
              exists("c", 1), del("c", 1), up("c", 2, 4096, "s", "p"),
              up("d", 1, 4096, "s", "p"), up("d", 1, 4096, "s", "p"), up("d", 1, 4096, "s", "p"),
              up("e", 1, 10, "s", "p"), up("e", 1, 4096, "s", "p"));
        alter("duplicate-after-error", true, del("x", 1), del("x", 1), up("x", 1, 4096, "s", "p"));
        alter("no-scram", false, exists("a", 1), del("a", 1), up("b", 1, 4096, "s", "p"), up("", 9, 1, "s", ""));
        alter("empty", true);
    }

    static void alter(String name, boolean supported, Op... ops) throws Exception {
        LogContext lc = new LogContext();
        Class<?> builderClass = Class.forName("org.apache.kafka.controller.ScramControlManager$Builder");
        Constructor<?> bc = builderClass.getDeclaredConstructor();
        bc.setAccessible(true);
        Object b = bc.newInstance();
        Method m = builderClass.getDeclaredMethod("setLogContext", LogContext.class);
        m.setAccessible(true);
        m.invoke(b, lc);
        m = builderClass.getDeclaredMethod("setSnapshotRegistry", SnapshotRegistry.class);
        m.setAccessible(true);
        m.invoke(b, new SnapshotRegistry(lc));
        m = builderClass.getDeclaredMethod("build");
        m.setAccessible(true);
        Object mgr = m.invoke(b);
        Class<?> mgrClass = mgr.getClass();

        out("alter-case", name, supported ? "1" : "0");
        AlterUserScramCredentialsRequestData req = new AlterUserScramCredentialsRequestData();
        for (Op op : ops) {
            switch (op.kind) {
                case "exists" -> {
                    UserScramCredentialRecord rec = new UserScramCredentialRecord().setName(op.name).setMechanism(op.mech)
                        .setSalt(new byte[]{1}).setStoredKey(new byte[32]).setServerKey(new byte[32]).setIterations(4096);
                    mgrClass.getMethod("replay", UserScramCredentialRecord.class).invoke(mgr, rec);
                    out("alter-exists", name, b64(op.name), Byte.toString(op.mech));
                }
                case "delete" -> {
                    req.deletions().add(new AlterUserScramCredentialsRequestData.ScramCredentialDeletion()
                        .setName(op.name).setMechanism(op.mech));
                    out("alter-delete", name, b64(op.name), Byte.toString(op.mech));
                }
                default -> {
                    req.upsertions().add(new AlterUserScramCredentialsRequestData.ScramCredentialUpsertion()
                        .setName(op.name).setMechanism(op.mech).setIterations(op.iterations)
                        .setSalt(op.salt).setSaltedPassword(op.salted));
                    out("alter-upsert", name, b64(op.name), Byte.toString(op.mech), Integer.toString(op.iterations),
                        b64(op.salt), b64(op.salted));
                }
            }
        }
        MetadataVersion mv = supported ? MetadataVersion.LATEST_PRODUCTION : MetadataVersion.MINIMUM_VERSION;
        Method alter = mgrClass.getMethod("alterCredentials", AlterUserScramCredentialsRequestData.class, MetadataVersion.class);
        alter.setAccessible(true);
        Object result = alter.invoke(mgr, req, mv);
        Method response = result.getClass().getMethod("response");
        Method recordsM = result.getClass().getMethod("records");
        response.setAccessible(true);
        recordsM.setAccessible(true);
        AlterUserScramCredentialsResponseData resp = (AlterUserScramCredentialsResponseData) response.invoke(result);
        for (AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult r : resp.results()) {
            out("alter-result", name, b64(r.user()), Short.toString(r.errorCode()),
                r.errorMessage() == null ? "null" : b64(r.errorMessage()));
        }
        @SuppressWarnings("unchecked")
        List<ApiMessageAndVersion> recs = (List<ApiMessageAndVersion>) recordsM.invoke(result);
        for (ApiMessageAndVersion r : recs) out("alter-record", name, hex(r.message()));
    }
}
