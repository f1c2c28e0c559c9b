// kafkacompat's handshake bench: a franz-go client (the library kcl is built on),
// created ROUNDS times against one seed broker.  Each one asks for the brokers'
// metadata and is closed.  The bench counts the round trips at a proxy.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	seed := os.Args[1]
	rounds, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rounds:", err)
		os.Exit(2)
	}
	for round := 0; round < rounds; round++ {
		client, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ClientID("kafkacompat-bench"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			os.Exit(1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = kadm.NewClient(client).BrokerMetadata(ctx)
		cancel()
		client.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "metadata:", err)
			os.Exit(1)
		}
	}
}
