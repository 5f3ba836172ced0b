package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// JSON output is the API's own JSON mapping of the message (camelCase names), one document per
// command; a stream (events watch) prints one compact document a line.
var (
	jsonOut     = protojson.MarshalOptions{Multiline: true, Indent: "  "}
	jsonOutLine = protojson.MarshalOptions{}
)

func writeJSON(w io.Writer, m proto.Message) error {
	raw, err := jsonOut.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}

func writeJSONLine(w io.Writer, m proto.Message) error {
	raw, err := jsonOutLine.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}

func writeJSONValue(w io.Writer, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}

func writeJSONError(w io.Writer, r errorReport) {
	raw, _ := json.Marshal(map[string]errorReport{"error": r})
	fmt.Fprintf(w, "%s\n", raw)
}

// writeTable prints aligned columns; empty cells show as "-".
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			if c == "" {
				c = "-"
			}
			cells[i] = c
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// writeFields prints one object as "key: value" lines.
func writeFields(w io.Writer, fields [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for _, f := range fields {
		v := f[1]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], v)
	}
	return tw.Flush()
}

func ts(t *timestamppb.Timestamp) string {
	if t == nil || !t.IsValid() || (t.GetSeconds() == 0 && t.GetNanos() == 0) {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}
