package broker

// Dynamic listener SSL configs: Kafka's DynamicListenerConfig for the
// stores of a TLS listener. An AlterConfigs or IncrementalAlterConfigs on
// this broker's BROKER resource may set listener.name.<listener>.ssl.*
// for the keys of ssl.ReconfigurableKeys; the listener's factory checks
// the new stores (ssl.Factory.Reconfigure: same DN and SAN, a trial
// handshake on the inter-broker listener) and new connections get them.
// Unlike Kafka, which stores them encrypted with password.encoder.secret,
// Gregor keeps them in memory only: they last until the broker restarts
// (docs/security.md, "Certificates reloaded").

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/security/ssl"
	"github.com/gregor-broker/gregor/broker/topicconfig"
)

// kindPassword is Kafka's ConfigType PASSWORD.
const kindPassword topicconfig.Kind = 9

// listenerDynamic is a TLS listener's dynamic ssl.* values.
type listenerDynamic struct {
	mu sync.Mutex // serializes changes
	// values are the dynamic ssl.* values in force, by ssl.* key.
	values map[string]string
}

// sslListenerPrefix is the listener prefix of l's dynamic configs.
func sslListenerPrefix(l *listener) string {
	return "listener.name." + strings.ToLower(l.cfg.Name) + "."
}

// sslChange is the dynamic ssl.* values one listener is to have.
type sslChange struct {
	l        *listener
	next     map[string]string
	settings ssl.Settings
}

// splitSSLChanges takes the listener SSL keys out of changes to this
// broker's resource (name is its id, or "" for the cluster default, where
// they are refused). It returns
// the rest, the listeners' new value sets (incremental: edited from those
// in force; otherwise every TLS listener's set is replaced), and a refusal
// in Kafka's words.
func (b *Broker) splitSSLChanges(name string, changes []configChange, incremental bool) ([]configChange, map[*listener]map[string]string, *alterResult) {
	var rest []configChange
	var unprefixed, perBroker []string
	next := map[*listener]map[string]string{}
	target := func(l *listener) map[string]string {
		if m, ok := next[l]; ok {
			return m
		}
		m := map[string]string{}
		if incremental {
			l.tls.dynamic.mu.Lock()
			m = maps.Clone(l.tls.dynamic.values)
			l.tls.dynamic.mu.Unlock()
			if m == nil {
				m = map[string]string{}
			}
		}
		next[l] = m
		return m
	}
	if !incremental && name == strconv.Itoa(int(b.cfg.NodeID)) {
		for _, l := range b.listeners {
			if l.tls != nil {
				target(l)
			}
		}
	}
	for _, c := range changes {
		if slices.Contains(ssl.ReconfigurableKeys, c.name) {
			unprefixed = append(unprefixed, c.name)
			continue
		}
		var l *listener
		var key string
		for _, cand := range b.listeners {
			if p := sslListenerPrefix(cand); cand.tls != nil && strings.HasPrefix(c.name, p) {
				l, key = cand, strings.TrimPrefix(c.name, p)
			}
		}
		if l == nil || !slices.Contains(ssl.ReconfigurableKeys, key) {
			rest = append(rest, c)
			continue
		}
		perBroker = append(perBroker, c.name)
		m := target(l)
		switch c.op {
		case opSet:
			m[key] = *c.value
		case opDelete:
			delete(m, key)
		default:
			return nil, nil, &alterResult{kerr.InvalidConfig, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", opNames[c.op], c.name)}
		}
	}
	if len(unprefixed) > 0 {
		sort.Strings(unprefixed)
		return nil, nil, &alterResult{kerr.InvalidRequest, fmt.Sprintf("These security configs can be dynamically updated only per-listener using the listener prefix: Set(%s)", strings.Join(unprefixed, ", "))}
	}
	if name == "" && len(perBroker) > 0 {
		sort.Strings(perBroker)
		return nil, nil, &alterResult{kerr.InvalidRequest, fmt.Sprintf("Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", strings.Join(perBroker, ", "))}
	}
	return rest, next, nil
}

// checkSSLChanges parses each listener's settings with its new dynamic
// values over its static ones and has the factory check them.
func checkSSLChanges(next map[*listener]map[string]string) ([]sslChange, *alterResult) {
	var out []sslChange
	ls := slices.Collect(maps.Keys(next))
	sort.Slice(ls, func(i, j int) bool { return ls[i].cfg.Name < ls[j].cfg.Name })
	for _, l := range ls {
		values := next[l]
		base := *l.cfg.SSL
		s, err := ssl.Parse(func(key string) (string, bool) {
			if v, ok := values[key]; ok {
				return v, true
			}
			return base.Get(key)
		})
		if err != nil {
			return nil, &alterResult{kerr.InvalidConfig, err.Error()}
		}
		if err := l.tls.factory.Validate(s); err != nil {
			return nil, &alterResult{kerr.InvalidConfig, err.Error()}
		}
		out = append(out, sslChange{l, values, s})
	}
	return out, nil
}

// applySSLChanges puts checked changes in force.
func (b *Broker) applySSLChanges(changes []sslChange) *alterResult {
	for _, c := range changes {
		d := &c.l.tls.dynamic
		d.mu.Lock()
		err := c.l.tls.factory.Reconfigure(c.settings)
		if err == nil {
			d.values = c.next
		}
		d.mu.Unlock()
		if err != nil {
			return &alterResult{kerr.InvalidConfig, err.Error()}
		}
		keys := slices.Sorted(maps.Keys(c.next))
		// The keys only: the values may be passwords or private keys.
		b.log.Info("reconfigured listener SSL", "listener", c.l.cfg.Name, "dynamic_keys", strings.Join(keys, ","))
	}
	return nil
}

// describeListenerSSL is the dynamic listener SSL configs in force, for
// DescribeConfigs of this broker: source DYNAMIC_BROKER_CONFIG, and
// passwords and PEM keys hidden (value null, sensitive).
func (b *Broker) describeListenerSSL() []describedConfig {
	var out []describedConfig
	for _, l := range b.listeners {
		if l.tls == nil {
			continue
		}
		l.tls.dynamic.mu.Lock()
		for key, v := range l.tls.dynamic.values {
			name := sslListenerPrefix(l) + key
			dc := describedConfig{name: name, value: v, source: sourceDynamicBroker, kind: topicconfig.KindString,
				doc: "The listener's " + key + ", set dynamically; it lasts until the broker restarts."}
			syn := synonym(name, v, sourceDynamicBroker)
			if slices.Contains(ssl.SensitiveKeys, key) {
				dc.value, dc.null, dc.sensitive, dc.kind = "", true, true, kindPassword
				syn.Value = nil
			}
			dc.synonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{syn}
			out = append(out, dc)
		}
		l.tls.dynamic.mu.Unlock()
	}
	return out
}
