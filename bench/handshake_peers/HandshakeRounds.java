import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * kafkacompat's handshake bench: Java's Admin client, created ROUNDS times against one
 * bootstrap address.  Each one describes the cluster (its bootstrap connection, then the
 * node's own connection) and is closed.  The bench counts the round trips at a proxy.
 */
public final class HandshakeRounds {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int rounds = Integer.parseInt(args[1]);
        for (int round = 0; round < rounds; round++) {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafkacompat-bench");
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20000);
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
            try (Admin admin = Admin.create(props)) {
                admin.describeCluster().nodes().get();
            }
        }
    }
}
