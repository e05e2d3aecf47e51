package app

import (
	"log/slog"
	"time"

	"gale/cluster"
	"gale/config"
	"gale/handlers"
	"gale/metrics"
)

// instanceName is this instance's name: cluster.instance, else the host
// name.
func instanceName(cfg *config.Config) string {
	if cfg.Cluster.Instance != "" {
		return cfg.Cluster.Instance
	}
	return config.DefaultInstanceName()
}

// openCluster connects to the shared store when cfg names one; nil when
// it does not. The store's connection is made once, at start: a reload
// that changes cluster is reported as needing a restart.
func openCluster(cfg *config.Config, log *slog.Logger) *cluster.Store {
	if cfg.Cluster.Redis == nil {
		return nil
	}
	return cluster.New(&cfg.Cluster, instanceName(cfg), log)
}

// subscribePurges applies the purges other instances publish.
func (s *Server) subscribePurges() {
	if s.cluster != nil {
		s.cluster.OnPurge(func(path string) { s.purgeLocal(path) })
	}
}

// certStorage is the shared store's certificate storage, made once: its
// locks are this instance's whatever reloads happen.
func (s *Server) certStorage() *cluster.CertStorage {
	if s.certs == nil {
		s.certs = s.cluster.CertStorage(certLockTTL())
	}
	return s.certs
}

// certLockTTLFlag is set only at link time (go build -ldflags "-X
// gale/app.certLockTTLFlag=3s"), by tests that kill a lock's holder and
// wait for its expiry; empty means cluster.DefaultLockTTL.
var certLockTTLFlag string

// certLockTTL is the expiry of the certificate locks in the shared store
// (0: the default).
func certLockTTL() time.Duration {
	d, _ := time.ParseDuration(certLockTTLFlag)
	return d
}

// clusterOptions are the build options the shared store brings.
func clusterOptions(st *cluster.Store) []handlers.Option {
	if st == nil {
		return nil
	}
	return []handlers.Option{handlers.WithLimitStore(st)}
}

// writeClusterMetrics writes the instance's name and the shared store's
// state. The name is the label name of gale_instance_info, not a label of
// every series: Prometheus sets instance itself (the scraped target), and
// a join on gale_instance_info adds the name where a query wants it.
func (s *Server) writeClusterMetrics(w *metrics.Writer) {
	w.Family("gale_instance_info", metrics.Gauge, "This instance: its name (cluster.instance, else the host name); always 1.")
	w.Int("gale_instance_info", 1, "name", s.instance)
	st := s.cluster
	if st == nil {
		return
	}
	up := int64(0)
	if st.Up() {
		up = 1
	}
	w.Gauge("gale_cluster_store_up", "1 while the shared store (cluster.redis) answers, 0 while cluster-scoped rate limits apply their on_store_failure.", up)
	w.Counter("gale_ratelimit_store_fallbacks_total", "Times the shared store became unreachable and cluster-scoped rate limits fell back to their on_store_failure.", st.Failures())
	w.Counter("gale_ratelimit_leases_total", "Lease calls the shared store answered for cluster-scoped rate limits.", st.Leases())
	w.Counter("gale_cluster_purges_received_total", "Purges published by other instances and applied to this instance's static cache.", st.Purged())
	w.Gauge("gale_cluster_instances", "Instances sharing the store: cluster.instances, or those whose heartbeat it saw in the last 15 seconds.", int64(st.Instances()))
}
