// kafkajs's traffic: node kafkajs.js LIBRARY RELEASE HOST:PORT REQUEST_TIMEOUT_S
'use strict';
const { runTraffic } = require('./traffic.js');
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const [library, release, bootstrap, timeout] = process.argv.slice(2);
const requestTimeout = Math.max(Number(timeout) * 1000 || 0, 30000);
runTraffic(library, release, {
  kafka: () => new Kafka({
    clientId: `kafkajs-${release}`, brokers: [bootstrap], logLevel: logLevel.NOTHING, requestTimeout,
    connectionTimeout: 10000, retry: { retries: 2 },
  }),
  producer: (kafka, transactionalId) => (transactionalId
    ? kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
    : kafka.producer()),
  send: (producer, record) => producer.send({ ...record, compression: CompressionTypes.GZIP }),
  consumer: (kafka, groupId) => kafka.consumer({ groupId }),
  // kafkajs 1.x knows no `topics: [...]`
  subscribe: (consumer, topic) => consumer.subscribe({ topic, fromBeginning: true }),
  runOptions: (eachMessage) => ({ autoCommit: false, eachMessage }),
});
