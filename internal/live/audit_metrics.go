package live

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dpsim/dpsim/pkg/audit"
)

// The metrics of an audit's /metrics (Prometheus text format), made from the audit hub when
// scraped. The bounds are the latest recomputed ones of each point (its result's once the point
// ended); every series of a point has its name as the label point.
var (
	descAuditPlayed    = prometheus.NewDesc("dpsim_audit_trials_played_total", "Trials of the distinguishing game played, by point.", []string{"point"}, nil)
	descAuditTrials    = prometheus.NewDesc("dpsim_audit_trials_total", "Trials the live bounds can use, by point and secret bit (x: the system ran on x; x_prime: on the adjacent x').", []string{"point", "bit"}, nil)
	descAuditPlanned   = prometheus.NewDesc("dpsim_audit_trials_planned", "Trials the audit plays at a point (both values of the secret bit).", []string{"point"}, nil)
	descAuditBound     = prometheus.NewDesc("dpsim_audit_epsilon_lower_bound", "The latest lower bound on epsilon from the trials so far (bound cp, gdp or fdp; gdp and fdp absent for a pure-eps claim); a point's result once it ended. Not a verdict before the end (optional stopping).", []string{"point", "bound"}, nil)
	descAuditClaim     = prometheus.NewDesc("dpsim_audit_epsilon_claimed", "The epsilon the verdict judges (the claim, composed over the episodes of a trial).", []string{"point"}, nil)
	descAuditAnalyses  = prometheus.NewDesc("dpsim_audit_bound_updates_total", "Recomputations of the bounds from the trials so far.", []string{"point"}, nil)
	descAuditCost      = prometheus.NewDesc("dpsim_audit_bound_update_seconds", "How long the latest recomputation of the bounds took.", []string{"point"}, nil)
	descAuditVerdict   = prometheus.NewDesc("dpsim_audit_verdict", "1 once a point ended, with its verdict (consistent or violation).", []string{"point", "verdict"}, nil)
	descAuditElapsed   = prometheus.NewDesc("dpsim_audit_elapsed_seconds", "Time since the audit started.", nil, nil)
	descAuditRemaining = prometheus.NewDesc("dpsim_audit_remaining_seconds", "Estimated time left (absent until a trial was played).", nil, nil)
	descAuditInfo      = prometheus.NewDesc("dpsim_audit_info", "The audit: 1, with its scenario, engine and status (running, ok, failed, interrupted).", []string{"scenario", "engine", "status"}, nil)
)

// registry is the audit hub's Prometheus registry: its collector, and the process's Go runtime
// and process collectors.
func (h *AuditHub) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(auditCollector{h}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

type auditCollector struct{ h *AuditHub }

func (c auditCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAuditPlayed, descAuditTrials, descAuditPlanned, descAuditBound, descAuditClaim,
		descAuditAnalyses, descAuditCost, descAuditVerdict, descAuditElapsed, descAuditRemaining, descAuditInfo} {
		ch <- d
	}
}

// auditRow is what the collector reads of a point (copied under the hub's lock).
type auditRow struct {
	name                    string
	played, n0, n1, planned int
	bounds                  []float64 // the latest of each row of audit.Bounds; none before the first recomputation
	mechanism               string
	claim                   float64
	analyses                int
	cost                    float64
	verdict                 string
}

func (c auditCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.h
	h.mu.Lock()
	st := h.snapshot()
	rows := make([]auditRow, len(st.Points))
	for i, p := range st.Points {
		r := auditRow{name: p.Name, played: p.Played, n0: p.Scored.X, n1: p.Scored.XPrime, planned: 2 * p.Trials,
			mechanism: p.Mechanism, claim: p.EpsilonClaimedRun, analyses: p.Analyses, cost: p.AnalysisSec, verdict: p.Verdict}
		if n := len(p.Bounds.Trials); n > 0 {
			for _, s := range p.Bounds.series() {
				r.bounds = append(r.bounds, (*s)[n-1])
			}
		}
		rows[i] = r
	}
	h.mu.Unlock()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range rows {
		counter(descAuditPlayed, float64(r.played), r.name)
		counter(descAuditTrials, float64(r.n0), r.name, "x")
		counter(descAuditTrials, float64(r.n1), r.name, "x_prime")
		gauge(descAuditPlanned, float64(r.planned), r.name)
		gauge(descAuditClaim, r.claim, r.name)
		counter(descAuditAnalyses, float64(r.analyses), r.name)
		gauge(descAuditCost, r.cost, r.name)
		for i, b := range r.bounds {
			if lb := audit.Bounds[i]; lb.ValidFor(r.mechanism) {
				gauge(descAuditBound, b, r.name, lb.ID)
			}
		}
		if r.verdict != "" {
			gauge(descAuditVerdict, 1, r.name, r.verdict)
		}
	}
	gauge(descAuditElapsed, st.ElapsedSec)
	if st.RemainingSec != nil {
		gauge(descAuditRemaining, *st.RemainingSec)
	}
	gauge(descAuditInfo, 1, st.Scenario, st.Engine, st.Status)
}
