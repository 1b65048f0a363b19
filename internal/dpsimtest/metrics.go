package dpsimtest

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// ScrapeMetrics reads the Prometheus text of a live view's /metrics, url its page's URL as
// printed (with its token: LivePath).
func ScrapeMetrics(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(LivePath(url, "metrics"))
	if err != nil {
		t.Fatalf("GET %smetrics: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %smetrics: %s", url, resp.Status)
	}
	var p expfmt.TextParser
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%smetrics: %v", url, err)
	}
	return mf
}

// MetricValue is the value of the first counter or gauge of family name with the labels
// (name=value pairs); ok false when there is none.
func MetricValue(mf map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := mf[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, lp := range m.Label {
			have[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}
