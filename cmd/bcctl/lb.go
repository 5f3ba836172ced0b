package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

func lbCommands() []command {
	return []command{
		{name: "create", summary: "create a load balancer (answers pending; --wait until ready)", run: lbCreate},
		{name: "list", summary: "list the tenant's load balancers", run: lbList},
		{name: "get", summary: "show one load balancer", run: lbGet},
		{name: "update", summary: "replace parts of a load balancer", run: lbUpdate},
		{name: "delete", summary: "delete a load balancer (--wait until deleted)", run: lbDelete},
		{name: "wait", summary: "wait until a load balancer reaches a state (ready by default)", run: lbWait},
	}
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// parts are the flags that describe a load balancer's parts, shared by create and update.
type parts struct {
	forward   multi
	instances multi
	lbs       multi
	allow     multi
	deny      multi
	domains   multi
	pool      bool
	health    string
	sticky    string
	redirect  bool
	file      string
}

func (p *parts) register(fs *flag.FlagSet) {
	fs.Var(&p.forward, "forward", "a forwarding rule entryProto:entryPort:targetProto:targetPort[:certificateId] (repeatable), e.g. http:80:http:8080")
	fs.BoolVar(&p.pool, "target-pool", false, "target every instance of the pool (regional)")
	fs.Var(&p.instances, "instance", "target this instance id (repeatable)")
	fs.Var(&p.lbs, "target-lb", "target this regional load balancer id (repeatable; global load balancers)")
	fs.StringVar(&p.health, "health-check", "", "protocol:port[:path], e.g. http:8080:/healthz")
	fs.StringVar(&p.sticky, "sticky", "", "sticky sessions cookieName:ttlSeconds")
	fs.Var(&p.allow, "allow", "a source range allowed (IP or CIDR; repeatable)")
	fs.Var(&p.deny, "deny", "a source range denied (IP or CIDR; repeatable)")
	fs.Var(&p.domains, "domain", "a domain name[:certificateId] (repeatable; global load balancers)")
	fs.BoolVar(&p.redirect, "redirect-http-to-https", false, "redirect http to https")
	fs.StringVar(&p.file, "from-file", "", "read the request as JSON (the API's mapping) from this file, - for standard input; flags given override it")
}

func parseForward(s string) (*v1.ForwardingRule, error) {
	f := strings.Split(s, ":")
	if len(f) != 4 && len(f) != 5 {
		return nil, usagef("--forward %q: want entryProto:entryPort:targetProto:targetPort[:certificateId]", s)
	}
	ep, err1 := strconv.ParseInt(f[1], 10, 32)
	tp, err2 := strconv.ParseInt(f[3], 10, 32)
	if err1 != nil || err2 != nil {
		return nil, usagef("--forward %q: ports are numbers", s)
	}
	r := &v1.ForwardingRule{EntryProtocol: f[0], EntryPort: int32(ep), TargetProtocol: f[2], TargetPort: int32(tp)}
	if len(f) == 5 {
		r.CertificateId = f[4]
	}
	return r, nil
}

func parseHealth(s string) (*v1.HealthCheck, error) {
	f := strings.SplitN(s, ":", 3)
	if len(f) < 2 {
		return nil, usagef("--health-check %q: want protocol:port[:path]", s)
	}
	port, err := strconv.ParseInt(f[1], 10, 32)
	if err != nil {
		return nil, usagef("--health-check %q: the port is a number", s)
	}
	h := &v1.HealthCheck{Protocol: f[0], Port: int32(port)}
	if len(f) == 3 {
		h.Path = f[2]
	}
	return h, nil
}

func parseSticky(s string) (*v1.StickySessions, error) {
	name, ttl, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(ttl, 10, 32)
	if !ok || err != nil {
		return nil, usagef("--sticky %q: want cookieName:ttlSeconds", s)
	}
	return &v1.StickySessions{CookieName: name, TtlSeconds: int32(n)}, nil
}

func parseDomain(s string) *v1.Domain {
	name, cert, _ := strings.Cut(s, ":")
	return &v1.Domain{Name: name, CertificateId: cert}
}

// set reports the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

// readRequest fills m from --from-file (the API's JSON mapping, unknown fields refused).
func (c *cli) readRequest(path string, m proto.Message) error {
	if path == "" {
		return nil
	}
	var raw []byte
	var err error
	if path == "-" {
		raw, err = readAll(c.env.Stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := protojson.Unmarshal(raw, m); err != nil {
		return &exitError{ExitInvalidInput, fmt.Errorf("%s: %v", path, err)}
	}
	return nil
}

func newIdempotencyKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "bc-" + hex.EncodeToString(b)
}

func lbCreate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("lb create", `bcctl lb create --name NAME --pool POOL_ID --region REGION --forward P:PORT:P:PORT [flags]

Without --target-pool, --instance or --target-lb a regional load balancer targets its pool.
Without --idempotency-key bcctl makes one, so a retried command line is not a second create.`)
	var p parts
	p.register(fs)
	var set settingFlags
	set.register(fs, true)
	name := fs.String("name", "", "the name (lower case letters, digits, dashes)")
	pool := fs.String("pool", "", "the pool id")
	region := fs.String("region", "", "the region (regional load balancers)")
	scope := fs.String("scope", "", "regional (default) or global")
	desc := fs.String("description", "", "a description")
	project := fs.String("project", "", "the project id")
	subnet := fs.String("subnet", "", "the subnet id")
	key := fs.String("idempotency-key", "", "the idempotency key (default: a random one)")
	wait := fs.Bool("wait", false, "wait until the load balancer is ready")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "how long --wait waits")
	interval := fs.Duration("interval", 2*time.Second, "how often --wait looks")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	req := &v1.CreateLoadBalancerRequest{}
	if err := c.readRequest(p.file, req); err != nil {
		return err
	}
	given := setFlags(fs)
	req.TenantId = tenant
	str := func(flagName string, dst *string, v string) {
		if given[flagName] {
			*dst = v
		}
	}
	str("name", &req.Name, *name)
	str("pool", &req.PoolId, *pool)
	str("region", &req.Region, *region)
	str("scope", &req.Scope, *scope)
	str("description", &req.Description, *desc)
	str("project", &req.ProjectId, *project)
	str("subnet", &req.SubnetId, *subnet)
	str("idempotency-key", &req.IdempotencyKey, *key)
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = newIdempotencyKey()
	}
	if err := p.apply(given, func(t *v1.LoadBalancerTargets) { req.Targets = t },
		func(f []*v1.ForwardingRule) { req.Forwarding = f },
		func(h *v1.HealthCheck) { req.HealthCheck = h },
		func(s *v1.StickySessions) { req.StickySessions = s },
		func(r *v1.SourceRanges) { req.SourceRanges = r },
		func(b bool) { req.RedirectHttpToHttps = b },
		func(d []*v1.Domain) { req.Domains = d }); err != nil {
		return err
	}
	if err := set.applyCreate(given, req); err != nil {
		return err
	}
	if req.Targets == nil && req.Scope != "global" {
		req.Targets = &v1.LoadBalancerTargets{Pool: proto.Bool(true)}
	}
	cctx, cancel := c.call(ctx)
	resp, err := client.LoadBalancers.CreateLoadBalancer(cctx, connect.NewRequest(req))
	cancel()
	if err != nil {
		return err
	}
	lb := resp.Msg.GetLoadBalancer()
	if *wait {
		if lb, err = c.waitFor(ctx, client, tenant, lb.GetId(), "ready", *waitTimeout, *interval); err != nil {
			return err
		}
	}
	return c.printLB(lb)
}

// apply turns the part flags given into request parts.
func (p *parts) apply(given map[string]bool,
	targets func(*v1.LoadBalancerTargets), forwarding func([]*v1.ForwardingRule), health func(*v1.HealthCheck),
	sticky func(*v1.StickySessions), ranges func(*v1.SourceRanges), redirect func(bool), domains func([]*v1.Domain)) error {
	if given["target-pool"] || given["instance"] || given["target-lb"] {
		t := &v1.LoadBalancerTargets{InstanceIds: p.instances, LoadBalancerIds: p.lbs}
		if given["target-pool"] {
			t.Pool = proto.Bool(p.pool)
		}
		targets(t)
	}
	if given["forward"] {
		rules := make([]*v1.ForwardingRule, 0, len(p.forward))
		for _, s := range p.forward {
			r, err := parseForward(s)
			if err != nil {
				return err
			}
			rules = append(rules, r)
		}
		forwarding(rules)
	}
	if given["health-check"] {
		h, err := parseHealth(p.health)
		if err != nil {
			return err
		}
		health(h)
	}
	if given["sticky"] {
		s, err := parseSticky(p.sticky)
		if err != nil {
			return err
		}
		sticky(s)
	}
	if given["allow"] || given["deny"] {
		ranges(&v1.SourceRanges{Allow: p.allow, Deny: p.deny})
	}
	if given["redirect-http-to-https"] {
		redirect(p.redirect)
	}
	if given["domain"] {
		ds := make([]*v1.Domain, 0, len(p.domains))
		for _, s := range p.domains {
			ds = append(ds, parseDomain(s))
		}
		domains(ds)
	}
	return nil
}

func lbList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("lb list", "bcctl lb list [--pool POOL_ID] [--project PROJECT_ID] [--include-deleted]")
	pool := fs.String("pool", "", "only this pool's")
	project := fs.String("project", "", "only this project's")
	deleted := fs.Bool("include-deleted", false, "also deleted ones")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	out := &v1.ListLoadBalancersResponse{}
	req := &v1.ListLoadBalancersRequest{TenantId: tenant, PoolId: *pool, ProjectId: *project, IncludeDeleted: *deleted, PageSize: 500}
	for lb, err := range sdk.LoadBalancerPages(cctx, client.LoadBalancers, req) {
		if err != nil {
			return err
		}
		out.LoadBalancers = append(out.LoadBalancers, lb)
	}
	if c.output == "json" {
		return writeJSON(c.env.Stdout, out)
	}
	rows := make([][]string, 0, len(out.LoadBalancers))
	for _, lb := range out.LoadBalancers {
		rows = append(rows, []string{lb.GetId(), lb.GetName(), lb.GetState(), lb.GetScope(), lb.GetRegion(), lb.GetAddress(), lb.GetPoolId()})
	}
	return writeTable(c.env.Stdout, []string{"ID", "NAME", "STATE", "SCOPE", "REGION", "ADDRESS", "POOL"}, rows)
}

func lbGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("lb get", "bcctl lb get LOAD_BALANCER_ID")
	pos, err := c.parseVerb(fs, args, "LOAD_BALANCER_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.LoadBalancers.GetLoadBalancer(cctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tenant, LoadBalancerId: pos[0]}))
	if err != nil {
		return err
	}
	return c.printLB(resp.Msg.GetLoadBalancer())
}

func lbUpdate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("lb update", `bcctl lb update LOAD_BALANCER_ID [part flags] [--clear PART,...]

Each part given replaces that part; parts not given stay. --clear removes optional parts:
health-check, sticky-sessions, source-ranges, domains.`)
	var p parts
	p.register(fs)
	var set settingFlags
	set.register(fs, false)
	clear := fs.String("clear", "", "parts to remove: health-check, sticky-sessions, source-ranges, domains; "+
		"settings to return to the provider's default: size-unit, http-idle-timeout, tls-cipher-policy (comma separated)")
	pos, err := c.parseVerb(fs, args, "LOAD_BALANCER_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	req := &v1.UpdateLoadBalancerRequest{}
	if err := c.readRequest(p.file, req); err != nil {
		return err
	}
	req.TenantId, req.LoadBalancerId = tenant, pos[0]
	given := setFlags(fs)
	if err := p.apply(given, func(t *v1.LoadBalancerTargets) { req.Targets = t },
		func(f []*v1.ForwardingRule) { req.Forwarding = f },
		func(h *v1.HealthCheck) { req.HealthCheck = h },
		func(s *v1.StickySessions) { req.StickySessions = s },
		func(r *v1.SourceRanges) { req.SourceRanges = r },
		func(b bool) { req.RedirectHttpToHttps = proto.Bool(b) },
		func(d []*v1.Domain) { req.Domains = d }); err != nil {
		return err
	}
	if err := set.applyUpdate(given, req); err != nil {
		return err
	}
	var clears []string
	if *clear != "" {
		names := map[string]string{"health-check": sdk.PartHealthCheck, "sticky-sessions": sdk.PartStickySessions,
			"source-ranges": sdk.PartSourceRanges, "domains": sdk.PartDomains, "size-unit": sdk.PartSizeUnit,
			"http-idle-timeout": sdk.PartHTTPIdleTimeoutSeconds, "tls-cipher-policy": sdk.PartTLSCipherPolicy}
		for _, part := range strings.Split(*clear, ",") {
			path, ok := names[strings.TrimSpace(part)]
			if !ok {
				return usagef("--clear %q: the parts are health-check, sticky-sessions, source-ranges, domains, size-unit, http-idle-timeout, tls-cipher-policy", part)
			}
			clears = append(clears, path)
		}
	}
	if req.UpdateMask == nil {
		sdk.MaskedUpdate(req, clears...)
	}
	if len(req.GetUpdateMask().GetPaths()) == 0 {
		return usagef("lb update: give at least one part to change (bcctl lb update --help)")
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.LoadBalancers.UpdateLoadBalancer(cctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	return c.printLB(resp.Msg.GetLoadBalancer())
}

func lbDelete(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("lb delete", "bcctl lb delete LOAD_BALANCER_ID [--wait]")
	wait := fs.Bool("wait", false, "wait until the load balancer is deleted")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "how long --wait waits")
	interval := fs.Duration("interval", 2*time.Second, "how often --wait looks")
	pos, err := c.parseVerb(fs, args, "LOAD_BALANCER_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	resp, err := client.LoadBalancers.DeleteLoadBalancer(cctx, connect.NewRequest(&v1.DeleteLoadBalancerRequest{TenantId: tenant, LoadBalancerId: pos[0]}))
	cancel()
	if err != nil {
		return err
	}
	lb := resp.Msg.GetLoadBalancer()
	if *wait {
		if lb, err = c.waitFor(ctx, client, tenant, lb.GetId(), "deleted", *waitTimeout, *interval); err != nil {
			return err
		}
	}
	return c.printLB(lb)
}

func lbWait(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("lb wait", `bcctl lb wait LOAD_BALANCER_ID [--for STATE] [--wait-timeout DUR]

Waits until the load balancer is in STATE (ready by default; deleted also ends when it is gone)
and prints it. Exit 8 when the time runs out or, waiting for ready, the load balancer turns error.`)
	state := fs.String("for", "ready", "the state to wait for: ready, deleted, ...")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "how long to wait")
	interval := fs.Duration("interval", 2*time.Second, "how often to look")
	pos, err := c.parseVerb(fs, args, "LOAD_BALANCER_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	lb, err := c.waitFor(ctx, client, tenant, pos[0], *state, *waitTimeout, *interval)
	if err != nil {
		return err
	}
	return c.printLB(lb)
}

// waitFor waits with the SDK's waiter (the load balancer's events, polling every interval when
// the stream fails) until the load balancer is in state. Waiting for deleted also ends when the
// load balancer is gone (NOT_FOUND); waiting for anything else fails (exit 8) at state error,
// when it is deleted, or when timeout passes.
func (c *cli) waitFor(ctx context.Context, client *sdk.Client, tenant, id, state string, timeout, interval time.Duration) (*v1.LoadBalancer, error) {
	lb, err := sdk.WaitLoadBalancer(ctx, client, tenant, id, sdk.WaitOptions{
		Until: []sdk.LoadBalancerState{sdk.LoadBalancerState(state)}, Timeout: timeout, PollInterval: interval,
	})
	switch {
	case err == nil:
		return lb, nil
	case ctx.Err() != nil:
		return lb, ctx.Err()
	case errors.Is(err, sdk.ErrLoadBalancerFailed):
		return lb, &exitError{ExitWaitFailed, fmt.Errorf("load balancer %s turned error: %s", id, lb.GetLastError())}
	case errors.Is(err, context.DeadlineExceeded):
		now := "unknown"
		if lb != nil {
			now = lb.GetState()
		}
		return lb, &exitError{ExitWaitFailed, fmt.Errorf("load balancer %s is %s, not %s, after %s", id, now, state, timeout)}
	case lb.GetState() == string(sdk.LoadBalancerDeleted):
		return lb, &exitError{ExitWaitFailed, fmt.Errorf("load balancer %s was deleted while waiting for %s", id, state)}
	default:
		return nil, err
	}
}

func (c *cli) printLB(lb *v1.LoadBalancer) error {
	if c.output == "json" {
		return writeJSON(c.env.Stdout, lb)
	}
	var fw []string
	for _, r := range lb.GetForwarding() {
		fw = append(fw, fmt.Sprintf("%s:%d -> %s:%d", r.GetEntryProtocol(), r.GetEntryPort(), r.GetTargetProtocol(), r.GetTargetPort()))
	}
	targets := ""
	switch t := lb.GetTargets(); {
	case t.GetPool():
		targets = "pool"
	case len(t.GetInstanceIds()) > 0:
		targets = "instances " + strings.Join(t.GetInstanceIds(), ",")
	case len(t.GetLoadBalancerIds()) > 0:
		targets = "load balancers " + strings.Join(t.GetLoadBalancerIds(), ",")
	}
	health := ""
	if h := lb.GetHealthCheck(); h != nil {
		health = fmt.Sprintf("%s:%d%s", h.GetProtocol(), h.GetPort(), h.GetPath())
	}
	fields := [][2]string{
		{"id", lb.GetId()}, {"name", lb.GetName()}, {"state", lb.GetState()}, {"scope", lb.GetScope()},
		{"region", lb.GetRegion()}, {"pool", lb.GetPoolId()}, {"address", lb.GetAddress()}, {"addressV6", lb.GetAddressV6()},
		{"targets", targets}, {"forwarding", strings.Join(fw, ", ")}, {"healthCheck", health},
	}
	fields = append(fields, settingFields(lb)...)
	fields = append(fields, [][2]string{
		{"reached", strings.Join(lb.GetReachedInstanceIds(), ",")}, {"lastError", lb.GetLastError()},
		{"created", ts(lb.GetCreateTime())}, {"ready", ts(lb.GetReadyTime())},
	}...)
	return writeFields(c.env.Stdout, fields)
}

func readAll(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, 4<<20+1))
	if err == nil && len(raw) > 4<<20 {
		err = errors.New("input over 4 MiB")
	}
	return raw, err
}
