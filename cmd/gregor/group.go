package main

// gregor group: list, describe (with lag), reset the offsets of, and delete
// consumer groups, as kafka-consumer-groups.sh does.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

func groupCommand() *cli.Command {
	return &cli.Command{
		Name:  "group",
		Usage: "list, describe, reset the offsets of and delete consumer groups",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list groups with their state and type",
				UsageText: "gregor group list\ngregor group list --state Stable --state Empty\ngregor group list --type classic",
				Description: "--state and --type are passed to ListGroups as filters (types need a broker that\n" +
					"speaks ListGroups v5, Kafka 3.8 or later).",
				Flags: append(connectionFlags(requestTimeout()),
					&cli.StringSliceFlag{Name: "state", Usage: "only groups in `STATE` (Empty, Stable, PreparingRebalance, ...; repeatable)"},
					&cli.StringSliceFlag{Name: "type", Usage: "only groups of `TYPE` (classic, consumer, share, streams; repeatable)"},
				),
				Action: withArgs(runGroupList),
			},
			{
				Name:      "describe",
				Usage:     "show groups' members, committed offsets and lag",
				ArgsUsage: "GROUP...",
				UsageText: "gregor group describe billing\ngregor group describe billing audit",
				Description: "For each group: its state, members and their assignments, and for every partition\n" +
					"the group has committed to or is assigned: the committed offset, the end offset, the\n" +
					"lag (end minus committed; none without a committed offset, as in Kafka's tool) and the\n" +
					"member consuming it; then the group's total lag. Classic groups are described with\n" +
					"DescribeGroups, consumer-protocol (KIP-848) groups with ConsumerGroupDescribe.",
				Flags:  connectionFlags(requestTimeout()),
				Action: withArgs(runGroupDescribe),
			},
			{
				Name:      "reset-offsets",
				Usage:     "move a group's committed offsets (a dry run unless --execute)",
				ArgsUsage: "GROUP",
				UsageText: `gregor group reset-offsets billing --topic orders --to-earliest
gregor group reset-offsets billing --topic orders --to-earliest --execute
gregor group reset-offsets billing --topic orders:0,1 --shift-by -100 --execute
gregor group reset-offsets billing --all-topics --to-datetime 2026-11-29T18:00:00Z --execute`,
				Description: "Prints the offsets the group would get, and commits them only with --execute, as\n" +
					"kafka-consumer-groups.sh does. Like Kafka, it refuses while the group has active members\n" +
					"(its state must be Empty, or Dead for a group that does not exist yet). --to-offset and\n" +
					"--shift-by are clamped to the partition's start and end offsets; --to-datetime takes\n" +
					"the first offset at or after the time, or the end offset if there is none.",
				Flags: append(connectionFlags(requestTimeout()),
					&cli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` or TOPIC:P,P... whose offsets to reset (repeatable)"},
					&cli.BoolFlag{Name: "all-topics", Usage: "reset every partition the group has committed offsets for"},
					&cli.BoolFlag{Name: "to-earliest", Usage: "reset to each partition's start offset"},
					&cli.BoolFlag{Name: "to-latest", Usage: "reset to each partition's end offset"},
					&cli.StringFlag{Name: "to-offset", Usage: "reset to offset `N`"},
					&cli.StringFlag{Name: "to-datetime", Usage: "reset to the first offset at or after `TIME` (RFC 3339 or milliseconds since the epoch)"},
					&cli.StringFlag{Name: "shift-by", Usage: "move each committed offset by `N` (negative moves back)"},
					&cli.BoolFlag{Name: "execute", Usage: "commit the new offsets (without it, only show them)"},
				),
				Action: withArgs(runGroupResetOffsets),
			},
			{
				Name:      "delete",
				Usage:     "delete groups and their committed offsets",
				ArgsUsage: "GROUP...",
				UsageText: "gregor group delete billing\ngregor group delete billing audit",
				Description: "DeleteGroups; Kafka refuses a group that has members with NON_EMPTY_GROUP and an\n" +
					"unknown group with GROUP_ID_NOT_FOUND.",
				Flags:  connectionFlags(requestTimeout()),
				Action: withArgs(runGroupDelete),
			},
		},
	}
}

func runGroupList(c *cli.Context, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("group list: unexpected argument %q", args[0])
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	groups, err := adm.ListGroupsByType(adm.ctx, c.StringSlice("type"), c.StringSlice("state")...)
	if err != nil {
		return adm.check(err)
	}
	tw := table(c)
	fmt.Fprintln(tw, "GROUP\tTYPE\tPROTOCOL-TYPE\tSTATE\tCOORDINATOR")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", g.Group, orDash(g.GroupType), orDash(g.ProtocolType), orDash(g.State), g.Coordinator)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runGroupDescribe(c *cli.Context, groups []string) error {
	if len(groups) == 0 {
		return errors.New("group describe: name at least one group")
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	views, errs, err := describeGroups(adm, groups)
	if err != nil {
		return err
	}
	fail := failures{w: c.App.ErrWriter, total: len(groups)}
	printed := 0
	for _, name := range groups {
		if err := errs[name]; err != nil {
			fail.add(err)
			continue
		}
		v := views[name]
		lag, err := groupLag(adm, v)
		if err != nil {
			fail.add(err)
			continue
		}
		if printed > 0 {
			fmt.Fprintln(c.App.Writer)
		}
		printed++
		printGroup(c, v, lag)
	}
	return fail.err("groups")
}

// printGroup writes one group's description and lag.
func printGroup(c *cli.Context, v groupView, lag []partitionLag) {
	w := c.App.Writer
	fmt.Fprintf(w, "Group: %s\tType: %s\tState: %s\tProtocol: %s/%s\tCoordinator: %d (%s:%d)\tMembers: %d\n",
		v.name, v.groupType, v.state, orDash(v.protocolType), orDash(v.protocol), v.coordinator.NodeID, v.coordinator.Host, v.coordinator.Port, len(v.members))
	if len(v.members) > 0 {
		tw := table(c)
		fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range v.members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.id, orDash(m.instance), m.clientID, m.host, m.assignment())
		}
		tw.Flush()
	}
	tw := table(c)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED-OFFSET\tEND-OFFSET\tLAG\tMEMBER-ID\tERROR")
	total := int64(0)
	dash := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	for _, p := range lag {
		total += max(p.lag, 0)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.topic, p.partition, dash(p.committed), dash(p.end), dash(p.lag), orDash(p.member), errName(p.err))
	}
	tw.Flush()
	fmt.Fprintf(w, "Total lag: %d\n", total)
}

// resetScenario is where reset-offsets moves offsets to.
type resetScenario struct {
	kind  string // "earliest", "latest", "offset", "datetime" or "shift"
	value int64  // the offset, the time in milliseconds or the shift
}

// parseResetScenario reads the one --to-* or --shift-by flag given.
func parseResetScenario(c *cli.Context) (resetScenario, error) {
	var found []resetScenario
	if c.Bool("to-earliest") {
		found = append(found, resetScenario{kind: "earliest"})
	}
	if c.Bool("to-latest") {
		found = append(found, resetScenario{kind: "latest"})
	}
	if c.IsSet("to-offset") {
		n, err := strconv.ParseInt(c.String("to-offset"), 10, 64)
		if err != nil || n < 0 {
			return resetScenario{}, fmt.Errorf("--to-offset %q: want an offset, 0 or more", c.String("to-offset"))
		}
		found = append(found, resetScenario{kind: "offset", value: n})
	}
	if c.IsSet("to-datetime") {
		ms, err := parseTime(c.String("to-datetime"))
		if err != nil {
			return resetScenario{}, fmt.Errorf("--to-datetime %w", err)
		}
		found = append(found, resetScenario{kind: "datetime", value: ms})
	}
	if c.IsSet("shift-by") {
		n, err := strconv.ParseInt(c.String("shift-by"), 10, 64)
		if err != nil {
			return resetScenario{}, fmt.Errorf("--shift-by %q: want a whole number", c.String("shift-by"))
		}
		found = append(found, resetScenario{kind: "shift", value: n})
	}
	if len(found) != 1 {
		return resetScenario{}, errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime and --shift-by")
	}
	return found[0], nil
}

// parseTopicPartitions reads --topic values: TOPIC, or TOPIC:P,P,... A
// nil partition list means every partition.
func parseTopicPartitions(values []string) (map[string][]int32, error) {
	out := make(map[string][]int32)
	for _, v := range values {
		topic, list, hasList := strings.Cut(v, ":")
		if topic == "" {
			return nil, fmt.Errorf("--topic %q: the topic is empty", v)
		}
		if !hasList {
			out[topic] = nil
			continue
		}
		for _, s := range strings.Split(list, ",") {
			p, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil || p < 0 {
				return nil, fmt.Errorf("--topic %q: %q is not a partition number", v, s)
			}
			out[topic] = append(out[topic], int32(p))
		}
	}
	return out, nil
}

func runGroupResetOffsets(c *cli.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("group reset-offsets: name exactly one group")
	}
	group := args[0]
	scenario, err := parseResetScenario(c)
	if err != nil {
		return err
	}
	topics, err := parseTopicPartitions(c.StringSlice("topic"))
	if err != nil {
		return err
	}
	if (len(topics) == 0) == !c.Bool("all-topics") {
		return errors.New("give either --topic (repeatable) or --all-topics")
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()

	views, errs, err := describeGroups(adm, []string{group})
	if err != nil {
		return err
	}
	// A group that does not exist yet is Dead: its offsets may be set.
	state := "Dead"
	if v, ok := views[group]; ok {
		state = v.state
	} else if !errors.Is(errs[group], kerr.GroupIDNotFound) {
		return errs[group]
	}
	if state != "Empty" && state != "Dead" {
		return fmt.Errorf("assignments can only be reset if the group '%s' is inactive, but the current state is %s", group, state)
	}
	committed, err := adm.FetchOffsets(adm.ctx, group)
	if err != nil {
		return adm.check(err)
	}
	if err := committed.Error(); err != nil {
		return kafkaError("group "+group, err, "")
	}

	// The partitions to reset, checked against the cluster's metadata.
	if c.Bool("all-topics") {
		committed.Each(func(o kadm.OffsetResponse) { topics[o.Topic] = append(topics[o.Topic], o.Partition) })
		if len(topics) == 0 {
			return fmt.Errorf("group %s has no committed offsets; name the topics with --topic", group)
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	meta, err := adm.Metadata(adm.ctx, names...)
	if err != nil {
		return adm.check(err)
	}
	for _, t := range names {
		td, err := describedTopic(meta, t)
		if err != nil {
			return err
		}
		if topics[t] == nil {
			topics[t] = td.Partitions.Numbers()
		}
		for _, p := range topics[t] {
			if _, ok := td.Partitions[p]; !ok {
				return missingPartition(t, p, len(td.Partitions))
			}
		}
	}

	starts, err := adm.ListStartOffsets(adm.ctx, names...)
	if err != nil {
		return adm.check(err)
	}
	ends, err := adm.ListEndOffsets(adm.ctx, names...)
	if err != nil {
		return adm.check(err)
	}
	var atTime kadm.ListedOffsets
	if scenario.kind == "datetime" {
		if atTime, err = adm.ListOffsetsAfterMilli(adm.ctx, scenario.value, names...); err != nil {
			return adm.check(err)
		}
	}

	// Every new offset is worked out before anything is committed.
	target := make(kadm.Offsets)
	tw := table(c)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET")
	for _, t := range names {
		ps := append([]int32(nil), topics[t]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			start, ok1 := starts.Lookup(t, p)
			end, ok2 := ends.Lookup(t, p)
			if !ok1 || !ok2 || start.Err != nil || end.Err != nil {
				return kafkaError(fmt.Sprintf("listing the offsets of %s-%d", t, p), firstErr(start.Err, end.Err, kerr.UnknownTopicOrPartition), "")
			}
			current, hasCurrent := committed.Lookup(t, p)
			var offset int64
			switch scenario.kind {
			case "earliest":
				offset = start.Offset
			case "latest":
				offset = end.Offset
			case "offset":
				offset = clampOffset(c, t, p, scenario.value, start.Offset, end.Offset)
			case "shift":
				if !hasCurrent || current.At < 0 {
					return fmt.Errorf("cannot shift the offset of %s-%d: the group has no committed offset for it", t, p)
				}
				offset = clampOffset(c, t, p, current.At+scenario.value, start.Offset, end.Offset)
			case "datetime":
				o, ok := atTime.Lookup(t, p)
				if !ok || o.Err != nil {
					return kafkaError(fmt.Sprintf("looking up the offset at the time in %s-%d", t, p), firstErr(o.Err, kerr.UnknownTopicOrPartition), "")
				}
				offset = o.Offset
				if offset < 0 {
					offset = end.Offset
				}
			}
			cur := "-"
			if hasCurrent && current.At >= 0 {
				cur = strconv.FormatInt(current.At, 10)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", group, t, p, cur, offset)
			target.Add(kadm.Offset{Topic: t, Partition: p, At: offset, LeaderEpoch: -1})
		}
	}
	tw.Flush()

	if !c.Bool("execute") {
		fmt.Fprintln(c.App.ErrWriter, "Dry run: nothing was committed. Run again with --execute to commit these offsets.")
		return nil
	}
	resps, err := adm.CommitOffsets(adm.ctx, group, target)
	if err != nil {
		return adm.check(err)
	}
	total := len(target.Sorted())
	fail := failures{w: c.App.ErrWriter, total: total}
	resps.Each(func(r kadm.OffsetResponse) {
		if r.Err != nil {
			fail.add(kafkaError(fmt.Sprintf("committing %s-%d", r.Topic, r.Partition), r.Err, ""))
		}
	})
	if err := fail.err("offset commits"); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "Committed %d offsets to group %s.\n", total, group)
	return nil
}

// clampOffset keeps a requested offset within the partition's log, warning
// when it moves it, as kafka-consumer-groups.sh does.
func clampOffset(c *cli.Context, topic string, partition int32, offset, start, end int64) int64 {
	switch {
	case offset > end:
		fmt.Fprintf(c.App.ErrWriter, "Warning: offset %d is past the end of %s-%d; using its end offset %d.\n", offset, topic, partition, end)
		return end
	case offset < start:
		fmt.Fprintf(c.App.ErrWriter, "Warning: offset %d is before the start of %s-%d; using its start offset %d.\n", offset, topic, partition, start)
		return start
	}
	return offset
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func runGroupDelete(c *cli.Context, groups []string) error {
	if len(groups) == 0 {
		return errors.New("group delete: name at least one group")
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	resps, err := adm.DeleteGroups(adm.ctx, groups...)
	if err != nil {
		return adm.check(err)
	}
	fail := failures{w: c.App.ErrWriter, total: len(groups)}
	for _, name := range groups {
		r, ok := resps[name]
		switch {
		case !ok:
			fail.add(kafkaError("group "+name, kerr.GroupIDNotFound, ""))
		case r.Err != nil:
			fail.add(kafkaError("group "+name, r.Err, r.ErrMessage))
		default:
			fmt.Fprintf(c.App.Writer, "Deleted group %s.\n", name)
		}
	}
	return fail.err("groups")
}
