package seal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretIsRedactedEverywhere(t *testing.T) {
	t.Parallel()
	const value = "Pa55-distinctive-value"
	s := Secret(value)
	type holder struct {
		User     string
		Password Secret
	}
	h := holder{User: "admin", Password: s}

	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("login", "password", s, "holder", h)
	text := slog.New(slog.NewTextHandler(&buf, nil))
	text.Info("login", "password", s)

	js, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		//lint:ignore S1025 the test is about what each verb prints, %s among them
		"%s":         fmt.Sprintf("%s", s),
		"%v":         fmt.Sprintf("%v", s),
		"%q":         fmt.Sprintf("%q", s),
		"%x":         fmt.Sprintf("%x", s),
		"%#v":        fmt.Sprintf("%#v", s),
		"%+v holder": fmt.Sprintf("%+v", h),
		"%#v holder": fmt.Sprintf("%#v", h),
		"json":       string(js),
		"slog":       buf.String(),
		"error":      fmt.Errorf("login failed with %v", s).Error(),
	}
	for name, out := range outputs {
		if strings.Contains(out, value) {
			t.Errorf("%s output shows the secret: %s", name, out)
		}
	}
	if !strings.Contains(outputs["%v"], Redacted) || !strings.Contains(outputs["json"], Redacted) ||
		!strings.Contains(outputs["slog"], Redacted) {
		t.Errorf("redacted marker missing: %v", outputs)
	}
	if s.Reveal() != value {
		t.Fatal("Reveal must return the value")
	}
	if s.IsZero() || !Secret("").IsZero() {
		t.Fatal("IsZero wrong")
	}
}

func TestKeyIsRedactedEverywhere(t *testing.T) {
	t.Parallel()
	k := mustKey(t)
	material := k.Encode()
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("key", "k", k)
	js, _ := json.Marshal(struct{ K Key }{k})
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", k), "%+v": fmt.Sprintf("%+v", k), "%#v": fmt.Sprintf("%#v", k),
		"%x": fmt.Sprintf("%x", k), "slog": buf.String(), "json": string(js),
	} {
		if strings.Contains(out, material) || strings.Contains(out, fmt.Sprintf("%x", k.material)) {
			t.Errorf("%s output shows key material: %s", name, out)
		}
		if !strings.Contains(out, k.ID()) && name != "%x" {
			t.Errorf("%s output should name the key id: %s", name, out)
		}
	}
}
