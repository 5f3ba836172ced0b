package main

import (
	"flag"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// settingFlags are the flags of a load balancer's provider settings
// (docs/loadbalancer-settings.md). network, network-stack and label exist on create only: the
// provider fixes them when it makes the load balancer.
type settingFlags struct {
	sizeUnit     int
	idleTimeout  int
	proxyProto   bool
	keepalive    bool
	cipherPolicy string
	disableLEDNS bool
	network      string
	networkStack string
	labels       multi
}

func (s *settingFlags) register(fs *flag.FlagSet, create bool) {
	fs.IntVar(&s.sizeUnit, "size-unit", 0, "nodes of a regional load balancer, 1-100 (provider default 1; the provider allows a change once per hour)")
	fs.IntVar(&s.idleTimeout, "http-idle-timeout", 0, "seconds an idle http connection stays open, 30-600 (provider default 60)")
	fs.BoolVar(&s.proxyProto, "enable-proxy-protocol", false, "send the PROXY protocol header to the targets")
	fs.BoolVar(&s.keepalive, "enable-backend-keepalive", false, "keep connections to the targets open")
	fs.StringVar(&s.cipherPolicy, "tls-cipher-policy", "", "default or strong")
	fs.BoolVar(&s.disableLEDNS, "disable-lets-encrypt-dns-records", false, "do not let the provider create DNS records for Let's Encrypt certificates")
	if create {
		fs.StringVar(&s.network, "network", "", "external (default) or internal; fixed at create")
		fs.StringVar(&s.networkStack, "network-stack", "", "ipv4 (default) or dualstack; fixed at create")
		fs.Var(&s.labels, "label", "a label key=value (repeatable; fixed at create), sent to the provider as the tag key:value")
	}
}

// enumValue reads a setting's choice: the lower-case name after the enum's prefix.
func enumValue(flagName, v, prefix string, values map[string]int32) (int32, error) {
	n, ok := values[prefix+strings.ToUpper(strings.TrimSpace(v))]
	if !ok || n == 0 {
		var names []string
		for name, num := range values {
			if num != 0 {
				names = append(names, strings.ToLower(strings.TrimPrefix(name, prefix)))
			}
		}
		sort.Strings(names)
		return 0, usagef("--%s %q: want one of %s", flagName, v, strings.Join(names, ", "))
	}
	return n, nil
}

func cipherPolicy(v string) (v1.LoadBalancerTlsCipherPolicy, error) {
	n, err := enumValue("tls-cipher-policy", v, "LOAD_BALANCER_TLS_CIPHER_POLICY_", v1.LoadBalancerTlsCipherPolicy_value)
	return v1.LoadBalancerTlsCipherPolicy(n), err
}

// applyCreate sets the settings given on req.
func (s *settingFlags) applyCreate(given map[string]bool, req *v1.CreateLoadBalancerRequest) error {
	if given["size-unit"] {
		req.SizeUnit = proto.Int32(int32(s.sizeUnit))
	}
	if given["http-idle-timeout"] {
		req.HttpIdleTimeoutSeconds = proto.Int32(int32(s.idleTimeout))
	}
	if given["enable-proxy-protocol"] {
		req.EnableProxyProtocol = s.proxyProto
	}
	if given["enable-backend-keepalive"] {
		req.EnableBackendKeepalive = s.keepalive
	}
	if given["disable-lets-encrypt-dns-records"] {
		req.DisableLetsEncryptDnsRecords = s.disableLEDNS
	}
	if given["tls-cipher-policy"] {
		p, err := cipherPolicy(s.cipherPolicy)
		if err != nil {
			return err
		}
		req.TlsCipherPolicy = p
	}
	if given["network"] {
		n, err := enumValue("network", s.network, "LOAD_BALANCER_NETWORK_", v1.LoadBalancerNetwork_value)
		if err != nil {
			return err
		}
		req.Network = v1.LoadBalancerNetwork(n)
	}
	if given["network-stack"] {
		n, err := enumValue("network-stack", s.networkStack, "LOAD_BALANCER_NETWORK_STACK_", v1.LoadBalancerNetworkStack_value)
		if err != nil {
			return err
		}
		req.NetworkStack = v1.LoadBalancerNetworkStack(n)
	}
	if given["label"] {
		req.Labels = map[string]string{}
		for _, l := range s.labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return usagef("--label %q: want key=value", l)
			}
			req.Labels[k] = v
		}
	}
	return nil
}

// applyUpdate sets the settings given on req; the mask then names them.
func (s *settingFlags) applyUpdate(given map[string]bool, req *v1.UpdateLoadBalancerRequest) error {
	if given["size-unit"] {
		req.SizeUnit = proto.Int32(int32(s.sizeUnit))
	}
	if given["http-idle-timeout"] {
		req.HttpIdleTimeoutSeconds = proto.Int32(int32(s.idleTimeout))
	}
	if given["enable-proxy-protocol"] {
		req.EnableProxyProtocol = proto.Bool(s.proxyProto)
	}
	if given["enable-backend-keepalive"] {
		req.EnableBackendKeepalive = proto.Bool(s.keepalive)
	}
	if given["disable-lets-encrypt-dns-records"] {
		req.DisableLetsEncryptDnsRecords = proto.Bool(s.disableLEDNS)
	}
	if given["tls-cipher-policy"] {
		p, err := cipherPolicy(s.cipherPolicy)
		if err != nil {
			return err
		}
		req.TlsCipherPolicy = &p
	}
	return nil
}

// settingFields are the settings as printLB shows them: what the tenant set, or "default".
func settingFields(lb *v1.LoadBalancer) [][2]string {
	num := func(has bool, n int32) string {
		if !has {
			return "default"
		}
		return strconv.Itoa(int(n))
	}
	enum := func(n int32, name, prefix string) string {
		if n == 0 {
			return "default"
		}
		return strings.ToLower(strings.TrimPrefix(name, prefix))
	}
	var labels []string
	for k, v := range lb.GetLabels() {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	return [][2]string{
		{"sizeUnit", num(lb.SizeUnit != nil, lb.GetSizeUnit())},
		{"httpIdleTimeoutSeconds", num(lb.HttpIdleTimeoutSeconds != nil, lb.GetHttpIdleTimeoutSeconds())},
		{"enableProxyProtocol", boolText(lb.GetEnableProxyProtocol())},
		{"enableBackendKeepalive", boolText(lb.GetEnableBackendKeepalive())},
		{"network", enum(int32(lb.GetNetwork()), lb.GetNetwork().String(), "LOAD_BALANCER_NETWORK_")},
		{"networkStack", enum(int32(lb.GetNetworkStack()), lb.GetNetworkStack().String(), "LOAD_BALANCER_NETWORK_STACK_")},
		{"tlsCipherPolicy", enum(int32(lb.GetTlsCipherPolicy()), lb.GetTlsCipherPolicy().String(), "LOAD_BALANCER_TLS_CIPHER_POLICY_")},
		{"disableLetsEncryptDnsRecords", boolText(lb.GetDisableLetsEncryptDnsRecords())},
		{"labels", strings.Join(labels, ",")},
	}
}

func boolText(b bool) string { return strconv.FormatBool(b) }
