package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestServeClusterOverSASLSSLFromServerProperties: docs/security.md's
// cluster example ("Between the nodes"), as written there but for the
// addresses, paths and node ids, runs three `gregor serve` processes whose
// nodes log in to each other with SCRAM-SHA-512 over TLS; a client on
// CLIENT produces to a topic replicated on all three and reads it back.
func TestServeClusterOverSASLSSLFromServerProperties(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes")
	}
	ca := newTestCA(t)
	nodeKeystore, _ := ca.keystore(t, "node.pem", "localhost", true)
	example := docsExample(t, "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512")
	type node struct{ client, internal, controller string }
	nodes := map[int]node{}
	var voters []string
	for id := 1; id <= 3; id++ {
		nodes[id] = node{freePort(t), freePort(t), freePort(t)}
		voters = append(voters, fmt.Sprintf("%d@%s", id, nodes[id].controller))
	}
	const addScram = "SCRAM-SHA-512=[name=broker,password=broker-secret]"
	ready := make(chan error, 3)
	for id, n := range nodes {
		props := example
		for from, to := range map[string]string{
			"node.id=1": fmt.Sprintf("node.id=%d", id),
			"controller.quorum.voters=1@broker1:9094,2@broker2:9094,3@broker3:9094": "controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=./data":         "log.dirs=" + t.TempDir(),
			"CLIENT://:9092":          "CLIENT://" + n.client,
			"INTERNAL://:9093":        "INTERNAL://" + n.internal,
			"CONTROLLER://:9094":      "CONTROLLER://" + n.controller,
			"CLIENT://broker1:9092":   "CLIENT://" + n.client,
			"INTERNAL://broker1:9093": "INTERNAL://" + n.internal,
			"/etc/gregor/node.pem":    nodeKeystore,
			"/etc/gregor/ca.pem":      filepath.Join(ca.dir, "ca.pem"),
		} {
			if !strings.Contains(props, from) {
				t.Fatalf("the example has no %q", from)
			}
			props = strings.ReplaceAll(props, from, to)
		}
		go func() {
			_, _, err := startProcess(t, "serve --http-listen 127.0.0.1:0 --config "+writeFile(t, props)+" --add-scram "+addScram)
			if err != nil {
				err = fmt.Errorf("node %d: %w", id, err)
			}
			ready <- err
		}()
	}
	for range nodes {
		if err := <-ready; err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	login := kgo.SASL(scram.Auth{User: "broker", Pass: "broker-secret"}.AsSha512Mechanism())
	cl := newTestClient(t, nodes[2].client, kgo.DialTLSConfig(ca.clientConfig()), login, kgo.DefaultProduceTopic("between-the-nodes"),
		kgo.ConsumeTopics("between-the-nodes"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "between-the-nodes"); err != nil {
		t.Fatalf("creating a topic of replication factor 3: %v", err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d with acks=all: %v", i, err)
		}
	}
	got := 0
	for got < 10 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
}

// docsExample is the server.properties example of docs/security.md that
// contains want.
func docsExample(t *testing.T, want string) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(doc), "```properties\n")[1:] {
		if example, _, _ := strings.Cut(block, "```"); strings.Contains(example, want) {
			return example
		}
	}
	t.Fatalf("docs/security.md has no server.properties example with %q", want)
	return ""
}
