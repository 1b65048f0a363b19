package fault

import "fmt"

// Accounting checks that a point's counters add up, link by link: every message released
// was delivered, lost or expired (delivered = sent - dropped + duplicated - expired), and no
// more duplicates were received than made. It returns the failing links, described.
// Messages lost in transport (a broker outage, a crashed receiver) are allowed when outage
// is set - the run names its outages - and returned as lost.
func Accounting(links []LinkStats, outage bool) (bad []string, lost uint64) {
	var out []string
	for _, l := range links {
		want := l.Sent - l.Dropped + l.Duplicated - l.Expired - l.Lost
		if outage && l.Delivered < want && l.DupReceived <= l.Duplicated {
			lost += want - l.Delivered
			continue
		}
		if l.Delivered != want || l.DupReceived > l.Duplicated {
			out = append(out, fmt.Sprintf("%s (sent %d, dropped %d, duplicated %d, expired %d, lost to a crash %d, delivered %d, duplicates received %d)",
				l.Link, l.Sent, l.Dropped, l.Duplicated, l.Expired, l.Lost, l.Delivered, l.DupReceived))
		}
	}
	return out, lost
}

// LostInTransport counts the messages of links that were neither delivered nor dropped or
// expired by the injector: lost by the transport itself (a broker outage, a receiver that
// was down).
func LostInTransport(links []LinkStats) uint64 {
	_, lost := Accounting(links, true)
	return lost
}
