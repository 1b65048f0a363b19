//go:build !unix

package john

import "time"

func processCPU() time.Duration { return 0 }
