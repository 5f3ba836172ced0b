package digitalocean

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
)

// The tables below are DigitalOcean's documented shapes of the objects the provider reads and
// the request bodies it sends, taken from the public API reference (the required lists of its
// schemas) and cross-checked with godo v1.237's json tags. A field rule names the JSON type,
// and where documented an enum, a format, or the nested object's table.

type rule struct {
	typ      string   // string, integer, number, boolean, array, object
	items    string   // for arrays: a JSON type, or "@table" for objects
	object   string   // for objects: the table
	enum     []string // allowed values
	format   string   // date-time, uuid, ipv4, ipv6, url, ipv4-or-empty, ipv6-or-empty, cidr, slug
	nullable bool
	optional bool // documented but not always present
}

type shape map[string]rule

var (
	str     = rule{typ: "string"}
	integer = rule{typ: "integer"}
	number  = rule{typ: "number"}
	boolean = rule{typ: "boolean"}
)

func arr(items string) rule        { return rule{typ: "array", items: items} }
func obj(table string) rule        { return rule{typ: "object", object: table} }
func enum(values ...string) rule   { return rule{typ: "string", enum: values} }
func formatted(format string) rule { return rule{typ: "string", format: format} }
func (r rule) orNull() rule        { r.nullable = true; return r }
func (r rule) notAlways() rule     { r.optional = true; return r }

// answers are the response objects.
var answers = map[string]shape{
	"droplet": {
		"id": integer, "name": str, "memory": integer, "vcpus": integer, "disk": integer, "locked": boolean,
		"status": enum("new", "active", "off", "archive"), "created_at": formatted("date-time"),
		"features": arr("string"), "backup_ids": arr("integer"), "next_backup_window": obj("backup_window").orNull(),
		"snapshot_ids": arr("integer"), "image": obj("image"), "volume_ids": arr("string"), "size": obj("size"),
		"size_slug": str, "networks": obj("networks"), "region": obj("region"), "tags": arr("string"),
		"kernel": obj("kernel").orNull(), "vpc_uuid": formatted("uuid"),
	},
	"region": {"slug": str, "name": str, "sizes": arr("string"), "available": boolean, "features": arr("string")},
	"size": {
		"slug": str, "memory": integer, "vcpus": integer, "disk": integer, "transfer": number,
		"price_monthly": number, "price_hourly": number, "regions": arr("string"), "available": boolean,
		"description": str,
	},
	"image": {
		"id": integer, "name": str, "type": enum("base", "snapshot", "backup", "custom", "admin"),
		"distribution": str, "slug": str.orNull(), "public": boolean, "regions": arr("string"),
		"created_at": formatted("date-time"), "min_disk_size": integer, "size_gigabytes": number,
		"description": str, "tags": arr("string"), "status": enum("NEW", "available", "pending", "deleted", "retired"),
		"error_message": str,
	},
	"networks":      {"v4": arr("@network_v4"), "v6": arr("@network_v6")},
	"network_v4":    {"ip_address": formatted("ipv4"), "netmask": formatted("ipv4"), "gateway": str, "type": enum("public", "private")},
	"network_v6":    {"ip_address": formatted("ipv6"), "netmask": integer, "gateway": formatted("ipv6"), "type": enum("public")},
	"backup_window": {"start": formatted("date-time"), "end": formatted("date-time")},
	"kernel":        {"id": integer, "name": str, "version": str},
	"load_balancer": {
		"id": formatted("uuid"), "name": str, "project_id": str, "ip": formatted("ipv4-or-empty"),
		"ipv6": formatted("ipv6-or-empty"), "size_unit": integer,
		"size": enum("lb-small", "lb-medium", "lb-large").notAlways(), "type": enum("REGIONAL", "REGIONAL_NETWORK", "GLOBAL"),
		"algorithm": enum("round_robin", "least_connections"), "status": enum("new", "active", "errored"),
		"created_at": formatted("date-time"), "forwarding_rules": arr("@forwarding_rule"),
		"health_check": obj("health_check"), "sticky_sessions": obj("sticky_sessions"),
		"region": obj("region").orNull(), "tag": str, "droplet_ids": arr("integer"),
		"redirect_http_to_https": boolean, "enable_proxy_protocol": boolean, "enable_backend_keepalive": boolean,
		"http_idle_timeout_seconds": integer, "vpc_uuid": formatted("uuid").notAlways(),
		"disable_lets_encrypt_dns_records": boolean, "firewall": obj("firewall"),
		"network": enum("EXTERNAL", "INTERNAL"), "network_stack": enum("IPV4", "DUALSTACK"),
		"tls_cipher_policy": enum("DEFAULT", "STRONG"), "glb_settings": obj("glb_settings").notAlways(),
		"target_load_balancer_ids": arr("string"), "domains": arr("@domain"),
	},
	"forwarding_rule": {
		"entry_protocol": enum("http", "https", "http2", "http3", "tcp", "udp"), "entry_port": integer,
		"target_protocol": enum("http", "https", "http2", "tcp", "udp"), "target_port": integer,
		"certificate_id": str, "tls_passthrough": boolean,
	},
	"health_check": {
		"protocol": enum("http", "https", "tcp"), "port": integer, "path": str, "check_interval_seconds": integer,
		"response_timeout_seconds": integer, "healthy_threshold": integer, "unhealthy_threshold": integer,
	},
	"sticky_sessions": {"type": enum("cookies", "none"), "cookie_name": str.notAlways(), "cookie_ttl_seconds": integer.notAlways()},
	"firewall":        {"allow": arr("string"), "deny": arr("string")},
	"glb_settings": {
		"target_protocol": enum("http", "https", "http2"), "target_port": integer, "cdn": obj("cdn"),
		"region_priorities": obj("").notAlways(), "failover_threshold": integer.notAlways(),
	},
	"cdn":    {"is_enabled": boolean},
	"domain": {"name": str, "is_managed": boolean, "certificate_id": str, "status": enum("INITIALIZING", "ACTIVE", "ERROR")},
	"vpc": {
		"id": formatted("uuid"), "urn": str, "name": str, "description": str, "region": str,
		"ip_range": formatted("cidr"), "created_at": formatted("date-time"), "default": boolean,
	},
	"certificate": {
		"id": formatted("uuid"), "name": str, "not_after": formatted("date-time"), "sha1_fingerprint": str,
		"created_at": formatted("date-time"), "dns_names": arr("string"), "state": enum("pending", "verified", "error"),
		"type": enum("custom", "lets_encrypt"),
	},
	"action": {
		"id": integer, "status": enum("in-progress", "completed", "errored"), "type": str,
		"started_at": formatted("date-time"), "completed_at": formatted("date-time").orNull(), "resource_id": integer,
		"resource_type": enum("droplet", "image", "volume", "floating_ip", "reserved_ip", "backend"),
		"region":        obj("region").orNull(), "region_slug": str.orNull(),
	},
	"links":       {"pages": obj("pages").notAlways(), "actions": arr("@link_action").notAlways()},
	"pages":       {"first": formatted("url").notAlways(), "prev": formatted("url").notAlways(), "next": formatted("url").notAlways(), "last": formatted("url").notAlways()},
	"link_action": {"id": integer, "rel": str, "href": formatted("url")},
	"meta":        {"total": integer},

	// Answer envelopes, by the route that sends them.
	"droplet_root":       {"droplet": obj("droplet"), "links": obj("links").notAlways()},
	"droplet_create":     {"droplet": obj("droplet"), "links": obj("links")},
	"droplets_root":      {"droplets": arr("@droplet"), "links": obj("links"), "meta": obj("meta")},
	"load_balancer_root": {"load_balancer": obj("load_balancer")},
	"load_balancers":     {"load_balancers": arr("@load_balancer"), "links": obj("links"), "meta": obj("meta")},
	"vpc_root":           {"vpc": obj("vpc")},
	"vpcs_root":          {"vpcs": arr("@vpc"), "links": obj("links"), "meta": obj("meta")},
	"certificate_root":   {"certificate": obj("certificate")},
	"certificates_root":  {"certificates": arr("@certificate"), "links": obj("links"), "meta": obj("meta")},
	"action_root":        {"action": obj("action")},
}

// answerOf names the envelope each route the provider uses answers with.
var answerOf = map[string]string{
	"POST /v2/droplets":           "droplet_create",
	"GET /v2/droplets/{id}":       "droplet_root",
	"GET /v2/droplets":            "droplets_root",
	"POST /v2/load_balancers":     "load_balancer_root",
	"GET /v2/load_balancers/{id}": "load_balancer_root",
	"PUT /v2/load_balancers/{id}": "load_balancer_root",
	"GET /v2/load_balancers":      "load_balancers",
	"POST /v2/vpcs":               "vpc_root",
	"GET /v2/vpcs/{id}":           "vpc_root",
	"GET /v2/vpcs":                "vpcs_root",
	"POST /v2/certificates":       "certificate_root",
	"GET /v2/certificates/{id}":   "certificate_root",
	"GET /v2/certificates":        "certificates_root",
	"GET /v2/actions/{id}":        "action_root",
}

// requests are the documented request bodies (fields marked optional may be left out).
var requests = map[string]shape{
	"droplet_create": {
		"name": formatted("hostname"), "region": formatted("slug"), "size": formatted("slug"), "image": rule{},
		"ssh_keys": arr("any"), "backups": boolean.notAlways(), "ipv6": boolean.notAlways(),
		"monitoring": boolean.notAlways(), "tags": arr("string"), "user_data": str.notAlways(),
		"private_networking": boolean.notAlways(), "volumes": arr("string").notAlways(),
		"vpc_uuid": formatted("uuid").notAlways(), "with_droplet_agent": boolean.notAlways(),
	},
	"load_balancer_create": {
		"name": str, "region": formatted("slug").notAlways(), "type": enum("REGIONAL", "REGIONAL_NETWORK", "GLOBAL").notAlways(),
		"forwarding_rules": arr("@forwarding_rule_req"), "health_check": obj("health_check_req").notAlways(),
		"sticky_sessions": obj("sticky_sessions").notAlways(), "redirect_http_to_https": boolean.notAlways(),
		"droplet_ids": arr("integer").notAlways(), "vpc_uuid": formatted("uuid").notAlways(),
		"firewall": obj("firewall_req").notAlways(), "glb_settings": obj("glb_settings").notAlways(),
		"target_load_balancer_ids": arr("string").notAlways(), "domains": arr("@domain_req").notAlways(),
		"size_unit": integer.notAlways(), "size": str.notAlways(), "algorithm": str.notAlways(),
		"tag": str.notAlways(), "tags": arr("string").notAlways(), "enable_proxy_protocol": boolean.notAlways(),
		"enable_backend_keepalive": boolean.notAlways(), "http_idle_timeout_seconds": integer.notAlways(),
		"project_id": str.notAlways(), "disable_lets_encrypt_dns_records": boolean.notAlways(),
		"network": str.notAlways(), "network_stack": str.notAlways(), "tls_cipher_policy": str.notAlways(),
	},
	"forwarding_rule_req": {
		"entry_protocol": enum("http", "https", "http2", "http3", "tcp", "udp"), "entry_port": integer,
		"target_protocol": enum("http", "https", "http2", "tcp", "udp"), "target_port": integer,
		"certificate_id": str.notAlways(), "tls_passthrough": boolean.notAlways(),
	},
	"health_check_req": {
		"protocol": enum("http", "https", "tcp"), "port": integer, "path": str.notAlways(),
		"check_interval_seconds": integer.notAlways(), "response_timeout_seconds": integer.notAlways(),
		"healthy_threshold": integer.notAlways(), "unhealthy_threshold": integer.notAlways(),
	},
	"sticky_sessions": answers["sticky_sessions"],
	"firewall_req":    {"allow": arr("string").notAlways(), "deny": arr("string").notAlways()},
	"glb_settings":    answers["glb_settings"],
	"cdn":             answers["cdn"],
	"domain_req":      {"name": str, "is_managed": boolean.notAlways(), "certificate_id": str.notAlways()},
	"vpc_create": {
		"name": str, "region": formatted("slug"), "description": str.notAlways(), "ip_range": formatted("cidr").notAlways(),
		"default": boolean.notAlways(),
	},
	"certificate_create": {
		"name": str, "type": enum("custom", "lets_encrypt").notAlways(), "private_key": str.notAlways(),
		"leaf_certificate": str.notAlways(), "certificate_chain": str.notAlways(), "dns_names": arr("string").notAlways(),
	},
}

var requestOf = map[string]string{
	"POST /v2/droplets":           "droplet_create",
	"POST /v2/load_balancers":     "load_balancer_create",
	"PUT /v2/load_balancers/{id}": "load_balancer_create",
	"POST /v2/vpcs":               "vpc_create",
	"POST /v2/certificates":       "certificate_create",
}

var (
	uuidRE     = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	slugRE     = regexp.MustCompile(`^[a-z0-9-]+$`)
	hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
)

// checkShape walks v against the table and reports each deviation with its JSON path.
func checkShape(tables map[string]shape, table, path string, v any) []string {
	m, isObj := v.(map[string]any)
	if !isObj {
		return []string{fmt.Sprintf("%s: %T, want an object", path, v)}
	}
	if table == "" { // a free-form object
		return nil
	}
	sh, known := tables[table]
	if !known {
		return []string{fmt.Sprintf("%s: no table %q", path, table)}
	}
	var out []string
	for name, r := range sh {
		fv, present := m[name]
		if !present {
			if !r.optional {
				out = append(out, fmt.Sprintf("%s.%s: missing (required by %s)", path, name, table))
			}
			continue
		}
		out = append(out, checkValue(tables, r, path+"."+name, fv)...)
	}
	return out
}

func checkValue(tables map[string]shape, r rule, path string, v any) []string {
	if v == nil {
		if r.nullable || r.typ == "" {
			return nil
		}
		return []string{path + ": null, want " + r.typ}
	}
	switch r.typ {
	case "":
		return nil
	case "object":
		return checkShape(tables, r.object, path, v)
	case "array":
		items, isArr := v.([]any)
		if !isArr {
			return []string{fmt.Sprintf("%s: %T, want an array", path, v)}
		}
		var out []string
		for i, it := range items {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case strings.HasPrefix(r.items, "@"):
				out = append(out, checkShape(tables, r.items[1:], p, it)...)
			case r.items != "any":
				out = append(out, checkValue(tables, rule{typ: r.items}, p, it)...)
			}
		}
		return out
	case "integer", "number":
		n, isNum := v.(float64)
		if !isNum {
			return []string{fmt.Sprintf("%s: %T, want %s", path, v, r.typ)}
		}
		if r.typ == "integer" && n != float64(int64(n)) {
			return []string{fmt.Sprintf("%s: %v, want an integer", path, n)}
		}
		return nil
	case "boolean":
		if _, isBool := v.(bool); !isBool {
			return []string{fmt.Sprintf("%s: %T, want boolean", path, v)}
		}
		return nil
	case "string":
		s, isStr := v.(string)
		if !isStr {
			return []string{fmt.Sprintf("%s: %T, want string", path, v)}
		}
		if len(r.enum) > 0 && !slices.Contains(r.enum, s) {
			return []string{fmt.Sprintf("%s: %q is not one of %v", path, s, r.enum)}
		}
		if !validFormat(r.format, s) {
			return []string{fmt.Sprintf("%s: %q is not a %s", path, s, r.format)}
		}
		return nil
	}
	return []string{path + ": unknown rule type " + r.typ}
}

func validFormat(format, s string) bool {
	switch format {
	case "":
		return true
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	case "uuid":
		return uuidRE.MatchString(s)
	case "ipv4", "ipv4-or-empty":
		if s == "" {
			return format == "ipv4-or-empty"
		}
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6", "ipv6-or-empty":
		if s == "" {
			return format == "ipv6-or-empty"
		}
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6()
	case "cidr":
		_, err := netip.ParsePrefix(s)
		return err == nil
	case "url":
		u, err := url.Parse(s)
		return err == nil && u.IsAbs() && u.Host != ""
	case "slug":
		return slugRE.MatchString(s)
	case "hostname":
		return hostnameRE.MatchString(s)
	}
	return false
}

// recorder keeps every answer body the provider received, by route pattern.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	got  map[string][][]byte
}

var idSegment = regexp.MustCompile(`/v2/(droplets|load_balancers|vpcs|certificates|actions)/[^/]+$`)

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || resp.StatusCode >= 300 || resp.StatusCode == http.StatusNoContent {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	route := req.Method + " " + idSegment.ReplaceAllString(req.URL.Path, "/v2/$1/{id}")
	r.mu.Lock()
	r.got[route] = append(r.got[route], body)
	r.mu.Unlock()
	return resp, nil
}

// TestDocumentedShapes drives every endpoint the provider uses against the simulator and
// checks each answer it received, and each request body the simulator recorded, field by field
// against DigitalOcean's documented shapes.
func TestDocumentedShapes(t *testing.T) {
	t.Parallel()
	rec := &recorder{base: http.DefaultTransport, got: map[string][][]byte{}}
	e := newEnv(t, fastSim(), Options{Transport: rec, PageSize: 2}, false)
	ctx := bg()

	net, err := e.p.Networks().Create(ctx, provider.NetworkSpec{Name: "bc-shape-net", Region: "nyc3", IPRange: "10.240.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Networks().Get(ctx, net.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Networks().FindByName(ctx, "bc-shape-net"); err != nil {
		t.Fatal(err)
	}
	m, err := e.p.Machines().Create(ctx, provider.MachineSpec{Name: "bc-shape-m", Region: "nyc3", Size: "s-1vcpu-1gb",
		Image: "ubuntu-24-04-x64", NetworkID: net.ID})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "droplet active", func() (bool, error) {
		got, err := e.p.Machines().Get(ctx, m.ID)
		return err == nil && got.Status == provider.MachineActive, err
	})
	if _, err := e.p.Machines().FindByName(ctx, "bc-shape-m"); err != nil {
		t.Fatal(err)
	}
	cert, err := e.p.Certificates().Create(ctx, provider.CertificateSpec{Name: "bc-shape-c", Managed: true, DNSNames: []string{"shape.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Certificates().Get(ctx, cert.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Certificates().FindByName(ctx, "bc-shape-c"); err != nil {
		t.Fatal(err)
	}
	spec := provider.LoadBalancerSpec{Name: "bc-shape-lb", Scope: provider.ScopeRegional, Region: "nyc3", NetworkID: net.ID,
		MachineIDs: []string{m.ID}, Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		HealthCheck: &provider.HealthCheck{Protocol: "http", Port: 8080, Path: "/"}, AllowSources: []string{"10.0.0.0/8"}}
	lb, err := e.p.LoadBalancers().Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "load balancer active with an address", func() (bool, error) {
		got, err := e.p.LoadBalancers().Get(ctx, lb.ID)
		return err == nil && got.Status == provider.LoadBalancerActive && got.Address != "", err
	})
	spec.RedirectHTTPToHTTPS = true
	poll(t, "update accepted", func() (bool, error) {
		_, err := e.p.LoadBalancers().Update(ctx, lb.ID, spec)
		return err == nil, nil
	})
	global := provider.LoadBalancerSpec{Name: "bc-shape-glb", Scope: provider.ScopeGlobal, TargetLoadBalancerIDs: []string{lb.ID},
		Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		Domains:    []provider.Domain{{Name: "glb.example.com"}}}
	if _, err := e.p.LoadBalancers().Create(ctx, global); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.LoadBalancers().FindByName(ctx, "bc-shape-glb"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.LoadBalancers().List(ctx); err != nil {
		t.Fatal(err)
	}
	// godo users poll a droplet's create action by its link; the provider itself does not,
	// so the test follows it with the same client.
	var created struct {
		Links struct {
			Actions []struct {
				HREF string `json:"href"`
			} `json:"actions"`
		} `json:"links"`
	}
	rec.mu.Lock()
	createAnswer := rec.got["POST /v2/droplets"][0]
	rec.mu.Unlock()
	if err := json.Unmarshal(createAnswer, &created); err != nil || len(created.Links.Actions) != 1 {
		t.Fatalf("droplet create answer has no action link: %v", err)
	}
	if _, _, err := e.p.(*client).godo.Actions.Get(ctx, actionID(t, created.Links.Actions[0].HREF)); err != nil {
		t.Fatalf("GET the create action: %v", err)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for route, table := range answerOf {
		bodies := rec.got[route]
		if len(bodies) == 0 {
			t.Errorf("%s: the provider never received an answer on this route", route)
		}
		for i, b := range bodies {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s #%d: %v", route, i, err)
				continue
			}
			for _, problem := range checkShape(answers, table, "$", v) {
				t.Errorf("%s #%d: %s", route, i, problem)
			}
		}
	}
	for route, table := range requestOf {
		bodies := e.srv.RequestBodies(route)
		if len(bodies) == 0 {
			t.Errorf("%s: the simulator recorded no request body", route)
		}
		for i, b := range bodies {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s request #%d: %v", route, i, err)
				continue
			}
			for _, problem := range checkShape(requests, table, "$", v) {
				t.Errorf("%s request #%d: %s", route, i, problem)
			}
		}
	}
}

// actionID reads the id at the end of an absolute action href.
func actionID(t *testing.T, href string) int {
	t.Helper()
	u, err := url.Parse(href)
	if err != nil || !u.IsAbs() {
		t.Fatalf("action href %q is not an absolute URL", href)
	}
	var id int
	if _, err := fmt.Sscanf(u.Path, "/v2/actions/%d", &id); err != nil {
		t.Fatalf("action href %q: %v", href, err)
	}
	return id
}

// TestShapeCheckerCatches shows the checker refuses what the old answers had wrong: a region
// without sizes, a droplet without locked, a relative href, an upper-case glb target.
func TestShapeCheckerCatches(t *testing.T) {
	t.Parallel()
	cases := []struct {
		table, doc string
		tables     map[string]shape
		want       string
	}{
		{"region", `{"slug":"nyc3","name":"New York 3","available":true,"features":[]}`, answers, "$.sizes: missing"},
		{"link_action", `{"id":1,"rel":"create","href":"/v2/actions/1"}`, answers, "is not a url"},
		{"glb_settings", `{"target_protocol":"HTTP","target_port":80,"cdn":{"is_enabled":false}}`, answers, "is not one of"},
		{"droplet_create", `{"name":"a","region":"nyc3","size":"s","image":"x","ssh_keys":null,"tags":null}`, requests, "$.ssh_keys: null"},
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c.doc), &v); err != nil {
			t.Fatal(err)
		}
		problems := strings.Join(checkShape(c.tables, c.table, "$", v), "; ")
		if !strings.Contains(problems, c.want) {
			t.Errorf("%s %s: problems %q, want one containing %q", c.table, c.doc, problems, c.want)
		}
	}
}
