// Confluent's librdkafka binding, in its KafkaJS API:
// node confluent-kafka-javascript.js LIBRARY RELEASE HOST:PORT REQUEST_TIMEOUT_S
// It takes compression, fromBeginning and autoCommit in the clients' configuration, not per call.
'use strict';
const { runTraffic } = require('./traffic.js');
const { Kafka, CompressionTypes, logLevel } = require('@confluentinc/kafka-javascript').KafkaJS;

const [library, release, bootstrap, timeout] = process.argv.slice(2);
const seconds = Number(timeout) || 0;
const requestTimeout = Math.max(seconds * 1000, 30000);
// As confluent-kafka (Python) is run: librdkafka's socket timeout follows a short request timeout.
const librdkafka = seconds > 0
  ? { 'socket.timeout.ms': Math.max(10, seconds * 1000), 'api.version.request.timeout.ms': Math.max(10, seconds * 1000) }
  : {};
runTraffic(library, release, {
  kafka: () => new Kafka({
    kafkaJS: {
      clientId: `confluent-kafka-javascript-${release}`, brokers: [bootstrap], logLevel: logLevel.NOTHING,
      requestTimeout, connectionTimeout: 10000, retry: { retries: 2 },
    },
    ...librdkafka,
  }),
  producer: (kafka, transactionalId) => kafka.producer({
    kafkaJS: transactionalId
      ? { transactionalId, idempotent: true, maxInFlightRequests: 1 }
      : { compression: CompressionTypes.GZIP },
  }),
  send: (producer, record) => producer.send(record),
  consumer: (kafka, groupId) => kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommit: false } }),
  subscribe: (consumer, topic) => consumer.subscribe({ topics: [topic] }),
  runOptions: (eachMessage) => ({ eachMessage }),
});
