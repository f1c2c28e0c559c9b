// franz-go's traffic (kgo, and kadm for the admin steps): go build, then traffic LIBRARY RELEASE HOST:PORT S.
package main

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	run(func(t *traffic, bootstrap, group string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*wait)
		defer cancel()
		admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
		if err != nil {
			panic(err)
		}
		defer admin.Close()
		adm := kadm.NewClient(admin)
		t.step("metadata", func() error {
			topics, err := adm.ListTopics(ctx)
			if err != nil {
				return err
			}
			if !topics.Has(topic) {
				_, err = adm.CreateTopics(ctx, 1, 1, nil, topic)
			}
			return err
		})
		t.step("produce", func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ProducerBatchCompression(kgo.GzipCompression()))
			if err != nil {
				return err
			}
			defer cl.Close()
			return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: payload}).FirstErr()
		})
		consumer, err := kgo.NewClient(
			kgo.SeedBrokers(bootstrap), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		)
		if err != nil {
			panic(err)
		}
		t.step("consume", func() error {
			deadline := time.Now().Add(wait)
			for time.Now().Before(deadline) {
				pollCtx, done := context.WithTimeout(ctx, time.Second)
				fetches := consumer.PollFetches(pollCtx)
				done()
				for _, fe := range fetches.Errors() {
					if !errors.Is(fe.Err, context.DeadlineExceeded) {
						return fe.Err
					}
				}
				found := false
				fetches.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == string(payload) })
				if found {
					return nil
				}
			}
			return errors.New("no record consumed")
		})
		t.step("commit", func() error { return consumer.CommitUncommittedOffsets(ctx) })
		consumer.Close()
		t.step("describe-group", func() error {
			described, err := adm.DescribeGroups(ctx, group)
			if err != nil {
				return err
			}
			return described.Error()
		})
		t.step("delete-group", func() error {
			deleted, err := adm.DeleteGroups(ctx, group)
			if err != nil {
				return err
			}
			return deleted.Error()
		})
		t.step("transaction", func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.TransactionalID(group+"-txn"))
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("kafkacompat traffic")}).FirstErr(); err != nil {
				return err
			}
			return cl.EndTransaction(ctx, kgo.TryCommit)
		})
	})
}
