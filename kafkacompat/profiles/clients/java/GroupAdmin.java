// Describe and delete a consumer group through the admin client (kafka-clients 2.0 on, KIP-222).
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AdminClient;

public class GroupAdmin {
    static AdminClient admin(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return AdminClient.create(p);
    }

    public static void describe(String bootstrap, String group) throws Exception {
        try (AdminClient admin = admin(bootstrap)) {
            admin.describeConsumerGroups(Collections.singleton(group)).all().get(20, TimeUnit.SECONDS);
        }
    }

    public static void delete(String bootstrap, String group) throws Exception {
        try (AdminClient admin = admin(bootstrap)) {
            admin.deleteConsumerGroups(Collections.singleton(group)).all().get(20, TimeUnit.SECONDS);
        }
    }
}
