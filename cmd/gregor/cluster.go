package main

// gregor cluster info: the cluster id, the controller, the brokers and the
// API versions they serve.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "show the cluster's brokers and what they support",
		Subcommands: []*cli.Command{
			{
				Name:      "info",
				Usage:     "show the cluster id, controller, brokers and API versions",
				UsageText: "gregor cluster info\ngregor cluster info -b kafka-1:9092 --api-versions",
				Description: "From Metadata: the cluster id, the controller and each broker's id, address and rack.\n" +
					"With --api-versions, also every API each broker serves, with its version range\n" +
					"(ApiVersions).",
				Flags: append(connectionFlags(requestTimeout()),
					&cli.BoolFlag{Name: "api-versions", Usage: "list the API versions each broker serves"},
				),
				Action: withArgs(runClusterInfo),
			},
		},
	}
}

func runClusterInfo(c *cli.Context, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("cluster info: unexpected argument %q", args[0])
	}
	adm, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer adm.close()
	meta, err := adm.BrokerMetadata(adm.ctx)
	if err != nil {
		return adm.check(err)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "Cluster ID: %s\n", orDash(meta.Cluster))
	if meta.Controller >= 0 {
		fmt.Fprintf(w, "Controller: %d\n", meta.Controller)
	} else {
		fmt.Fprintln(w, "Controller: none")
	}
	fmt.Fprintln(w, "Brokers:")
	tw := table(c)
	fmt.Fprintln(tw, "  ID\tADDRESS\tRACK")
	for _, b := range meta.Brokers {
		rack := "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(tw, "  %d\t%s:%d\t%s\n", b.NodeID, b.Host, b.Port, rack)
	}
	tw.Flush()
	if !c.Bool("api-versions") {
		return nil
	}
	versions, err := adm.ApiVersions(adm.ctx)
	if err != nil {
		return adm.check(err)
	}
	for _, v := range versions.Sorted() {
		fmt.Fprintf(w, "\nAPI versions of broker %d:\n", v.NodeID)
		if v.Err != nil {
			fmt.Fprintf(w, "  not known: %v\n", v.Err)
			continue
		}
		printAPIVersions(c, v)
	}
	return nil
}

func printAPIVersions(c *cli.Context, v kadm.BrokerApiVersions) {
	tw := table(c)
	fmt.Fprintln(tw, "  KEY\tAPI\tVERSIONS")
	v.EachKeySorted(func(key, min, max int16) {
		fmt.Fprintf(tw, "  %d\t%s\t%d-%d\n", key, kmsg.NameForKey(key), min, max)
	})
	tw.Flush()
}
