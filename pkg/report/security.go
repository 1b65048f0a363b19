package report

import "github.com/dpsim/dpsim/pkg/record"

// Security says how a run's traffic was secured (pkg/record).
type Security = record.Security
