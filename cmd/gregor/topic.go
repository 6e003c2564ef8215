package main

// gregor topic: create, list, describe, alter and delete topics, as
// kafka-topics.sh and kafka-configs.sh do.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func topicCommand() *cli.Command {
	return &cli.Command{
		Name:  "topic",
		Usage: "create, list, describe, alter and delete topics",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create topics",
				ArgsUsage: "NAME...",
				UsageText: `gregor topic create orders --partitions 6
gregor topic create audit --config retention.ms=604800000 --config cleanup.policy=compact
gregor topic create -b kafka-1:9092 events --partitions 12 --replication-factor 3`,
				Description: "Creates each NAME with CreateTopics. Without --partitions or --replication-factor\n" +
					"the broker's num.partitions and default.replication.factor apply.",
				Flags: append(connectionFlags(requestTimeout()),
					&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: -1, Usage: "number of partitions (default: the broker's num.partitions)"},
					&cli.IntFlag{Name: "replication-factor", Aliases: []string{"r"}, Value: -1, Usage: "replicas per partition (default: the broker's default.replication.factor)"},
					&cli.StringSliceFlag{Name: "config", Aliases: []string{"c"}, Usage: "`KEY=VALUE` topic config (repeatable)"},
				),
				Action: withArgs(runTopicCreate),
			},
			{
				Name:      "list",
				Usage:     "list the topics' names",
				UsageText: "gregor topic list\ngregor topic list --internal",
				Flags: append(connectionFlags(requestTimeout()),
					&cli.BoolFlag{Name: "internal", Usage: "include internal topics such as __consumer_offsets"},
				),
				Action: withArgs(runTopicList),
			},
			{
				Name:      "describe",
				Usage:     "show topics' partitions, offsets and configs",
				ArgsUsage: "NAME...",
				UsageText: "gregor topic describe orders\ngregor topic describe orders audit",
				Description: "For each topic: its id, partitions with leader, replicas, in-sync replicas and start and\n" +
					"end offsets, and the configs that are not at their default, with where each is set.",
				Flags:  connectionFlags(requestTimeout()),
				Action: withArgs(runTopicDescribe),
			},
			{
				Name:      "alter",
				Usage:     "change a topic's configs or add partitions",
				ArgsUsage: "NAME",
				UsageText: `gregor topic alter orders --config retention.ms=86400000
gregor topic alter orders --delete-config retention.ms
gregor topic alter orders --partitions 12`,
				Description: "Configs change with IncrementalAlterConfigs, so configs not named keep their values;\n" +
					"--partitions is the new total, added with CreatePartitions (partitions are never removed).\n" +
					"Every change is first validated by the cluster; if any is refused, nothing is applied.",
				Flags: append(connectionFlags(requestTimeout()),
					&cli.StringSliceFlag{Name: "config", Aliases: []string{"c"}, Usage: "`KEY=VALUE` topic config to set (repeatable)"},
					&cli.StringSliceFlag{Name: "delete-config", Usage: "`KEY` topic config to return to its default (repeatable)"},
					&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Usage: "new total number of partitions"},
				),
				Action: withArgs(runTopicAlter),
			},
			{
				Name:      "delete",
				Usage:     "delete topics",
				ArgsUsage: "NAME...",
				UsageText: "gregor topic delete orders\ngregor topic delete orders audit",
				Flags:     connectionFlags(requestTimeout()),
				Action:    withArgs(runTopicDelete),
			},
		},
	}
}

func runTopicCreate(c *cli.Context, names []string) error {
	if len(names) == 0 {
		return errors.New("topic create: name at least one topic")
	}
	partitions, rf := c.Int("partitions"), c.Int("replication-factor")
	if partitions == 0 || partitions < -1 || partitions > 1<<31-1 {
		return fmt.Errorf("--partitions %d: must be at least 1", partitions)
	}
	if rf == 0 || rf < -1 || rf > 1<<15-1 {
		return fmt.Errorf("--replication-factor %d: must be between 1 and 32767", rf)
	}
	kvs, err := parseKeyValues("config", c.StringSlice("config"))
	if err != nil {
		return err
	}
	configs := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		configs[kv[0]] = &kv[1]
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	resps, err := adm.CreateTopics(adm.ctx, int32(partitions), int16(rf), configs, names...)
	if err != nil {
		return adm.check(err)
	}
	fail := failures{w: c.App.ErrWriter, total: len(names)}
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			fail.add(kafkaError("topic "+r.Topic, r.Err, r.ErrMessage))
			continue
		}
		fmt.Fprintf(c.App.Writer, "Created topic %s (%d partitions, replication factor %d).\n", r.Topic, r.NumPartitions, r.ReplicationFactor)
	}
	return fail.err("topics")
}

func runTopicList(c *cli.Context, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("topic list: unexpected argument %q", args[0])
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	list := adm.ListTopics
	if c.Bool("internal") {
		list = adm.ListTopicsWithInternal
	}
	topics, err := list(adm.ctx)
	if err != nil {
		return adm.check(err)
	}
	for _, name := range topics.Names() {
		fmt.Fprintln(c.App.Writer, name)
	}
	return nil
}

func runTopicDescribe(c *cli.Context, names []string) error {
	if len(names) == 0 {
		return errors.New("topic describe: name at least one topic")
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	meta, err := adm.Metadata(adm.ctx, names...)
	if err != nil {
		return adm.check(err)
	}
	fail := failures{w: c.App.ErrWriter, total: len(names)}
	var found []string
	for _, name := range names {
		if _, err := describedTopic(meta, name); err != nil {
			fail.add(err)
			continue
		}
		found = append(found, name)
	}
	if len(found) > 0 {
		starts, err := adm.ListStartOffsets(adm.ctx, found...)
		if err != nil {
			return adm.check(err)
		}
		ends, err := adm.ListEndOffsets(adm.ctx, found...)
		if err != nil {
			return adm.check(err)
		}
		configs, err := adm.DescribeTopicConfigs(adm.ctx, found...)
		if err != nil {
			return adm.check(err)
		}
		for i, name := range found {
			if i > 0 {
				fmt.Fprintln(c.App.Writer)
			}
			printTopic(c, meta.Topics[name], starts, ends, configs)
		}
	}
	return fail.err("topics")
}

// printTopic writes one topic's description.
func printTopic(c *cli.Context, td kadm.TopicDetail, starts, ends kadm.ListedOffsets, configs kadm.ResourceConfigs) {
	w := c.App.Writer
	rf := 0
	for _, p := range td.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	// Kafka prints a topic id as URL-safe base64 without padding.
	id := base64.RawURLEncoding.EncodeToString(td.ID[:])
	fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d", td.Topic, id, len(td.Partitions), rf)
	if td.IsInternal {
		fmt.Fprint(w, "\tInternal: true")
	}
	fmt.Fprintln(w)
	rc, err := configs.On(td.Topic, nil)
	switch {
	case err != nil:
		fmt.Fprintf(w, "Configs: not described: %v\n", err)
	case rc.Err != nil:
		fmt.Fprintf(w, "Configs: not described: %v\n", kafkaError(td.Topic, rc.Err, rc.ErrMessage))
	default:
		var set []kadm.Config
		for _, cfg := range rc.Configs {
			if cfg.Source != kmsg.ConfigSourceDefaultConfig && cfg.Source != kmsg.ConfigSourceUnknown {
				set = append(set, cfg)
			}
		}
		sort.Slice(set, func(i, j int) bool { return set[i].Key < set[j].Key })
		if len(set) == 0 {
			fmt.Fprintln(w, "Configs: all at their defaults")
		} else {
			fmt.Fprintln(w, "Configs:")
			for _, cfg := range set {
				value := cfg.MaybeValue()
				if cfg.Sensitive {
					value = "(sensitive)"
				}
				fmt.Fprintf(w, "  %s=%s\t(%s)\n", cfg.Key, value, configSource(cfg.Source))
			}
		}
	}
	tw := table(c)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tSTART-OFFSET\tEND-OFFSET\tERROR")
	for _, p := range td.Partitions.Sorted() {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Partition, p.Leader, nodeList(p.Replicas), nodeList(p.ISR),
			listedOffset(starts, td.Topic, p.Partition), listedOffset(ends, td.Topic, p.Partition), errName(p.Err))
	}
	tw.Flush()
}

// configSource names a config's source as Kafka's tools print it.
func configSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic config"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "dynamic broker config"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "dynamic default broker config"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "static broker config"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "dynamic broker logger config"
	case kmsg.ConfigSourceGroupConfig:
		return "group config"
	}
	return strings.ToLower(s.String())
}

func nodeList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func listedOffset(l kadm.ListedOffsets, topic string, partition int32) string {
	o, ok := l.Lookup(topic, partition)
	if !ok || o.Err != nil {
		return "-"
	}
	return fmt.Sprint(o.Offset)
}

// errName is a Kafka error's name, or "" for none.
func errName(err error) string {
	var ke *kerr.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ke):
		return ke.Message
	}
	return err.Error()
}

func runTopicAlter(c *cli.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("topic alter: name exactly one topic")
	}
	topic := args[0]
	sets, err := parseKeyValues("config", c.StringSlice("config"))
	if err != nil {
		return err
	}
	var alter []kadm.AlterConfig
	for _, kv := range sets {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: &kv[1]})
	}
	for _, k := range c.StringSlice("delete-config") {
		if k == "" || strings.Contains(k, "=") {
			return fmt.Errorf("--delete-config %q: want a config name", k)
		}
		for _, kv := range sets {
			if kv[0] == k {
				return fmt.Errorf("%s is both set and deleted", k)
			}
		}
		alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	partitions := 0
	if c.IsSet("partitions") {
		if partitions = c.Int("partitions"); partitions < 1 || partitions > 1<<31-1 {
			return fmt.Errorf("--partitions %d: must be at least 1", partitions)
		}
	}
	if len(alter) == 0 && partitions == 0 {
		return errors.New("topic alter: nothing to change; give --config, --delete-config or --partitions")
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()

	meta, err := adm.Metadata(adm.ctx, topic)
	if err != nil {
		return adm.check(err)
	}
	td, err := describedTopic(meta, topic)
	if err != nil {
		return err
	}
	if partitions != 0 && partitions == len(td.Partitions) {
		// CreatePartitions refuses a count equal to the current one;
		// asking for what is there already is no change.
		partitions = 0
	}

	// Validate everything, then apply: a refusal leaves the topic as it was.
	if len(alter) > 0 {
		resps, err := adm.ValidateAlterTopicConfigs(adm.ctx, alter, topic)
		if err := alterConfigsErr(topic, resps, err); err != nil {
			return adm.check(err)
		}
	}
	if partitions != 0 {
		resps, err := adm.ValidateUpdatePartitions(adm.ctx, partitions, topic)
		if err := createPartitionsErr(topic, resps, err); err != nil {
			return adm.check(err)
		}
	}
	if len(alter) > 0 {
		resps, err := adm.AlterTopicConfigs(adm.ctx, alter, topic)
		if err := alterConfigsErr(topic, resps, err); err != nil {
			return adm.check(err)
		}
		for _, a := range alter {
			if a.Op == kadm.DeleteConfig {
				fmt.Fprintf(c.App.Writer, "Deleted config %s of topic %s.\n", a.Name, topic)
			} else {
				fmt.Fprintf(c.App.Writer, "Set config %s=%s on topic %s.\n", a.Name, *a.Value, topic)
			}
		}
	}
	if partitions != 0 {
		resps, err := adm.UpdatePartitions(adm.ctx, partitions, topic)
		if err := createPartitionsErr(topic, resps, err); err != nil {
			return adm.check(err)
		}
		fmt.Fprintf(c.App.Writer, "Topic %s now has %d partitions (was %d).\n", topic, partitions, len(td.Partitions))
	}
	return nil
}

func alterConfigsErr(topic string, resps kadm.AlterConfigsResponses, err error) error {
	r, missing := resps.On(topic, nil)
	return topicResult(topic, err, missing == nil, r.Err, r.ErrMessage)
}

func createPartitionsErr(topic string, resps kadm.CreatePartitionsResponses, err error) error {
	r, ok := resps[topic]
	return topicResult(topic, err, ok, r.Err, r.ErrMessage)
}

// describedTopic is topic's detail in a Metadata answer, or the error topicResult gives for it.
func describedTopic(meta kadm.Metadata, topic string) (kadm.TopicDetail, error) {
	td, ok := meta.Topics[topic]
	return td, topicResult(topic, nil, ok, td.Err, "")
}

// missingPartition is the error for a partition that a topic of n partitions does not have.
func missingPartition(topic string, partition int32, n int) error {
	return kafkaError(fmt.Sprintf("partition %d of topic %s (it has %d)", partition, topic, n), kerr.UnknownTopicOrPartition, "")
}

// topicResult is the outcome for one topic of a request about it: the request's own error, else
// UNKNOWN_TOPIC_OR_PARTITION when the answer does not name the topic (found false), else the
// topic's error code (code, with the broker's message msg), else nil.
func topicResult(topic string, err error, found bool, code error, msg string) error {
	switch {
	case err != nil:
		return err
	case !found:
		return kafkaError("topic "+topic, kerr.UnknownTopicOrPartition, "")
	case code != nil:
		return kafkaError("topic "+topic, code, msg)
	}
	return nil
}

func runTopicDelete(c *cli.Context, names []string) error {
	if len(names) == 0 {
		return errors.New("topic delete: name at least one topic")
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	resps, err := adm.DeleteTopics(adm.ctx, names...)
	if err != nil {
		return adm.check(err)
	}
	fail := failures{w: c.App.ErrWriter, total: len(names)}
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			fail.add(kafkaError("topic "+r.Topic, r.Err, r.ErrMessage))
			continue
		}
		fmt.Fprintf(c.App.Writer, "Deleted topic %s.\n", r.Topic)
	}
	return fail.err("topics")
}
