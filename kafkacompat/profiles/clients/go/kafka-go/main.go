// segmentio/kafka-go's traffic (no transactions in kafka-go): go build, then traffic LIBRARY RELEASE HOST:PORT S.
package main

import (
	"context"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

func main() {
	run(func(t *traffic, bootstrap, group string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*wait)
		defer cancel()
		client := &kafka.Client{Addr: kafka.TCP(bootstrap), Timeout: wait}
		t.step("metadata", func() error {
			meta, err := client.Metadata(ctx, &kafka.MetadataRequest{})
			if err != nil {
				return err
			}
			for _, tp := range meta.Topics {
				if tp.Name == topic {
					return nil
				}
			}
			_, err = client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
				Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}},
			})
			return err
		})
		t.step("produce", func() error {
			w := &kafka.Writer{Addr: kafka.TCP(bootstrap), Topic: topic, Compression: kafka.Gzip, RequiredAcks: kafka.RequireAll}
			defer w.Close()
			return w.WriteMessages(ctx, kafka.Message{Value: payload})
		})
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{bootstrap}, GroupID: group, Topic: topic, StartOffset: kafka.FirstOffset,
			MaxWait: time.Second,
		})
		var got kafka.Message
		t.step("consume", func() error {
			readCtx, done := context.WithTimeout(ctx, wait)
			defer done()
			for {
				m, err := r.FetchMessage(readCtx)
				if err != nil {
					return err
				}
				if string(m.Value) == string(payload) {
					got = m
					return nil
				}
			}
		})
		t.step("commit", func() error { return r.CommitMessages(ctx, got) })
		r.Close()
		t.step("describe-group", func() error {
			_, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
			return err
		})
		t.step("delete-group", func() error {
			_, err := client.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
			return err
		})
		t.skip("transaction", "kafka-go has no transactions")
	})
}
