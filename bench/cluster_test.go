package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestClusterAddresses(t *testing.T) {
	nodes := []*clusterNode{{id: 1, port: 9001, ctrlPort: 9101}, {id: 2, port: 9002, ctrlPort: 9102}, {id: 3, port: 9003, ctrlPort: 9103}}
	if got, want := quorumVoters(nodes), "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103"; got != want {
		t.Errorf("quorumVoters = %q, want %q", got, want)
	}
	boot := clusterBootstrap(nodes)
	if want := "127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003"; boot != want {
		t.Errorf("clusterBootstrap = %q, want %q", boot, want)
	}
	if got := seeds(boot); !slices.Equal(got, []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"}) {
		t.Errorf("seeds = %q", got)
	}
	if got := seeds("127.0.0.1:9092"); !slices.Equal(got, []string{"127.0.0.1:9092"}) {
		t.Errorf("seeds of one address = %q", got)
	}
}

func TestKafkaNodeProperties(t *testing.T) {
	n := &clusterNode{id: 2, port: 9002, ctrlPort: 9102, dir: "/d/node-2"}
	props := kafkaNodeProperties(n, "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103")
	kv := map[string]string{}
	for line := range strings.SplitSeq(props, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			if _, dup := kv[k]; dup {
				t.Errorf("key %s set twice", k)
			}
			kv[k] = v
		}
	}
	for k, want := range map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  "2",
		"controller.quorum.voters":                 "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103",
		"listeners":                                "PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102",
		"advertised.listeners":                     "PLAINTEXT://127.0.0.1:9002",
		"log.dirs":                                 "/d/node-2/data",
		"offsets.topic.replication.factor":         "3",
		"transaction.state.log.min.isr":            "2",
		"group.initial.rebalance.delay.ms":         "0",
		"transaction.state.log.replication.factor": "3",
	} {
		if kv[k] != want {
			t.Errorf("%s = %q, want %q", k, kv[k], want)
		}
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := freePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: want 6 distinct positive ports", ports)
		}
		seen[p] = true
	}
}

func TestKafkaClusterID(t *testing.T) {
	a, b := kafkaClusterID(), kafkaClusterID()
	if len(a) != 22 || a == b || strings.ContainsAny(a, "+/=") {
		t.Errorf("cluster ids %q, %q: want 22 URL-safe base64 characters, distinct", a, b)
	}
}

func TestReplicationShortfall(t *testing.T) {
	full := func() kadm.TopicDetail {
		td := kadm.TopicDetail{Topic: "t", Partitions: kadm.PartitionDetails{}}
		for p := range int32(partitions) {
			td.Partitions[p] = kadm.PartitionDetail{Topic: "t", Partition: p, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
		}
		return td
	}
	if err := replicationShortfall(full()); err != nil {
		t.Errorf("fully replicated: %v", err)
	}
	for name, spoil := range map[string]func(td kadm.TopicDetail){
		"one replica": func(td kadm.TopicDetail) {
			p := td.Partitions[3]
			p.Replicas, p.ISR = []int32{1}, []int32{1}
			td.Partitions[3] = p
		},
		"shrunk isr": func(td kadm.TopicDetail) {
			p := td.Partitions[0]
			p.ISR = []int32{1, 2}
			td.Partitions[0] = p
		},
		"partition error": func(td kadm.TopicDetail) {
			p := td.Partitions[5]
			p.Err = kerr.LeaderNotAvailable
			td.Partitions[5] = p
		},
		"missing partition": func(td kadm.TopicDetail) { delete(td.Partitions, 2) },
	} {
		td := full()
		spoil(td)
		if err := replicationShortfall(td); err == nil {
			t.Errorf("%s: no shortfall reported", name)
		}
	}
}

func TestClusterModeHasNoSingleNodeTargets(t *testing.T) {
	if ts := targets([]string{"cluster"}); len(ts) != 0 {
		t.Errorf("targets(cluster) = %v, want none (issue #6's targets are single-node)", ts)
	}
	all := targets([]string{"default", "cluster"})
	if len(all) != len(targets([]string{"default"})) {
		t.Errorf("adding the cluster mode changed the targets: %v", all)
	}
	for _, tg := range all {
		if tg.Mode == "cluster" {
			t.Errorf("target %v judges the cluster mode", tg)
		}
	}
}

func TestClusterOnlyTablesHaveNoTargetTable(t *testing.T) {
	rs := newResults()
	rs.add("start-up", "cluster", "to first RF=3 ack", "ms", false, "gregor", 4000)
	rs.add("start-up", "cluster", "to first RF=3 ack", "ms", false, "kafka", 16000)
	var text, md strings.Builder
	writeTable(&text, rs, nil, nil)
	writeMarkdown(&md, rs, nil, nil, nil)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if strings.Contains(out, "target") {
			t.Errorf("%s output has a target table with no targets:\n%s", name, out)
		}
		if !strings.Contains(out, "0.25x") {
			t.Errorf("%s output lacks the ratio 0.25x:\n%s", name, out)
		}
	}
}
