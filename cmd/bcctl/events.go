package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

func eventCommands() []command {
	return []command{
		{name: "list", summary: "list events after a cursor", run: eventsList},
		{name: "watch", summary: "stream events as they happen (resumes after --after)", run: eventsWatch},
	}
}

func eventsList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("events list", "bcctl events list [--after CURSOR] [--limit N] [--resource ID]")
	after := fs.Int64("after", 0, "only events after this cursor")
	limit := fs.Int("limit", 0, "at most this many (the server's default when 0)")
	resource := fs.String("resource", "", "only this resource's events")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Events.ListEvents(cctx, connect.NewRequest(&v1.ListEventsRequest{TenantId: tenant, After: *after, Limit: int32(*limit), ResourceId: *resource}))
	if err != nil {
		return err
	}
	if c.output == "json" {
		return writeJSON(c.env.Stdout, resp.Msg)
	}
	rows := make([][]string, 0, len(resp.Msg.GetEvents()))
	for _, e := range resp.Msg.GetEvents() {
		rows = append(rows, eventRow(e))
	}
	return writeTable(c.env.Stdout, eventHeader, rows)
}

var eventHeader = []string{"CURSOR", "TIME", "TYPE", "RESOURCE"}

func eventRow(e *v1.Event) []string {
	return []string{strconv.FormatInt(e.GetCursor(), 10), ts(e.GetCreateTime()), e.GetType(), e.GetResourceId()}
}

func eventsWatch(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("events watch", `bcctl events watch [--after CURSOR] [--resource ID] [--count N]

Streams the tenant's events, one a line (with -o json one JSON document a line), until
interrupted or --count events were printed. A dropped stream is resumed after the last cursor.`)
	after := fs.Int64("after", 0, "start after this cursor (0: from the first event)")
	resource := fs.String("resource", "", "print only this resource's events")
	count := fs.Int("count", 0, "stop after this many events (0: never)")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	if c.output != "json" {
		if err := writeTable(c.env.Stdout, eventHeader, nil); err != nil {
			return err
		}
	}
	// The SDK's watcher resumes a dropped stream after the last cursor and ends on a refusal
	// (bad token, bad tenant); the server filters by resource, so a quiet resource costs nothing.
	w := sdk.NewWatcher(client.Events, &v1.WatchEventsRequest{TenantId: tenant, After: *after, ResourceId: *resource})
	printed := 0
	for e, err := range w.Events(ctx) {
		if err != nil {
			return err
		}
		if c.output == "json" {
			err = writeJSONLine(c.env.Stdout, e)
		} else {
			r := eventRow(e)
			_, err = fmt.Fprintf(c.env.Stdout, "%-8s  %-20s  %-36s  %s\n", r[0], r[1], r[2], r[3])
		}
		if err != nil {
			return err
		}
		if printed++; *count > 0 && printed >= *count {
			return nil
		}
	}
	return nil // interrupted: a normal end of a watch
}

func usageCmd(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("usage", `bcctl usage [--meter METER] [--since TIME|DURATION] [--until TIME]

TIME is RFC 3339 (2026-12-01T00:00:00Z); --since also takes a duration back from now (24h).`)
	meter := fs.String("meter", "", "only this meter, e.g. vps.load-balancer.hours")
	since := fs.String("since", "", "from this time")
	until := fs.String("until", "", "until this time")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	req := &v1.ListUsageRequest{Meter: *meter}
	var err error
	if req.StartTime, err = parseTime("since", *since); err != nil {
		return err
	}
	if req.EndTime, err = parseTime("until", *until); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	req.TenantId = tenant
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Usage.ListUsage(cctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	if c.output == "json" {
		return writeJSON(c.env.Stdout, resp.Msg)
	}
	rows := make([][]string, 0, len(resp.Msg.GetRecords()))
	for _, r := range resp.Msg.GetRecords() {
		rows = append(rows, []string{r.GetMeter(), r.GetResourceId(), ts(r.GetStartTime()), ts(r.GetEndTime()), strconv.FormatFloat(r.GetQuantity(), 'f', 3, 64)})
	}
	if err := writeTable(c.env.Stdout, []string{"METER", "RESOURCE", "START", "END", "QUANTITY"}, rows); err != nil {
		return err
	}
	meters := make([]string, 0, len(resp.Msg.GetTotals()))
	for m := range resp.Msg.GetTotals() {
		meters = append(meters, m)
	}
	sort.Strings(meters)
	for _, m := range meters {
		fmt.Fprintf(c.env.Stdout, "total %s: %s\n", m, strconv.FormatFloat(resp.Msg.GetTotals()[m], 'f', 3, 64))
	}
	return nil
}

func parseTime(flagName, s string) (*timestamppb.Timestamp, error) {
	if s == "" {
		return nil, nil
	}
	if d, err := time.ParseDuration(s); err == nil && flagName == "since" {
		return timestamppb.New(time.Now().Add(-d)), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, usagef("--%s %q: want an RFC 3339 time (2026-12-01T00:00:00Z)", flagName, s)
	}
	return timestamppb.New(t), nil
}
