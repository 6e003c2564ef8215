// Package topicconfig is the table of Kafka's topic configs as Gregor
// knows them: each config's name, type (Kind), default and bounds (Def),
// its validation with the messages clients are given, its broker-level
// synonym (Kafka's ServerTopicConfigSynonyms) and whether Kafka gives
// that synonym a default of its own, and its one-line description.
//
// It also owns a topic's explicit config set (Configs): validating one as
// CreateTopics and the config alterations receive it, and resolving each
// config's value and source, topic over broker-wide default over the
// table's default, as DescribeConfigs reports them. The throttled-replica
// lists, topic configs with a syntax of their own, are validated and
// parsed here (ThrottledReplicas).
//
// The broker owns the rest: the broker config table (which takes its
// topic-config synonyms, kinds and defaults from here), where a topic's
// configs are stored, the requests that change and describe them, and
// the parsed subset of them its data path reads.
//
// Imports: nothing of this project.
//
// Locks: none. The tables are built at package initialization and never
// changed; Configs values are maps the caller owns and guards.
package topicconfig
