package listeners

// listenerPrefix is ListenerName.configPrefix: "listener.name." and the
// listener name lower-cased.
func listenerPrefix(listener string) string {
	return "listener.name." + javaLower(javaUpper(listener)) + "."
}

// Get returns key's value for listener as Kafka's channel builders see it:
// listener.name.<listener in lower case>.<key> if set, else key if set.
// The listener name is matched case-insensitively, but the prefix in the
// configuration must be lower case (Kafka ignores listener.name.INTERNAL.*),
// and only keys KafkaConfig defines take the override (kafka_keys.go): for
// any other key Kafka passes the prefixed key through unchanged, so only
// the plain key is found. The value is trimmed, as Kafka's parsed values
// are; unset keys are reported as such and the caller applies its default.
func (c *Config) Get(listener, key string) (string, bool) {
	if kafkaKeys[key] {
		if v, ok := c.get(listenerPrefix(listener) + key); ok {
			return javaTrim(v), true
		}
	}
	if v, ok := c.get(key); ok {
		return javaTrim(v), true
	}
	return "", false
}

// GetMechanism returns a SASL mechanism's key for listener, such as
// listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config for
// ("SASL_SSL", "SCRAM-SHA-512", "sasl.jaas.config"). Kafka reads these
// keys (sasl.jaas.config, sasl.server.callback.handler.class,
// connections.max.reauth.ms) only with both prefixes: an unprefixed
// sasl.jaas.config is ignored on a broker, so there is no fallback here;
// connections.max.reauth.ms falls back to Get's answer in Kafka, and the
// caller does that.
func (c *Config) GetMechanism(listener, mechanism, key string) (string, bool) {
	if !kafkaKeys[key] {
		return "", false // Kafka strips the mechanism only from its own keys
	}
	if v, ok := c.get(listenerPrefix(listener) + javaLower(mechanism) + "." + key); ok {
		return javaTrim(v), true
	}
	return "", false
}

// Lookup is Get over get, for a caller that reads one listener's keys
// without parsing the whole listener configuration with Parse.
func Lookup(get func(key string) (string, bool), listener, key string) (string, bool) {
	return (&Config{get: get}).Get(listener, key)
}
