package wire

// The connection statistics a process reports in its result (pkg/contract); pkg/bus's
// Conn.Stats fills them.

// ConnStats reports a connection's health and traffic.
type ConnStats struct {
	Name          string `json:"name"`
	URL           string `json:"url,omitempty"` // currently connected server, "" if none
	Disconnects   uint64 `json:"disconnects"`
	Reconnects    uint64 `json:"reconnects"`
	AsyncErrors   uint64 `json:"async_errors"`
	SlowConsumers uint64 `json:"slow_consumers"` // messages dropped by the client: a receiver fell behind
	InMsgs        uint64 `json:"in_msgs"`
	OutMsgs       uint64 `json:"out_msgs"`
	InBytes       uint64 `json:"in_bytes"`
	OutBytes      uint64 `json:"out_bytes"`
}
