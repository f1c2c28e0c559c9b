// Confluent's librdkafka binding, in its KafkaJS API: node confluent-kafka-javascript.js LIBRARY RELEASE HOST:PORT S
// It takes compression, autoCommit and fromBeginning in the client's configuration, not per call:
// the wrapper below moves them there.
'use strict';
const { runTraffic } = require('./traffic.js');
const { KafkaJS } = require('@confluentinc/kafka-javascript');

const [library, release, bootstrap] = process.argv.slice(2);
const GZIP = KafkaJS.CompressionTypes.GZIP;
const wrap = (kafka) => ({
  admin: () => kafka.admin(),
  producer: (options = {}) => {
    const producer = kafka.producer({ kafkaJS: { ...options, compression: GZIP } });
    const send = producer.send.bind(producer);
    producer.send = ({ compression, ...record }) => send(record);
    return producer;
  },
  consumer: ({ groupId }) => {
    const consumer = kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommit: false } });
    const subscribe = consumer.subscribe.bind(consumer);
    const run = consumer.run.bind(consumer);
    consumer.subscribe = ({ topics }) => subscribe({ topics });
    consumer.run = ({ autoCommit, ...config }) => run(config);
    return consumer;
  },
});
runTraffic(library, release, () => wrap(new KafkaJS.Kafka({
  kafkaJS: { clientId: `confluent-js-${release}`, brokers: [bootstrap], logLevel: KafkaJS.logLevel.NOTHING },
})), GZIP);
