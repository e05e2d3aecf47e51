package config

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Cluster is what several gale instances share: a Redis (or Valkey)
// server holding certificates, cluster-scoped rate limits and purge
// notices, and this instance's name. Redis nil means everything stays
// local to the process.
type Cluster struct {
	Redis     *Redis // nil = no shared store
	Instance  string // this instance's name in metrics and logs; default the host name
	Instances int    // instances expected, for the local share of a cluster limit while the store is unreachable; 0 = learned from the store
	Pos       Pos    // where cluster was given, for messages
}

// Redis is how the shared store is reached.
type Redis struct {
	Address      string // "host:port"
	Username     string // ACL user; "" = the default user
	PasswordFile string // absolute path; "" = none
	Password     string `json:"-"` // the password file's content, trimmed; never printed
	TLS          bool   // connect over TLS (verified against the system roots)
	DB           int    // database number, 0..15
	Prefix       string // prepended to every key and channel gale uses; default "gale:"
}

// Enabled reports whether the cluster has a shared store.
func (c *Cluster) Enabled() bool { return c.Redis != nil }

// maxRedisDB is the highest database number Redis offers by default
// (databases 16).
const maxRedisDB = 15

// maxClusterInstances bounds cluster.instances.
const maxClusterInstances = 10000

// instanceNamePattern is what an instance name looks like: a metric label
// value that is safe everywhere (a pod name fits).
const instanceNamePattern = `^[A-Za-z0-9_.-]{1,253}$`

var redisKeys = sectionKey("redis", "The Redis (or Valkey) server the instances share.",
	strKey("address", `"host:port" of the server.`).must(),
	strKey("username", "The ACL user; absent = the default user."),
	strKey("password_file", "A file holding the password (white space around it trimmed), read at load; absent = none."),
	boolKey("tls", "false", "Connect over TLS, verifying the server's certificate against the system's roots."),
	intKey("db", 0, maxRedisDB, "0", "The database number."),
	&keySpec{name: "prefix", typ: typeString, def: `"gale:"`, pattern: `^[!-~]{0,64}$`, doc: "Prepended to every key and pub/sub channel gale uses, so that several clusters can share one server."},
)

var clusterKeys = sectionKey("cluster", "Several gale instances as one: certificates, cluster-scoped rate limits and purges shared through Redis; absent = every instance keeps its own.",
	redisKeys.must(),
	&keySpec{name: "instance", typ: typeString, pattern: instanceNamePattern, doc: "This instance's name: the name label of the gale_instance_info metric (Prometheus keeps the instance label for the scraped target), and its entry in the store's set of instances; default the host name (a pod's name in Kubernetes)."},
	intKey("instances", 0, maxClusterInstances, "0", "How many instances share the store: while it is unreachable, a cluster-scoped rate limit falls back to its rate divided by this on each instance; 0 = the number of instances last seen in the store."),
)

// cluster decodes the cluster section.
func (d *decoder) cluster(n *yaml.Node, path string, c *Cluster) {
	s := d.section(n, path, clusterKeys.names()...)
	if s == nil {
		return
	}
	c.Pos = Pos{s.node.Line, s.node.Column}
	if v := s.get("redis"); v != nil {
		c.Redis = d.redis(v, join(path, "redis"))
	} else if s.missing("redis") {
		d.errorf(s.node, join(path, "redis"), "missing required key; e.g. redis: {address: 127.0.0.1:6379}")
	}
	if v := s.get("instance"); v != nil {
		if name, ok := d.checkedStr(v, join(path, "instance"), checkInstanceName); ok {
			c.Instance = name
		}
	}
	d.setCount(s, "instances", &c.Instances, 0, maxClusterInstances)
}

// redis decodes cluster.redis.
func (d *decoder) redis(n *yaml.Node, path string) *Redis {
	s := d.section(n, path, redisKeys.names()...)
	if s == nil {
		return nil
	}
	r := &Redis{Prefix: "gale:"}
	if v := s.get("address"); v != nil {
		p := join(path, "address")
		if a, ok := d.str(v, p); ok {
			if msg := checkAddress(a); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
			} else if h, _, _ := strings.Cut(a, ":"); h == "" {
				d.errorf(deref(v), p, "expected the Redis server's host and port, such as 127.0.0.1:6379, got %s", quote(a))
			} else {
				r.Address = a
			}
		}
	} else if s.missing("address") {
		d.errorf(s.node, join(path, "address"), "missing required key; e.g. address: 127.0.0.1:6379")
	}
	if v := s.get("username"); v != nil {
		r.Username, _ = d.str(v, join(path, "username"))
	}
	if v := s.get("password_file"); v != nil {
		d.redisPassword(v, join(path, "password_file"), r)
	}
	d.setBool(s, "tls", &r.TLS)
	d.setCount(s, "db", &r.DB, 0, maxRedisDB)
	if v := s.get("prefix"); v != nil {
		if p, ok := d.checkedStr(v, join(path, "prefix"), checkRedisPrefix); ok {
			r.Prefix = p
		}
	}
	return r
}

// redisPassword reads the password file.
func (d *decoder) redisPassword(v *yaml.Node, path string, r *Redis) {
	f, ok := d.str(v, path)
	if !ok {
		return
	}
	abs := d.resolve(f)
	b, err := os.ReadFile(abs)
	switch {
	case err != nil:
		d.errorf(deref(v), path, "cannot read %s%s: %v", quote(f), resolvedTo(abs, f), unwrapPathError(err))
		return
	case len(b) > maxTokenFileBytes:
		d.errorf(deref(v), path, "%s is larger than %d bytes; it should hold one password", quote(f), maxTokenFileBytes)
		return
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" || strings.ContainsAny(pw, "\r\n") {
		d.errorf(deref(v), path, "%s should hold one password on one line", quote(f))
		return
	}
	r.PasswordFile, r.Password = abs, pw
}

// checkInstanceName says what is wrong with an instance name.
func checkInstanceName(s string) string {
	if s == "" || len(s) > 253 || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != "" {
		return fmt.Sprintf(`expected 1 to 253 letters, digits, "_", "." or "-", got %s`, quote(s))
	}
	return ""
}

// checkRedisPrefix says what is wrong with a key prefix.
func checkRedisPrefix(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("expected at most 64 characters, got %d", len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return fmt.Sprintf("expected printable ASCII without spaces, got %s", quote(s))
		}
	}
	return ""
}

// DefaultInstanceName is the instance name when cluster.instance is not
// given: the host name, or "gale" when it cannot be read.
func DefaultInstanceName() string {
	h, err := os.Hostname()
	if err != nil || checkInstanceName(h) != "" {
		return "gale"
	}
	return h
}
