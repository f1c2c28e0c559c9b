// The topic through the admin client (kafka-clients 0.11 on): created when missing.
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;

public class TopicAdmin {
    public static void ensure(String bootstrap, String topic) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (AdminClient admin = AdminClient.create(p)) {
            if (!admin.listTopics().names().get(20, TimeUnit.SECONDS).contains(topic)) {
                admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            }
        }
    }
}
