// Package proxy puts a TCP proxy with network faults between one role process and the NATS
// server (scenario faults.proxies): latency with jitter and a bandwidth limit, in both
// directions, on loopback. It embeds toxiproxy (github.com/Shopify/toxiproxy/v2) - the proxy
// and its toxics, without toxiproxy's HTTP API - so a run needs no extra program.
package proxy
