package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

const testKey = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj
MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu
-----END PRIVATE KEY-----`

func TestCleanRemovesEveryEncoding(t *testing.T) {
	const token = "s3cr3t-token&value/with+chars"
	s := New(token, testKey)
	jsonOnce, _ := json.Marshal(testKey)
	jsonTwice, _ := json.Marshal(string(jsonOnce))
	cases := []struct{ reason, text string }{
		{"plain token", "request refused: token " + token + " is bad"},
		{"url-escaped token", "GET /x?t=" + url.QueryEscape(token)},
		{"base64 token", "echo " + base64.StdEncoding.EncodeToString([]byte(token))},
		{"plain key", "body was " + testKey},
		{"JSON-escaped key", `{"message":"bad key ` + strings.Trim(string(jsonOnce), `"`) + `"}`},
		{"JSON twice", `{"message":` + string(jsonTwice) + `}`},
		{"one line of the key", "line MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu rejected"},
	}
	for _, c := range cases {
		got := s.Clean(c.text)
		for _, leak := range []string{token, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw", "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: %q still holds a secret", c.reason, got)
			}
		}
		if !strings.Contains(got, Mark) {
			t.Errorf("%s: %q has no %s mark", c.reason, got, Mark)
		}
	}
}

func TestPatternsWithoutKnownSecrets(t *testing.T) {
	cases := []struct{ reason, text, leak string }{
		{"unknown PEM key", "echo: " + testKey, "MIIEvQIBADANBgkq"},
		{"JSON-escaped PEM key", `"private_key":"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"`, "MIIEow"},
		{"platform token", "Authorization was bct_abcdefghijklmnop", "bct_abcdefghijklmnop"},
		{"DigitalOcean token", "token dop_v1_0123456789abcdef0123456789abcdef", "dop_v1_0123456789abcdef"},
		{"bearer header", "Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"},
	}
	for _, c := range cases {
		if got := Patterns(c.text); strings.Contains(got, c.leak) {
			t.Errorf("%s: %q still holds %q", c.reason, got, c.leak)
		}
	}
}

func TestCleanKeepsWords(t *testing.T) {
	s := New("hunter2")
	for _, text := range []string{"exit status 1", "422 unprocessable entity: name is invalid", "session expired"} {
		if got := s.Clean(text); got != text {
			t.Errorf("Clean(%q) = %q: words must survive", text, got)
		}
	}
}
