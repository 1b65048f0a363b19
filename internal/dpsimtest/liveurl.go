package dpsimtest

import (
	"net/url"
	"strings"
)

// LivePath is the address of path (e.g. "api/state", "events?x=1") on the live view whose page
// URL, as printed, is page (http://HOST:PORT/?token=T), with the token as ?token=.
func LivePath(page, path string) string {
	u, err := url.Parse(page)
	if err != nil {
		return page + path
	}
	tok := u.Query().Get("token")
	base := u.Scheme + "://" + u.Host + "/"
	if tok == "" {
		return base + path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return base + path + sep + "token=" + url.QueryEscape(tok)
}
