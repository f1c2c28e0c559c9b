// sarama's traffic, with the configuration an application leaves at sarama's defaults
// (its protocol version included): go build, then traffic LIBRARY RELEASE HOST:PORT S.
package main

import (
	"context"
	"errors"
	"time"

	"github.com/IBM/sarama"
)

type handler struct {
	found  chan struct{}
	commit chan struct{}
	done   chan struct{}
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if string(m.Value) == string(payload) {
			s.MarkMessage(m, "")
			close(h.found)
			<-h.commit
			s.Commit()
			close(h.done)
			<-s.Context().Done()
			return nil
		}
	}
	return nil
}

func main() {
	run(func(t *traffic, bootstrap, group string) {
		brokers := []string{bootstrap}
		cfg := sarama.NewConfig()
		cfg.Producer.Return.Successes = true
		cfg.Producer.Compression = sarama.CompressionGZIP
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Enable = false
		var admin sarama.ClusterAdmin
		t.step("metadata", func() error {
			var err error
			if admin, err = sarama.NewClusterAdmin(brokers, cfg); err != nil {
				return err
			}
			topics, err := admin.ListTopics()
			if err != nil {
				return err
			}
			if _, ok := topics[topic]; !ok {
				return admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
			}
			return nil
		})
		defer admin.Close()
		t.step("produce", func() error {
			producer, err := sarama.NewSyncProducer(brokers, cfg)
			if err != nil {
				return err
			}
			defer producer.Close()
			_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(payload)})
			return err
		})
		h := &handler{make(chan struct{}), make(chan struct{}), make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		var consumer sarama.ConsumerGroup
		t.step("consume", func() error {
			var err error
			if consumer, err = sarama.NewConsumerGroup(brokers, group, cfg); err != nil {
				return err
			}
			failed := make(chan error, 1)
			go func() {
				for ctx.Err() == nil {
					if err := consumer.Consume(ctx, []string{topic}, h); err != nil {
						failed <- err
						return
					}
				}
			}()
			select {
			case <-h.found:
				return nil
			case err := <-failed:
				return err
			case <-time.After(wait):
				return errors.New("no record consumed")
			}
		})
		t.step("commit", func() error {
			close(h.commit)
			select {
			case <-h.done:
				return nil
			case <-time.After(wait):
				return errors.New("the commit did not finish")
			}
		})
		cancel()
		consumer.Close()
		t.step("describe-group", func() error {
			_, err := admin.DescribeConsumerGroups([]string{group})
			return err
		})
		t.step("delete-group", func() error { return admin.DeleteConsumerGroup(group) })
		t.step("transaction", func() error {
			txn := sarama.NewConfig()
			txn.Producer.Return.Successes = true
			txn.Producer.Idempotent = true
			txn.Producer.RequiredAcks = sarama.WaitForAll
			txn.Producer.Transaction.ID = group + "-txn"
			txn.Net.MaxOpenRequests = 1
			producer, err := sarama.NewSyncProducer(brokers, txn)
			if err != nil {
				return err
			}
			defer producer.Close()
			if err := producer.BeginTxn(); err != nil {
				return err
			}
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("kafkacompat traffic")}); err != nil {
				return err
			}
			return producer.CommitTxn()
		})
	})
}
