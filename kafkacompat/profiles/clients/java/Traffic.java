// Application traffic through the Java client (kafka-clients), any release from 0.10.2 on.
// The steps and the JSON lines they print are those of kafkacompat.testing.client_traffic.
// Steps whose API a release lacks live in classes of their own (TopicAdmin, GroupAdmin,
// Transaction), compiled only against releases that have it; a missing one is a skipped step.
// Run: java -cp classes:lib/* Traffic LIBRARY RELEASE HOST:PORT REQUEST_TIMEOUT_S
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public class Traffic {
    static final String TOPIC = "traffic";
    static final String PAYLOAD = "kafkacompat traffic kafkacompat traffic kafkacompat traffic kafkacompat traffic";
    static final List<String> steps = new ArrayList<>();
    static boolean ok = true;
    static String library, release;

    interface Step { void run() throws Exception; }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static void emit(String line) { System.out.println(line); System.out.flush(); }

    static void end(String line) { steps.add(line); emit(line); }

    static void step(String name, Step body) throws Exception {
        emit("{\"started\": " + quote(name) + "}");
        try {
            body.run();
        } catch (Throwable e) {
            Throwable cause = e;  // the error itself, not the reflection or future wrapping it
            while ((cause instanceof java.lang.reflect.InvocationTargetException
                    || cause instanceof java.util.concurrent.ExecutionException) && cause.getCause() != null) {
                cause = cause.getCause();
            }
            String text = cause.getClass().getSimpleName() + ": " + cause.getMessage();
            end("{\"step\": " + quote(name) + ", \"ok\": false, \"error\": " + quote(text.length() > 500 ? text.substring(0, 500) : text) + "}");
            ok = false;
            throw new Stop();
        }
        end("{\"step\": " + quote(name) + ", \"ok\": true}");
    }

    static void skip(String name, String why) {
        end("{\"step\": " + quote(name) + ", \"ok\": true, \"skipped\": " + quote(why) + "}");
    }

    static class Stop extends RuntimeException {}

    static Properties common(String bootstrap, int timeoutMs) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", String.valueOf(Math.max(timeoutMs, 31000)));
        p.put("max.block.ms", "20000");
        return p;
    }

    static Class<?> optional(String name) {
        try { return Class.forName(name); } catch (ClassNotFoundException e) { return null; }
    }

    @SuppressWarnings("unchecked")
    static ConsumerRecords<String, String> poll(KafkaConsumer<String, String> consumer) throws Exception {
        try {
            Method m = KafkaConsumer.class.getMethod("poll", java.time.Duration.class);
            return (ConsumerRecords<String, String>) m.invoke(consumer, java.time.Duration.ofMillis(500));
        } catch (NoSuchMethodException e) {
            Method m = KafkaConsumer.class.getMethod("poll", long.class);
            return (ConsumerRecords<String, String>) m.invoke(consumer, 500L);
        }
    }

    public static void main(String[] args) throws Exception {
        library = args[0];
        release = args[1];
        String bootstrap = args[2];
        int timeoutMs = (int) (Double.parseDouble(args[3]) * 1000);
        String group = "kafkacompat-traffic-" + UUID.randomUUID().toString().substring(0, 8);
        String serializer = "org.apache.kafka.common.serialization.StringSerializer";
        String deserializer = "org.apache.kafka.common.serialization.StringDeserializer";
        Class<?> topicAdmin = optional("TopicAdmin");
        Class<?> groupAdmin = optional("GroupAdmin");
        Class<?> transaction = optional("Transaction");
        long deadline = 20000;
        try {
            step("metadata", () -> {
                if (topicAdmin != null) {
                    topicAdmin.getMethod("ensure", String.class, String.class).invoke(null, bootstrap, TOPIC);
                } else {  // before the admin client: the broker creates the topic when metadata names it
                    Properties p = common(bootstrap, timeoutMs);
                    p.put("key.serializer", serializer);
                    p.put("value.serializer", serializer);
                    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                        producer.partitionsFor(TOPIC);
                    }
                }
            });
            step("produce", () -> {
                Properties p = common(bootstrap, timeoutMs);
                p.put("key.serializer", serializer);
                p.put("value.serializer", serializer);
                p.put("compression.type", "gzip");
                try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                    producer.send(new ProducerRecord<>(TOPIC, 0, null, PAYLOAD)).get(deadline, java.util.concurrent.TimeUnit.MILLISECONDS);
                }
            });
            Properties c = common(bootstrap, timeoutMs);
            c.put("group.id", group);
            c.put("key.deserializer", deserializer);
            c.put("value.deserializer", deserializer);
            c.put("auto.offset.reset", "earliest");
            c.put("enable.auto.commit", "false");
            KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
            try {
                step("consume", () -> {
                    consumer.subscribe(Collections.singletonList(TOPIC));
                    long until = System.currentTimeMillis() + deadline;
                    while (true) {
                        for (ConsumerRecord<String, String> r : poll(consumer)) {
                            if (PAYLOAD.equals(r.value())) return;
                        }
                        if (System.currentTimeMillis() > until) throw new RuntimeException("no record consumed");
                    }
                });
                step("commit", consumer::commitSync);
            } finally {
                consumer.close();
            }
            if (groupAdmin == null) {
                skip("describe-group", "kafka-clients " + release + " has no describeConsumerGroups");
                skip("delete-group", "kafka-clients " + release + " has no deleteConsumerGroups");
            } else {
                step("describe-group", () -> groupAdmin.getMethod("describe", String.class, String.class).invoke(null, bootstrap, group));
                step("delete-group", () -> groupAdmin.getMethod("delete", String.class, String.class).invoke(null, bootstrap, group));
            }
            if (transaction == null) {
                skip("transaction", "kafka-clients " + release + " has no transactions");
            } else {
                step("transaction", () -> transaction.getMethod("run", String.class, String.class, String.class).invoke(null, bootstrap, TOPIC, group + "-txn"));
            }
        } catch (Stop stop) {
            // the step that failed is in the report
        }
        emit("{\"report\": {\"library\": " + quote(library) + ", \"version\": " + quote(release) + ", \"ok\": " + ok
             + ", \"steps\": " + steps + "}}");
        System.exit(ok ? 0 : 1);
    }
}
