// Application traffic through a KafkaJS-style client (kafkajs, or Confluent's librdkafka binding
// in its KafkaJS API).  The steps and JSON lines are those of kafkacompat.testing.client_traffic.
// Where the two APIs differ (where compression, fromBeginning and autoCommit are set), the
// client's program passes an adapter: kafka(), producer(kafka, transactionalId), send(producer,
// record), consumer(kafka, groupId), subscribe(consumer, topic), runOptions(eachMessage).
'use strict';

const TOPIC = 'traffic';
const PAYLOAD = 'kafkacompat traffic '.repeat(8);
const WAIT_MS = 20000;

function emit(event) { process.stdout.write(JSON.stringify(event) + '\n'); }

async function runTraffic(library, release, client) {
  const steps = [];
  let ok = true;
  const end = (s) => { steps.push(s); emit(s); };
  async function step(name, body) {
    emit({ started: name });
    try {
      await body();
    } catch (e) {
      ok = false;
      end({ step: name, ok: false, error: `${e && e.name}: ${e && e.message}`.slice(0, 500) });
      throw new Error('stop');
    }
    end({ step: name, ok: true });
  }
  const group = `kafkacompat-traffic-${Math.random().toString(16).slice(2, 10)}`;
  const kafka = client.kafka();
  const admin = kafka.admin();
  try {
    await admin.connect();
    await step('metadata', async () => {
      const topics = await admin.listTopics();
      if (!topics.includes(TOPIC)) {
        await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1, replicationFactor: 1 }] });
      }
      await admin.fetchTopicMetadata({ topics: [TOPIC] });
    });
    await step('produce', async () => {
      const producer = client.producer(kafka, null);
      await producer.connect();
      await client.send(producer, { topic: TOPIC, messages: [{ value: PAYLOAD, partition: 0 }] });
      await producer.disconnect();
    });
    const consumer = client.consumer(kafka, group);
    let consumed = null;
    try {
      await step('consume', async () => {
        await consumer.connect();
        await client.subscribe(consumer, TOPIC);
        consumed = await new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('no record consumed')), WAIT_MS);
          consumer.run(client.runOptions(async ({ topic, partition, message }) => {
            if (message.value && message.value.toString() === PAYLOAD) {
              clearTimeout(timer);
              resolve({ topic, partition, offset: (BigInt(message.offset) + 1n).toString() });
            }
          })).catch(reject);
        });
      });
      await step('commit', async () => { await consumer.commitOffsets([consumed]); });
    } finally {
      await consumer.disconnect().catch(() => {});
    }
    await step('describe-group', async () => { await admin.describeGroups([group]); });
    await step('delete-group', async () => { await admin.deleteGroups([group]); });
    await step('transaction', async () => {
      const producer = client.producer(kafka, `${group}-txn`);
      await producer.connect();
      const txn = await producer.transaction();
      await txn.send({ topic: TOPIC, messages: [{ value: 'kafkacompat traffic', partition: 0 }] });
      await txn.commit();
      await producer.disconnect();
    });
  } catch (e) {
    if (e.message !== 'stop') {
      ok = false;
      end({ step: 'setup', ok: false, error: `${e && e.name}: ${e && e.message}`.slice(0, 500) });
    }
  } finally {
    await admin.disconnect().catch(() => {});
  }
  emit({ report: { library, version: release, ok, steps } });
  process.exit(ok ? 0 : 1);
}

module.exports = { runTraffic };
