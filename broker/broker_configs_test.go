package broker

import (
	"os"
	"strings"
	"testing"
)

// The key table of docs/configuration.md is generated from the broker's
// config table; GREGOR_UPDATE_DOCS=1 rewrites it.
func TestConfigurationDocMatchesTheTable(t *testing.T) {
	t.Parallel()
	const path = "../docs/configuration.md"
	const begin, end = "<!-- broker config table: generated from broker/broker_configs.go -->\n", "<!-- end of the generated table -->\n"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated section (%q ... %q)", path, begin, end)
	}
	want := RenderBrokerConfigDocs()
	got := doc[i+len(begin) : j]
	if got == want {
		return
	}
	if os.Getenv("GREGOR_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's broker config table is not the broker's; run GREGOR_UPDATE_DOCS=1 go test ./broker -run TestConfigurationDocMatchesTheTable", path)
}

// Every config the table parses sets a field, has a default of its type
// and is filled by setDefaults; a Kafka-required or derived key is read by
// the loader.
func TestBrokerConfigTableIsConsistent(t *testing.T) {
	t.Parallel()
	var cfg Config
	cfg.setDefaults()
	b := &Broker{cfg: cfg}
	seen := map[string]bool{}
	for _, c := range BrokerConfigs() {
		if seen[c.Name] {
			t.Errorf("%s is in the table twice", c.Name)
		}
		seen[c.Name] = true
		if c.Type == "" {
			t.Errorf("%s has no type", c.Name)
		}
		if c.Doc == "" {
			t.Errorf("%s has no doc", c.Name)
		}
		if !c.Parses() {
			continue
		}
		if c.Field == "" {
			t.Errorf("%s is parsed but sets no field", c.Name)
		}
		if got, explicit := c.current(b); got != c.Default || explicit {
			t.Errorf("%s after setDefaults = %q (explicit %v), want the default %q", c.Name, got, explicit, c.Default)
		}
		var set Config
		if err := c.Parse(&set, c.Default); err != nil {
			t.Errorf("%s refuses its own default %q: %v", c.Name, c.Default, err)
		}
	}
}

func TestBrokerConfigParseRefusesAsKafka(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value, want string }{
		{"num.partitions", "lots", "not a number"},
		{"num.partitions", "0", "out of range [1, 2147483647]"},
		{"default.replication.factor", "40000", "out of range [1, 32767]"},
		{"auto.create.topics.enable", "yes", "expected true or false"},
	} {
		c := brokerConfigByName[tc.key]
		var cfg Config
		err := c.Parse(&cfg, tc.value)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s=%s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	var cfg Config
	if err := brokerConfigByName["auto.create.topics.enable"].Parse(&cfg, " FALSE "); err != nil || *cfg.AutoCreateTopics {
		t.Errorf("FALSE: %v %v", err, cfg.AutoCreateTopics)
	}
}
