package live

import (
	"fmt"
	"net"
)

// DefaultAddr is where --ui alone serves a live view: loopback, a free port.
const DefaultAddr = "127.0.0.1:0"

// AddrFlag is a --ui flag (dpsim run's and dpsim audit's): given alone (a boolean flag) it is DefaultAddr,
// --ui=HOST:PORT serves there (an empty host is 127.0.0.1) and --ui=false (the default)
// serves nothing. Addr points at the address ("": none).
type AddrFlag struct{ Addr *string }

func (f AddrFlag) String() string {
	if f.Addr == nil {
		return ""
	}
	return *f.Addr
}

// IsBoolFlag makes --ui alone valid.
func (f AddrFlag) IsBoolFlag() bool { return true }

// Set parses true, false or HOST:PORT.
func (f AddrFlag) Set(s string) error {
	switch s {
	case "true":
		*f.Addr = DefaultAddr
	case "false", "":
		*f.Addr = ""
	default:
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return fmt.Errorf("want --ui or --ui=HOST:PORT: %v", err)
		}
		if host == "" { // loopback unless asked
			host = "127.0.0.1"
		}
		*f.Addr = net.JoinHostPort(host, port)
	}
	return nil
}
